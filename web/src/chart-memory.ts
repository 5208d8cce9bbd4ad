// What the graph-memory chart adds to a chart: the line under it (first, last, peak and
// whether the floor rises), and, for a long run, its drawing as a peak band and a floor
// line per slice of its points.
import type uPlot from "uplot";
import { envelope, formatBytes, formatNumber, type Table } from "./charts-data";

/**
 * Above this many rows a memory chart is drawn as its peak and floor in each of up to
 * SLICES slices, runs of consecutive rows (envelope() in charts-data.ts): a graph built and
 * freed at every one of 400 steps would otherwise be drawn as 1,000 vertical strokes, a
 * solid block; as a band it reads "up to the peak and back to the floor", and a floor that
 * rises (a graph kept alive) stands out. A slice holds at least ROWS_PER_SLICE rows, more
 * than one step brings (a rise and a fall, two or three rows): a slice within one step
 * would read its graph as kept. 150 rows is about where a chart pane (360-600 px of plot)
 * has fewer than three pixels a row: the 30 epochs of own_metrics (369 rows) were a
 * barcode of strokes a pixel apart, while clean_training's 78 rows still show each of its
 * first graphs built op by op and freed.
 */
const DENSE_ROWS = 150;
const SLICES = 160;
const ROWS_PER_SLICE = 8;

/** How many slices a sliced table of `rows` rows is drawn in. */
export function sliceCount(rows: number): number {
  return Math.max(1, Math.min(SLICES, Math.floor(rows / ROWS_PER_SLICE)));
}

/** Whether `table` is drawn as peak and floor per slice of its rows. */
export function isSliced(table: Table): boolean {
  return table.kind === "time" && table.unit === "bytes" && table.series.length === 1 && table.length > DENSE_ROWS;
}

/** The columns of a sliced table: slice starts, peaks, floors (chart-gaps.ts plots them). */
export function slicedData(table: Table): [number[], (number | null)[], (number | null)[]] {
  return envelope(table.xs, table.cols[0], sliceCount(table.length));
}

/** The two series of a sliced table: a band up to each slice's peak, a line along its floor. */
export function slicedSeries(color: string, paths: uPlot.Series.PathBuilder | undefined): uPlot.Series[] {
  return [
    // a compared run's rows are undefined in these columns, and passed over (chart-gaps.ts)
    { label: "peak", stroke: translucent(color, "80"), fill: translucent(color, "33"), width: 1, paths },
    { label: "floor", stroke: color, width: 2, paths },
  ];
}

/** A "#rrggbb" colour with alpha `alpha` (two hex digits); any other colour as it is. */
export function translucent(color: string, alpha: string): string {
  return /^#[0-9a-f]{6}$/i.test(color) ? `${color}${alpha}` : color;
}

/**
 * The line under a memory chart, and whether its floor rises; null while nothing was held.
 * The floor (the least held in a stretch of the run) tells a graph kept alive from one
 * iteration to the next apart from the sawtooth of graphs built and freed.
 */
export function memoryFoot(values: readonly number[]): { text: string; rising: boolean } | null {
  const first = values.find((v) => v > 0);
  if (first === undefined) return null;
  const last = values[values.length - 1];
  const peak = values.reduce((a, b) => Math.max(a, b), 0);
  const parts = [`first ${formatBytes(first)} → last ${formatBytes(last)}`, `peak ${formatBytes(peak)}`];
  let rising = false;
  if (values.length >= 8) {
    const q = Math.max(2, Math.floor(values.length / 4));
    const floorFirst = values.slice(0, q).reduce((a, b) => Math.min(a, b), Infinity);
    const floorLast = values.slice(-q).reduce((a, b) => Math.min(a, b), Infinity);
    rising = floorFirst > 0 && floorLast >= 2 * floorFirst;
    parts.push(rising ? `floor rose ${formatNumber(floorLast / floorFirst)}×: memory is kept from one iteration to the next` : `floor steady at ${formatBytes(floorLast)}`);
  }
  return { text: parts.join(" · "), rising };
}
