// Where a chart's line breaks and where it carries on. uPlot draws a null as a gap (with
// spanGaps off) and passes over an undefined: so a value that cannot be drawn (a NaN or
// infinite loss; on a log axis, a value <= 0 such as the 0 B held between two graphs) is
// null, and a row where a series simply has no value (another series', or the compared
// run's) is undefined. Spanning every missing value, as the charts once did, drew a single
// NaN step as a straight line through it and, on a log memory axis, joined the peaks of
// graphs built and freed into one flat line, as though the memory were held throughout.
import { slicedData } from "./chart-memory";
import type { Table } from "./charts-data";

/** A plotted y column: a number, a gap (null) or no row of this series (undefined). */
export type PlotColumn = (number | null | undefined)[];

/** The columns of one plot: x ascending, then one column per series (uPlot's AlignedData). */
export type Columns = [number[], ...PlotColumn[]];

/** `v` as drawn on a log axis (`log`) or a linear one: null (a gap) where it cannot be. */
function drawable(v: number, log: boolean): number | null {
  return log && v <= 0 ? null : v;
}

/**
 * What a chart draws of `table`: its x column and each series' column, a gap where the
 * value was NaN or infinite (the table keeps which) or is <= 0 on a log axis, and undefined
 * where the series has no row. `sliced`: the peak and floor per slice of a long memory chart.
 */
export function plotColumns(
  table: Table,
  log: boolean,
  sliced: boolean,
): Columns {
  if (sliced) {
    const [xs, ...cols] = slicedData(table);
    return [
      xs,
      ...cols.map((c) =>
        c.map((v) => (v === null ? undefined : drawable(v, log))),
      ),
    ];
  }
  const steps = table.kind === "steps";
  const cols = table.cols.map((col, k) =>
    col.map((v, row) => {
      if (v !== null) return drawable(v, log);
      return steps && table.notFiniteAt(k, table.xs[row]) !== null
        ? null
        : undefined;
    }),
  );
  return [table.xs.slice(), ...cols];
}

/**
 * The rows of `col` from `i0` to `i1` whose value no line reaches: a number with a gap or the
 * column's end on both sides (rows without a value passed over). Drawn as dots, so a lone
 * finite loss between two NaN steps, a metric logged once, or a graph held for an instant
 * between two 0 B on a log axis is seen.
 */
export function lonePoints(col: PlotColumn, i0: number, i1: number): number[] {
  const out: number[] = [];
  let before: number | null = null; // the last value (or gap) before row i; null: a gap or none
  for (let i = 0; i <= Math.min(i1, col.length - 1); i++) {
    const v = col[i];
    if (v === undefined) continue;
    if (v !== null && before === null && i >= i0 && nextValue(col, i) === null) out.push(i);
    before = v;
  }
  return out;
}

/** The value (or gap) after row `i`, rows without a value passed over; null at the end. */
function nextValue(col: PlotColumn, i: number): number | null {
  for (let j = i + 1; j < col.length; j++) if (col[j] !== undefined) return col[j] ?? null;
  return null;
}
