// The y scales of the training charts: linear or log, chosen per chart, and the axis
// helpers each needs. A loss that falls from 100 to 1e-6 is a spike and a flat line on a
// linear axis and a curve on a log one; a learning rate of 0.05 at every step is a line on
// either. "auto" (the default) therefore picks log for a chart of numbers whose values are
// all positive and span at least LOG_SPAN (three decades), and linear otherwise; memory
// stays linear, because memory that doubles should look doubled.
import uPlot from "uplot";
import { formatNumber, type Table } from "./charts-data";

export type YScale = "auto" | "linear" | "log";

export const Y_SCALES: readonly YScale[] = ["auto", "linear", "log"];

/** The ratio of the largest to the smallest value from which "auto" draws a log axis. */
export const LOG_SPAN = 1000;

/** Whether `table` is drawn on a log y axis under `scale`. */
export function logAxis(table: Table, scale: YScale): boolean {
  if (scale !== "auto") return scale === "log";
  if (table.unit !== "number") return false;
  let lo = Infinity;
  let hi = -Infinity;
  for (const col of table.cols) {
    for (const v of col) {
      if (v === null) continue;
      if (v <= 0) return false;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  return lo !== Infinity && hi / lo >= LOG_SPAN;
}

/**
 * The spread, relative to the values' size, below which a linear axis draws its values as
 * one flat line (as it does a constant): a few float32 ulps, the noise of a norm that
 * clip_grad_norm_ holds at max_norm (1.0000000005 … 1.00000005). uPlot's own range rounds
 * such a spread to nothing, and the axis then threw "Invalid array length" and drew no line.
 */
export const FLAT_SPREAD = 1e-6;

/**
 * Linear number axes: uPlot's range (10% padding), values that only differ by FLAT_SPREAD
 * drawn flat; all zeros (a step that moved nothing) on 0 to 1, where uPlot's range is 0 to 100.
 */
export function linearRange(_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (min === 0 && max === 0) return [0, 1];
  const flat = max - min <= Math.max(Math.abs(min), Math.abs(max)) * FLAT_SPREAD;
  return flat ? uPlot.rangeNum(max, max, 0.1, true) : uPlot.rangeNum(min, max, 0.1, true);
}

/**
 * How many significant digits a linear axis's tick labels need to differ: formatNumber's
 * four, or as many more as it takes (a loss between 1727.50 and 1727.52 is ticked 1727.5,
 * 1727.51, 1727.52, not 1728 three times; a learning rate a scheduler moves by 1e-8 is
 * ticked 4.9998e-4, 4.9999e-4, 5e-4), at most 16.
 */
export function labelDigits(splits: readonly (number | null)[]): number {
  const ticks = splits.filter((v): v is number => v !== null);
  for (let digits = 4; digits < 16; digits++) {
    if (new Set(ticks.map((v) => formatDigits(v, digits))).size === ticks.length) return digits;
  }
  return 16;
}

/**
 * `v` to `digits` significant digits, written as formatNumber writes numbers: exponent
 * form below 1e-3 and from 1e5 (4.9998e-4, not 0.00049998, which no axis had room for),
 * no trailing zeros; four digits are formatNumber's own.
 */
export function formatDigits(v: number, digits: number): string {
  if (digits <= 4 || !Number.isFinite(v)) return formatNumber(v);
  const r = Number(v.toPrecision(Math.min(digits, 16)));
  const a = Math.abs(r);
  return a !== 0 && (a >= 1e5 || a < 1e-3) ? r.toExponential().replace("e+", "e") : String(r);
}

/** A linear axis's tick labels, each different: written with `digits` (labelDigits'). */
export function distinctLabels(splits: readonly (number | null)[], digits = labelDigits(splits)): string[] {
  return splits.map((v) => (v === null ? "" : formatDigits(v, digits)));
}

/** uPlot's default gap between an axis's ticks and its labels (px). */
const AXIS_GAP = 5;

/** The room (px) a y axis of tick labels `labels` in `font` needs: the widest label, the
 * tick and uPlot's gap beside it; never less than `least`. */
export function axisRoom(labels: readonly string[] | null | undefined, font: string, tick: number, least: number): number {
  if (!labels?.length) return least;
  const ctx = measurer();
  if (!ctx) return least;
  ctx.font = font;
  const widest = labels.reduce((w, label) => Math.max(w, ctx.measureText(label).width), 0);
  return Math.max(least, Math.ceil(widest) + tick + AXIS_GAP + 4);
}

let measureCtx: CanvasRenderingContext2D | null | undefined;

function measurer(): CanvasRenderingContext2D | null {
  if (measureCtx === undefined) measureCtx = typeof document === "undefined" ? null : document.createElement("canvas").getContext("2d");
  return measureCtx;
}

/** Linear byte axes start at zero: memory that doubles should look doubled. */
export function fromZero(_u: uPlot, _min: number | null, max: number | null): uPlot.Range.MinMax {
  return [0, max !== null && max > 0 ? max * 1.08 : 1];
}

export function isPow10(v: number): boolean {
  const e = Math.log10(v);
  return v > 0 && Math.abs(e - Math.round(e)) < 1e-9;
}

export function formatPow10(v: number): string {
  const e = Math.round(Math.log10(v));
  return isPow10(v) && (e < -3 || e > 4) ? `1e${e}` : formatNumber(v);
}

/**
 * Tick increments of a linear bytes axis: every power of two from 1 B to 512 GiB, so that
 * its ticks fall on 4 KiB, 8 KiB, 12 KiB (uPlot's decimal ones fell on 4.88 KiB, 9.77 KiB).
 */
export const BYTE_INCRS: readonly number[] = Array.from({ length: 40 }, (_, i) => 2 ** i);

/**
 * Tick increments of an x axis of steps (the optimizer's, or gradwalk.log's `step`), which
 * are whole numbers: 1, 2, 5, 10, 20, 50 … A 3-step loop was ticked 1, 1.2, 1.4 … 3 from
 * uPlot's decimal increments, steps no run has.
 */
export const STEP_INCRS: readonly number[] = Array.from({ length: 48 }, (_, i) => [1, 2, 5][i % 3] * 10 ** Math.floor(i / 3));

/**
 * Log axes' ticks: every power of ten in range, from increments to 1e308 (LOG_INCRS).
 * uPlot's own table of increments ends near 1e32 and its log splits step through it: a range
 * wider than that (an exploding loss goes from 1e2 to 1e36 in 20 steps) found no increment,
 * and the axis got no tick at all. Less than two powers of ten in range (a loss from 0.9 to
 * 0.2 on the log scale had one tick, "1"): 2× and 5× each power too; none of those: its ends.
 */
export const LOG_INCRS: readonly number[] = Array.from({ length: 617 }, (_, i) => Number(`1e${i - 308}`));

export const logSplits = powerSplits(10);

/**
 * Log byte axes (memory on the log scale) step by powers of two, in whole binary units:
 * 1 KiB, 4 KiB, 16 KiB. At powers of ten they read 100 B, 1000 B, 9.77 KiB, and their decade
 * range reached up to 100 times the peak. Less than a doubling in range: its ends.
 */
export const byteLogSplits = powerSplits(2);

/** Log axes: ticks, labels and grid lines at powers of ten, every k-th one when they crowd. */
export const decades = (plotHeight: number) => everyKthPower(10, plotHeight);

/** Log byte axes: the same at powers of two (byteLogSplits). */
export const doublings = (plotHeight: number) => everyKthPower(2, plotHeight);

/** `base` to the power `e`, exact for base 10 (`10 ** -3` is 0.0010000000000000002). */
function power(base: number, e: number): number {
  return base === 10 ? Number(`1e${e}`) : base ** e;
}

/** The exponent of `v` when it is a power of `base`, else null. */
function exponentOf(base: number, v: number): number | null {
  if (!(v > 0)) return null;
  const e = Math.log(v) / Math.log(base);
  return Math.abs(e - Math.round(e)) < 1e-9 ? Math.round(e) : null;
}

/** Multiples of each power of ten that also tick a log axis spanning less than two of them. */
const BETWEEN_DECADES = [2, 5];

/**
 * A log axis's splits: every power of `base` in range; for base 10 with fewer than two of
 * them, 2× and 5× each power as well; the range's ends when none is in range.
 */
function powerSplits(base: number): (u: uPlot, axis: number, min: number, max: number) => number[] {
  const log = (v: number) => Math.log(v) / Math.log(base);
  return (_u, _axis, min, max) => {
    if (!(min > 0 && max > 0 && Number.isFinite(max))) return [];
    const inRange = (v: number) => v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9);
    const out: number[] = [];
    for (let e = Math.ceil(log(min) - 1e-9); e <= Math.floor(log(max) + 1e-9); e++) out.push(power(base, e));
    if (out.length < 2 && base === 10) {
      for (let e = Math.floor(log(min)); e <= Math.ceil(log(max)); e++) {
        for (const m of BETWEEN_DECADES) {
          const v = Number(`${m}e${e}`);
          if (inRange(v)) out.push(v);
        }
      }
      out.sort((a, b) => a - b);
    }
    return out.length ? out : [min, max];
  };
}

/** An axis filter keeping every k-th power of `base` among the splits, so their labels do not crowd. */
function everyKthPower(base: number, plotHeight: number): (u: uPlot, splits: number[]) => (number | null)[] {
  return (u, splits) => {
    const pow = splits.filter((v) => exponentOf(base, v) !== null);
    if (pow.length < 2) return splits; // less than two powers of `base`: every split (powerSplits)
    const room = Math.max(2, Math.floor(((u.bbox?.height ?? 0) / devicePixelRatio || plotHeight) / 22));
    const stride = Math.max(1, Math.ceil(pow.length / room));
    return splits.map((v) => {
      const e = exponentOf(base, v);
      return e !== null && e % stride === 0 ? v : null;
    });
  };
}

/**
 * The share of a time axis a run may spend before its first point and still be drawn from
 * the run's start (see {@link timeRange}).
 */
export const LATE_FIRST_POINT = 0.25;

/**
 * A time axis's range (graph and CUDA memory): from the run's start, labelled "0 s" as the
 * memory axis's foot is labelled "0 B", to a little past its last point. From its first
 * point instead (the snippet's first op, some 0.04 s in), its origin had no label and its
 * first tick read as the run's start. But a run whose first point comes late, past
 * {@link LATE_FIRST_POINT} of its span, is drawn from that point: a fresh process's first
 * optimizer imports torch._dynamo (~1 s, `gradwalk record` from the command line), and
 * twenty batches of `total += loss` then climbed in the last 5% of the chart's width.
 */
export function timeRange(u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null || min < 0) return padRange(u, min, max);
  if (max > 0 && min > max * LATE_FIRST_POINT) return padRange(u, min, max);
  return [0, max + Math.max(max * 0.015, max === 0 ? 0.5 : 0)];
}

/** The x range with a little room at both ends, so the first and last points (and dots) clear the axes. */
export function padRange(_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null) return [0, 1];
  const pad = Math.max((max - min) * 0.015, max === min ? 0.5 : 0);
  return [min - pad, max + pad];
}
