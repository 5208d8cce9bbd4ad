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

export function logSplits(_u: uPlot, _axis: number, min: number, max: number): number[] {
  if (!(min > 0 && max > 0 && Number.isFinite(max))) return [];
  const out: number[] = [];
  for (let e = Math.ceil(Math.log10(min) - 1e-9); e <= Math.floor(Math.log10(max) + 1e-9); e++) out.push(Number(`1e${e}`));
  return out.length ? out : [min, max];
}

/** Log axes: ticks, labels and grid lines at powers of ten, every k-th one when they crowd. */
export function decades(plotHeight: number): (u: uPlot, splits: number[]) => (number | null)[] {
  return (u, splits) => {
    const pow = splits.filter(isPow10);
    if (!pow.length) return splits; // less than a decade: the ends (logSplits)
    const room = Math.max(2, Math.floor(((u.bbox?.height ?? 0) / devicePixelRatio || plotHeight) / 22));
    const stride = Math.max(1, Math.ceil(pow.length / room));
    return splits.map((v) => (isPow10(v) && Math.round(Math.log10(v)) % stride === 0 ? v : null));
  };
}

/**
 * Log byte axes (memory on the log scale) step by powers of two, in whole binary units:
 * 1 KiB, 4 KiB, 16 KiB. At powers of ten they read 100 B, 1000 B, 9.77 KiB, and their decade
 * range reached up to 100 times the peak. Less than a doubling in range: its ends.
 */
export function byteLogSplits(_u: uPlot, _axis: number, min: number, max: number): number[] {
  if (!(min > 0 && max > 0 && Number.isFinite(max))) return [];
  const out: number[] = [];
  for (let e = Math.ceil(Math.log2(min) - 1e-9); e <= Math.floor(Math.log2(max) + 1e-9); e++) out.push(2 ** e);
  return out.length ? out : [min, max];
}

/** Log byte axes: ticks at every k-th power of two when they crowd (byteLogSplits). */
export function doublings(plotHeight: number): (u: uPlot, splits: number[]) => (number | null)[] {
  return (u, splits) => {
    const pow = splits.filter((v) => Number.isInteger(Math.log2(v)));
    if (!pow.length) return splits;
    const room = Math.max(2, Math.floor(((u.bbox?.height ?? 0) / devicePixelRatio || plotHeight) / 22));
    const stride = Math.max(1, Math.ceil(pow.length / room));
    return splits.map((v) => (Number.isInteger(Math.log2(v)) && Math.log2(v) % stride === 0 ? v : null));
  };
}

/** The x range with a little room at both ends, so the first and last points (and dots) clear the axes. */
export function padRange(_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null) return [0, 1];
  const pad = Math.max((max - min) * 0.015, max === min ? 0.5 : 0);
  return [min - pad, max + pad];
}
