// One chart's card around its uPlot: the header, the readout line, the legend's chips and
// the memory chart's line under it; charts.ts draws the plot in it.
import type uPlot from "uplot";
import { memoryFoot } from "./chart-memory";
import { distinctLabels, formatDigits, labelDigits } from "./chart-scales";
import { formatBytes, formatNumber, type SeriesInfo, type Table } from "./charts-data";
import { h } from "./dom";

/** The legend of a memory chart drawn as peak and floor per stretch of the run (chart-memory.ts). */
export const SLICED_KEYS = ["peak", "floor"] as const;

/** How the compared run (chart-baseline.ts) is named in legends and readouts. */
export const COMPARED = "run before";
export const PALETTE = 10;

/**
 * How series `i` is drawn once the palette's colours are used up: the first PALETTE solid,
 * the next dotted, then dash-dotted (a model of 12 parameters drew `10.weight` in the colour
 * and the line of `0.weight`). Dashes are the compared run's (chart-baseline.ts).
 */
export const SERIES_LOOKS = [
  { look: "line", dash: undefined },
  { look: "dotted", dash: [1.5, 3] },
  { look: "dashdot", dash: [7, 3, 1.5, 3] },
] as const;

/** Series `i`'s look and dash pattern (see SERIES_LOOKS). */
export function seriesLook(i: number): (typeof SERIES_LOOKS)[number] {
  return SERIES_LOOKS[Math.floor(i / PALETTE) % SERIES_LOOKS.length];
}

/** A chart on screen: its table, its elements and how its plot was drawn. */
export interface Chart {
  table: Table;
  card: HTMLElement;
  plotEl: HTMLElement;
  readout: HTMLElement;
  legend: HTMLElement;
  /** A line under the chart (memory: where it started, ended and peaked). */
  foot: HTMLElement;
  /** The same line for the compared run, when it is drawn. */
  baseFoot: HTMLElement;
  /** "log" in the chart's header while its y axis is logarithmic. */
  logTag: HTMLElement;
  plot: uPlot | null;
  /** Whether the plot was drawn on a log y axis (it is drawn again when that changes). */
  log: boolean;
  /** Whether the plot was drawn as peak and floor per slice of its rows (chart-memory.ts). */
  sliced: boolean;
  seriesCount: number;
  /** The compared run's table drawn dashed with this chart, if any. */
  base: Table | null;
  drawn: number;
  /** Series hidden by their legend chip (0-based; -1: the compared run's). */
  hidden: Set<number>;
  /** The y axis's labels as last drawn ("" where a tick has none). */
  yTicks: string[];
  /** The significant digits a linear y axis's labels needed (labelDigits; 4 otherwise). */
  yDigits: number;
  /** The room (px) the y axis's own labels need, and the width it was given: the widest
   * need of the charts on screen (chart-yaxes.ts); 0 until drawn. */
  yNeed: number;
  ySize: number;
}

/** The card of a chart of `table`, its plot not drawn yet; its × button calls `hide` (no
 * button without one). */
export function newChart(table: Table, hide: (() => void) | null): Chart {
  const readout = h("div", { class: "gw-chart-readout" });
  const plotEl = h("div", { class: "gw-chart-plot" });
  const legend = h("div", { class: "gw-chart-legend" });
  const foot = h("p", { class: "gw-chart-foot", hidden: true });
  const baseFoot = h("p", { class: "gw-chart-foot-base", hidden: true });
  const logTag = h("span", { class: "gw-chart-scale", text: "log", title: "logarithmic y axis", hidden: true });
  const card = h(
    "section",
    { class: "gw-chart", "aria-label": `${table.title} chart`, data: { chart: table.id } },
    h(
      "header",
      { class: "gw-chart-head" },
      h("h3", { text: table.title }),
      logTag,
      h("span", { class: "gw-chart-help", text: table.help, title: table.help }),
      hide &&
        h("button", {
          type: "button",
          class: "gw-chart-hide",
          text: "×",
          title: "Hide this chart (links, embed code and downloads keep it hidden)",
          "aria-label": `Hide the ${table.title} chart`,
          on: { click: hide },
        }),
    ),
    readout,
    plotEl,
    legend,
    foot,
    baseFoot,
  );
  return { table, card, plotEl, readout, legend, foot, baseFoot, logTag, plot: null, log: false, sliced: false, seriesCount: 0, base: null, drawn: -1, hidden: new Set(), yTicks: [], yDigits: 4, yNeed: 0, ySize: 0 };
}

/** How many of the plot's series are this run's (the compared run's come after them). */
export function ownCount(chart: Chart): number {
  return chart.sliced ? 2 : chart.table.series.length;
}

export function renderLegend(chart: Chart, colors: string[], label: (s: SeriesInfo) => string): void {
  const table = chart.table;
  if (table.series.length < 2 && !chart.base && !chart.sliced) {
    chart.legend.replaceChildren();
    return;
  }
  const own = ownCount(chart);
  // a sliced memory chart (chart-memory.ts) says what its band and its line are
  const chips = chart.sliced
    ? [
        chip(chart, 0, SLICED_KEYS[0], colors[0], [1], "band"),
        chip(chart, 1, SLICED_KEYS[1], colors[0], [2]),
      ]
    : table.series.map((s, i) => chip(chart, i, table.series.length < 2 ? "this run" : label(s), colors[i % PALETTE], [i + 1], seriesLook(i).look));
  if (chart.base) {
    const ghosts = Array.from({ length: (chart.plot?.series.length ?? own + 1) - own - 1 }, (_, k) => own + 1 + k);
    chips.push(chip(chart, -1, COMPARED, colors[0], ghosts, "dashed"));
  }
  const many = chips.length > MANY_CHIPS;
  chart.legend.classList.toggle("gw-chart-legend-many", many);
  if (many) chart.legend.style.setProperty("--gw-chip-w", chipColumnWidth(chips.map((c) => c.textContent ?? "")));
  chart.legend.replaceChildren(...chips);
}

/**
 * Past this many chips the legend is a grid of compact chips in columns, each in view: the
 * vanishing-gradients lesson's 20 parameters scrolled in a legend three chips high, fc6 to
 * fc10 out of sight at 1280 × 720.
 */
const MANY_CHIPS = 8;

/** A compact legend's column width for chips reading `labels`, in the legend's em (so the
 * presenter's bigger type widens it too) plus the swatch, gap, padding and border. */
function chipColumnWidth(labels: string[]): string {
  const ctx = document.createElement("canvas").getContext("2d");
  let widest = Math.max(...labels.map((l) => l.length)) * 62; // without a canvas: 0.62 em a character
  if (ctx) {
    ctx.font = `100px ${getComputedStyle(document.body).fontFamily || "sans-serif"}`;
    widest = Math.max(...labels.map((l) => ctx.measureText(l).width));
  }
  return `calc(${(widest / 100).toFixed(3)}em + 30px)`;
}

/**
 * The line under a step chart whose values went NaN or infinite: the plot only stops there
 * (a gap), which a learner may read as the run having ended, so it says where and how often.
 */
function renderNotFinite(chart: Chart): void {
  const odd = chart.table.notFiniteSummary();
  chart.foot.hidden = odd === null;
  if (odd === null) {
    delete chart.card.dataset.notFinite;
    return;
  }
  const more = odd.steps > 1 ? `, and at ${odd.steps} steps in all` : "";
  chart.foot.textContent = `${odd.value} first at step ${odd.step}${more}: the line has a gap wherever a value is not a number`;
  chart.card.dataset.notFinite = String(odd.step);
}

/** A legend chip showing or hiding plot series `indexes` (`key` in `chart.hidden`). */
function chip(chart: Chart, key: number, label: string, color: string, indexes: number[], look: "line" | "dashed" | "dotted" | "dashdot" | "band" = "line"): HTMLElement {
  const chip = h(
    "button",
    { type: "button", class: "gw-chart-chip", "aria-pressed": String(!chart.hidden.has(key)), title: "Show or hide this series" },
    h("span", { class: look === "line" ? "gw-chart-swatch" : `gw-chart-swatch gw-chart-swatch-${look}`, "aria-hidden": "true" }),
    h("span", { class: "gw-chart-chip-label", text: label }),
  );
  (chip.firstElementChild as HTMLElement).style.setProperty("--swatch", color);
  chip.addEventListener("click", () => {
    const show = chart.hidden.has(key);
    if (show) chart.hidden.delete(key);
    else chart.hidden.add(key);
    chip.setAttribute("aria-pressed", String(show));
    for (const si of indexes) chart.plot?.setSeries(si, { show });
  });
  return chip;
}

/** The series nearest the cursor (by pixel), among those shown (`upTo`: only the first ones). */
export function nearest(u: uPlot, idx: number, upTo = u.series.length - 1): number | null {
  const top = u.cursor.top ?? -1;
  let best: number | null = null;
  let dist = Infinity;
  for (let si = 1; si <= upTo; si++) {
    const v = u.data[si][idx];
    if (!u.series[si].show || v === null || v === undefined) continue;
    const d = Math.abs(u.valToPos(v, "y") - top);
    if (d < dist) {
      dist = d;
      best = si;
    }
  }
  return best;
}

/** A value of `table`'s column `col` at `x` as read out: its number, or "NaN" / "inf" where the
 * step's value was not finite (a gap in the line: an exploding loss ends in inf, then NaN). */
export function cellText(table: Table, col: number, x: number, value: number | null | undefined, fmt: (v: number | null) => string): string {
  if ((value === null || value === undefined) && table.kind === "steps") return table.notFiniteAt(col, x) ?? fmt(null);
  return fmt(value ?? null);
}

/** The readout while nothing is hovered: this run's last row. */
export function readLast(chart: Chart, u: uPlot, fmt: (v: number | null) => string, label: (s: SeriesInfo) => string): void {
  const table = chart.table;
  chart.card.dataset.hover = "";
  const idx = table.length - 1;
  if (idx < 0) {
    writeReadout(chart, chart.base ? `only the ${COMPARED} (dashed) has this chart` : "");
    return;
  }
  if (!table.cols.some((col) => col.some((v) => v !== null)) && table.notFiniteSummary() === null) {
    // an empty plot said why: `opt.step()` with no gradients has no gradient norm to draw
    writeReadout(chart, `${table.kind === "time" ? "no value" : `${table.length} steps, none with a value`}${table.id === "grad" ? ": no parameter had a gradient" : ""}`);
    return;
  }
  const x = table.xs[idx];
  const shown = table.series.map((_, i) => i).filter((i) => !chart.hidden.has(i) && (chart.sliced || u.series[i + 1].show));
  const parts = [`last: ${table.kind === "time" ? `${formatNumber(x)} s` : table.stepText(x)}`];
  if (shown.length > 3) parts.push("hover a line to read it");
  else for (const i of shown) parts.push(`${shown.length > 1 ? `${label(table.series[i])} ` : ""}${cellText(table, i, x, table.cols[i][idx], fmt)}`);
  writeReadout(chart, parts.join(" · "));
}

/**
 * A linear number axis's tick labels (labelDigits); when they need other digits than
 * before, `reread` is called once the axis is drawn, to write the readout with them.
 */
export function digitLabels(chart: Chart, splits: readonly (number | null)[], reread: () => void): string[] {
  const digits = labelDigits(splits);
  if (digits !== chart.yDigits) {
    chart.yDigits = digits;
    queueMicrotask(reread);
  }
  return distinctLabels(splits, digits);
}

/**
 * How `chart`'s readout writes a value: formatNumber's four significant digits, or, where
 * the y axis needs more to tell its ticks apart, one more than it (a learning rate that a
 * scheduler moves by 1e-8 reads 4.99982e-4 between ticks 4.9998e-4 and 4.9999e-4, not 5e-4
 * at every step).
 */
export function readoutFormat(chart: Chart): (v: number | null) => string {
  if (chart.table.unit === "bytes") return formatBytes;
  const digits = chart.yDigits > 4 ? chart.yDigits + 1 : 4;
  return (v) => (v === null ? formatNumber(v) : formatDigits(v, digits));
}

/**
 * Write the readout: `values` (the step or time and what is read there), then ` · hint`.
 * On one line, a narrow card cuts the hint short (…) before the values (charts.css).
 */
export function writeReadout(chart: Chart, values: string, hint = ""): void {
  const children: HTMLElement[] = [h("span", { class: "gw-chart-readout-values", text: values })];
  if (hint) children.push(h("span", { class: "gw-chart-readout-hint", text: ` · ${hint}` }));
  chart.readout.replaceChildren(...children);
  chart.readout.title = chart.readout.textContent ?? "";
}

/** The memory chart's line under it, for this run and the compared one. */
export function renderFoot(chart: Chart): void {
  const table = chart.table;
  if (table.kind === "steps" && table.unit !== "bytes") {
    renderNotFinite(chart);
    return;
  }
  if (table.unit !== "bytes") return;
  const foot = table.series.length ? memoryFoot(table.cols[0].filter((v): v is number => v !== null)) : null;
  chart.foot.hidden = foot === null;
  if (foot) {
    chart.foot.textContent = chart.base ? `this run: ${foot.text}` : foot.text;
    chart.card.dataset.floor = foot.rising ? "rising" : "steady";
  }
  const base = chart.base?.series.length ? memoryFoot(chart.base.cols[0].filter((v): v is number => v !== null)) : null;
  chart.baseFoot.hidden = base === null;
  chart.baseFoot.textContent = base ? `${COMPARED} (dashed): ${base.text}` : "";
}
