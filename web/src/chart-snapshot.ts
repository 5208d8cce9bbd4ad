// What a chart plots, as plain data for tests and scripts (window.gradwalk.charts.snapshot()):
// its table's rows, what its uPlot holds and how it is drawn (breaks, log axis, slices, the
// compared run). Pure: charts.ts hands it the chart's table, card and compared table.
import { type Chart, ownCount } from "./chart-card";
import { lonePoints, type PlotColumn } from "./chart-gaps";
import { isSliced } from "./chart-memory";
import { logAxis } from "./chart-scales";
import type { Table } from "./charts-data";
import type { ViewState } from "./store";

/** What a chart plots, for tests and scripts: `x`, then one column per series. */
export interface ChartSnapshot {
  title: string;
  kind: Table["kind"];
  unit: Table["unit"];
  x: number[];
  series: { label: string; optimizer: string | null; values: (number | null)[] }[];
  /** Rows the uPlot instance holds (0 until the chart was drawn). */
  drawn: number;
  /** Per series of this run, the rows drawn as breaks in its line (null: a NaN, or <= 0 on a log axis) and as lone dots (chart-gaps.ts). */
  breaks: { gaps: number; dots: number }[];
  /** Whether the y axis is logarithmic under the chosen y scale. */
  log: boolean;
  /** Whether the plot shows peak and floor per slice of its rows, not every row (a long run's memory). */
  sliced: boolean;
  /** The labels on the y axis as last drawn. */
  yTicks: string[];
  /** The compared run's rows of this chart (its own x), when it is drawn dashed. */
  compared: { x: number[]; series: { label: string; values: (number | null)[] }[] } | null;
  /** Whether the chart is hidden (the store's `hide`): it is then not on screen. */
  hidden: boolean;
}

/**
 * The snapshot of table `t`: `chart` is its card on screen (none while hidden or not yet
 * drawn), `base` the compared run's table drawn with it (Baseline.table), `state` the
 * store's state (its y scale and hidden charts).
 */
export function chartSnapshot(t: Table, chart: Chart | undefined, base: Table | null, state: ViewState): ChartSnapshot {
  return {
    title: t.title,
    kind: t.kind,
    unit: t.unit,
    x: [...t.xs],
    series: t.series.map((s, i) => ({ label: s.label, optimizer: s.optimizer, values: [...t.cols[i]] })),
    drawn: chart?.plot?.data[0].length ?? 0,
    breaks: breaksOf(chart),
    log: logAxis(t, state.yscale),
    sliced: isSliced(t),
    compared: base && { x: [...base.xs], series: base.series.map((s, i) => ({ label: s.label, values: [...base.cols[i]] })) },
    hidden: state.hide.includes(t.id),
    yTicks: chart?.yTicks.filter((label) => label !== "") ?? [],
  };
}

function breaksOf(chart: Chart | undefined): ChartSnapshot["breaks"] {
  const plot = chart?.plot;
  if (!chart || !plot) return [];
  const own = ownCount(chart);
  return plot.data.slice(1, own + 1).map((col) => {
    const c = col as PlotColumn;
    return { gaps: c.filter((v) => v === null).length, dots: lonePoints(c, 0, c.length - 1).length };
  });
}
