// The y scales of the training charts: linear or log, chosen per chart, and the axis
// helpers each needs. A loss that falls from 100 to 1e-6 is a spike and a flat line on a
// linear axis and a curve on a log one; a learning rate of 0.05 at every step is a line on
// either. "auto" (the default) therefore picks log for a chart of numbers whose values are
// all positive and span at least LOG_SPAN (three decades), and linear otherwise; memory
// stays linear, because memory that doubles should look doubled.
import type uPlot from "uplot";
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
 * Log axes' ticks: every power of ten in range, from increments to 1e308 (LOG_INCRS).
 * uPlot's own table of increments ends near 1e32 and its log splits step through it: a range
 * wider than that (an exploding loss goes from 1e2 to 1e36 in 20 steps) found no increment,
 * and the axis got no tick at all. Less than a decade in range: its ends.
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

/** A log axis's splits: every power of `base` in range, or the range's ends when none is. */
function powerSplits(base: number): (u: uPlot, axis: number, min: number, max: number) => number[] {
  const log = (v: number) => Math.log(v) / Math.log(base);
  return (_u, _axis, min, max) => {
    if (!(min > 0 && max > 0 && Number.isFinite(max))) return [];
    const out: number[] = [];
    for (let e = Math.ceil(log(min) - 1e-9); e <= Math.floor(log(max) + 1e-9); e++) out.push(power(base, e));
    return out.length ? out : [min, max];
  };
}

/** An axis filter keeping every k-th power of `base` among the splits, so their labels do not crowd. */
function everyKthPower(base: number, plotHeight: number): (u: uPlot, splits: number[]) => (number | null)[] {
  return (u, splits) => {
    const pow = splits.filter((v) => exponentOf(base, v) !== null);
    if (!pow.length) return splits; // less than one step of `base`: the ends (powerSplits)
    const room = Math.max(2, Math.floor(((u.bbox?.height ?? 0) / devicePixelRatio || plotHeight) / 22));
    const stride = Math.max(1, Math.ceil(pow.length / room));
    return splits.map((v) => {
      const e = exponentOf(base, v);
      return e !== null && e % stride === 0 ? v : null;
    });
  };
}

/** The x range with a little room at both ends, so the first and last points (and dots) clear the axes. */
export function padRange(_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null) return [0, 1];
  const pad = Math.max((max - min) * 0.015, max === min ? 0.5 : 0);
  return [min - pad, max + pad];
}
