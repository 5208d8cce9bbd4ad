// The training charts: loss, gradient and update norms (global, or per parameter), learning
// rate, the memory the graph holds, CUDA memory and the snippet's own metrics, drawn live
// with uPlot from the same events every other view reads.
//
// Streaming stays cheap: events only append to the tables (charts-data.ts), and the charts
// that changed are redrawn at most once per animation frame, and only while visible.
// Hovering reads a point; a dot marks a step recorded in full, and clicking it opens that
// step's backward walk in the stepper and the graph. Another run (the run before) can be
// drawn dashed under this one (chart-baseline.ts).
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./styles/charts.css";
import { axisRoom, BYTE_INCRS, byteLogSplits, decades, doublings, formatPow10, fromZero, linearRange, LOG_INCRS, logAxis, logSplits, padRange, STEP_INCRS, timeRange, Y_SCALES, type YScale } from "./chart-scales";
import { Baseline, comparedAs, type FetchRun } from "./chart-baseline";
import { mergeColumns } from "./chart-compare";
import { lonePoints, type PlotColumn, plotColumns } from "./chart-gaps";
import { isSliced, slicedSeries, translucent } from "./chart-memory";
import { cellText, type Chart, COMPARED, digitLabels, newChart, nearest, ownCount, PALETTE, readLast, readoutFormat, renderFoot, renderLegend, seriesLook, writeReadout } from "./chart-card";
import { ChartHiding } from "./chart-hiding";
import { fittedPlotHeight, PLOT_MIN } from "./chart-fit";
import { bindStepKeys } from "./chart-keys";
import { type ChartSnapshot, chartSnapshot } from "./chart-snapshot";
import { bindStepPresses, StepOpener } from "./chart-steps";
import { YAxisWidths } from "./chart-yaxes";
import { ChartData, formatBytes, formatNumber, type SeriesInfo, Table } from "./charts-data";
import { h, perFrame } from "./dom";
import type { Store } from "./store";
import type { TraceModel } from "./trace-model";

export class ChartsView {
  private data: ChartData;
  private readonly charts = new Map<string, Chart>();
  /** The last press on a chart was a finger's: a tap reads, a second on the step opens it. */
  private touched = false;
  /** Empty tables standing in for charts only the compared run has, by chart id. */
  private readonly standIns = new Map<string, Table>();
  private readonly grid: HTMLElement;
  private readonly empty: HTMLElement;
  private readonly summary: HTMLElement;
  /** The charts hidden (the store's `hide`): each card's ×, and the toolbar's way back. */
  private readonly hiding: ChartHiding;
  private readonly note: HTMLElement;
  /** What a click on a step opens (chart-steps.ts); its `recordInFull` is set where code can run. */
  readonly steps: StepOpener;
  /** The run drawn dashed under this one (chart-baseline.ts); the app `offer`s the run before. */
  readonly baseline: Baseline;
  private readonly scaleSelect: HTMLSelectElement;
  private readonly paramToggle: HTMLInputElement;
  private readonly schedule = perFrame(() => this.flush());
  /** Every chart's y axis as wide as the widest on screen, so that their plots line up. */
  private readonly yAxes = new YAxisWidths(() => this.charts.values());
  private unsubscribe: () => void = () => {};
  private width = 0;
  /** The panel that scrolls the cards: its height is what the plots grow to fill (chart-fit.ts). */
  private readonly scroll: HTMLElement;
  private panelHeight = 0;
  /** Every plot's height, as fitted to the panel (chart-fit.ts). */
  private plotHeight = PLOT_MIN;

  constructor(
    readonly root: HTMLElement,
    private model: TraceModel,
    private readonly store: Store,
    fetchRun: FetchRun | null = null,
  ) {
    root.classList.add("gw-charts");
    this.scaleSelect = h(
      "select",
      { class: "gw-select", "aria-label": "Y scale" },
      ...Y_SCALES.map((s) => h("option", { value: s, text: s })),
    );
    this.paramToggle = h("input", { type: "checkbox", "aria-label": "Norms per parameter" });
    // the choices live in the store (the URL and the embed code carry them); the store's
    // listener below redraws
    this.scaleSelect.addEventListener("change", () => store.set({ yscale: this.scaleSelect.value as YScale }));
    this.paramToggle.addEventListener("change", () => store.set({ perParam: this.paramToggle.checked }));
    this.showChoices();
    store.subscribe((_state, changed) => {
      if (!changed.has("yscale") && !changed.has("perParam") && !changed.has("hide")) return;
      this.showChoices();
      this.rebuild(changed.has("perParam"));
    });
    this.hiding = new ChartHiding(store);
    this.note = h("div", { class: "gw-charts-note", role: "status", hidden: true });
    this.steps = new StepOpener(this.note, store, () => ({ model: this.model, data: this.data }));
    this.baseline = new Baseline(store, fetchRun, () => this.model.source ?? "", () => this.rebuild(false), (m) => this.steps.say(m, null, "comparison"));
    this.summary = h("span", { class: "gw-charts-summary" });
    const toolbar = h(
      "div",
      { class: "gw-charts-toolbar", role: "toolbar", "aria-label": "Charts" },
      h("label", { class: "gw-charts-yscale", title: "y axes: linear, logarithmic (values ≤ 0 are left out), or log for the charts whose positive values span three decades" }, "y scale ", this.scaleSelect),
      h("label", { class: "gw-check", title: "Gradient and update norms of each parameter instead of all together" }, this.paramToggle, " per parameter"),
      this.baseline.control,
      this.baseline.description,
      this.hiding.unhide,
      this.summary,
    );
    this.grid = h("div", { class: "gw-charts-grid" });
    this.empty = h(
      "div",
      { class: "gw-charts-empty" },
      h("p", { text: "Nothing to chart yet." }),
      h("p", {
        text: "Charts fill in while the snippet runs: the loss, gradient norms, learning rate and update sizes at every optimizer.step(), the memory the graph holds, and anything logged with gradwalk.log(name, value).",
      }),
    );
    this.scroll = h("div", { class: "gw-charts-scroll" }, this.empty, this.hiding.allHidden, this.grid);
    root.append(toolbar, this.note, this.scroll);
    this.data = ChartData.from(model.events, store.state.perParam);
    this.bind();
    this.baseline.start();
    document.addEventListener("gw-theme", () => this.rebuild(false));
    if (typeof ResizeObserver !== "undefined") {
      const observer = new ResizeObserver(() => this.resize());
      observer.observe(this.grid);
      observer.observe(this.scroll);
    }
    this.schedule();
  }

  setModel(model: TraceModel): void {
    this.model = model;
    this.steps.hide("step");
    this.baseline.render();
    this.rebuild(true);
    this.bind();
    this.steps.onEvents();
  }

  /** The plotted data of every chart, keyed by chart id (loss, grad, update, lr, memory, cuda, metric:NAME). */
  snapshot(): Record<string, ChartSnapshot> {
    const out: Record<string, ChartSnapshot> = {};
    for (const t of [...this.data.ordered, ...this.standIns.values()]) {
      out[t.id] = chartSnapshot(t, this.charts.get(t.id), this.baseline.table(t.id), this.store.state);
    }
    return out;
  }

  /** The uPlot instance drawing chart `id`, once drawn. */
  plotOf(id: string): uPlot | null {
    return this.charts.get(id)?.plot ?? null;
  }

  /** Open the backward walk of `optimizer`'s step `step`, or say why it cannot be opened. */
  openStep(optimizer: string, step: number): boolean {
    return this.steps.open(optimizer, step);
  }

  private bind(): void {
    this.unsubscribe();
    this.unsubscribe = this.model.subscribe((batch) => {
      for (const ev of batch) this.data.add(ev);
      this.schedule();
      this.steps.onEvents();
    });
  }

  /** Show the store's y scale and norms choice in the toolbar. */
  private showChoices(): void {
    this.scaleSelect.value = this.store.state.yscale;
    this.paramToggle.checked = this.store.state.perParam;
  }

  /** This run's empty table for `theirs`, a chart only the compared run has. */
  private standIn(theirs: Table): Table {
    let table = this.standIns.get(theirs.id);
    if (!table) {
      table = new Table(theirs.id, theirs.title, theirs.kind, theirs.unit, theirs.about);
      table.ownSteps = theirs.ownSteps;
      this.standIns.set(theirs.id, table);
    }
    return table;
  }

  private rebuild(refetch: boolean): void {
    if (refetch) this.data = ChartData.from(this.model.events, this.store.state.perParam);
    for (const chart of this.charts.values()) chart.plot?.destroy();
    this.charts.clear();
    this.standIns.clear();
    this.grid.replaceChildren();
    this.schedule();
  }

  private get shown(): boolean {
    return this.grid.clientWidth > 0;
  }

  private flush(): void {
    this.renderSummary();
    const own = this.data.ordered;
    const ids = new Set(own.map((t) => comparedAs(t.id)));
    for (const id of [...this.standIns.keys()]) if (ids.has(comparedAs(id))) this.standIns.delete(id);
    // a chart only the compared run has is drawn too, its dashed lines alone
    const all = [...own, ...this.baseline.tables().filter((t) => !ids.has(comparedAs(t.id))).map((t) => this.standIn(t))];
    const tables = this.hiding.shown(all);
    this.empty.hidden = all.length > 0;
    if (!this.shown) return;
    let added = false;
    for (const table of tables) {
      let chart = this.charts.get(table.id);
      if (chart && chart.table !== table) {
        // this run now has a chart a stand-in drew for the compared run alone
        chart.plot?.destroy();
        chart = undefined;
      }
      if (!chart) {
        chart = newChart(table, this.hiding.hider(table.id));
        this.charts.set(table.id, chart);
        added = true;
      }
    }
    // Charts keep a fixed order (loss first) whatever arrived first.
    if (added) this.grid.replaceChildren(...tables.map((t) => this.charts.get(t.id)!.card));
    for (const table of tables) {
      const chart = this.charts.get(table.id)!;
      if (chart.plot && chart.drawn === table.version) continue;
      // new rows can change how a chart is drawn: a log axis once its values span three
      // decades, peak and floor once a memory chart is long
      const log = logAxis(table, this.store.state.yscale);
      const sliced = isSliced(table);
      const base = this.baseline.table(table.id);
      const stale = chart.seriesCount !== table.series.length || chart.base !== base;
      if (!chart.plot || stale || chart.log !== log || chart.sliced !== sliced) {
        chart.base = base;
        this.create(chart, log, sliced);
      } else {
        chart.plot.setData(this.plotData(chart, log, sliced));
        this.readout(chart, chart.plot);
        renderFoot(chart);
      }
      chart.drawn = table.version;
    }
    this.fitPlots();
  }

  private resize(): void {
    const w = this.grid.clientWidth;
    if (w === this.width && this.scroll.clientHeight === this.panelHeight) return;
    const wasHidden = this.width === 0;
    this.width = w;
    this.panelHeight = this.scroll.clientHeight;
    if (!w) return;
    if (wasHidden) this.schedule();
    this.fitPlots();
  }

  /** Size every plot to its card's width and to the height that fills the panel (chart-fit.ts). */
  private fitPlots(): void {
    const sized = () => {
      for (const chart of this.charts.values()) {
        const width = chart.plotEl.clientWidth;
        if (chart.plot && width && (width !== chart.plot.width || this.plotHeight !== chart.plot.height)) chart.plot.setSize({ width, height: this.plotHeight });
      }
    };
    sized(); // the widths first: a card's width sets how its legend and foot wrap
    const height = fittedPlotHeight(this.scroll, this.grid, this.charts.values());
    if (height === this.plotHeight) return;
    this.plotHeight = height;
    sized();
  }

  private renderSummary(): void {
    const d = this.data;
    const parts: string[] = [];
    for (const [opt, steps] of d.steps) parts.push(`${opt}: ${steps.length} step${steps.length === 1 ? "" : "s"}`);
    this.summary.textContent = parts.join(" · ");
    const hasParams = [...d.steps.values()].some((list) => list.some((s) => s?.params.length));
    this.paramToggle.disabled = !hasParams;
  }

  /** What `chart` plots: its table's columns, then the compared run's (see chart-compare.ts). */
  private plotData(chart: Chart, log: boolean, sliced: boolean): uPlot.AlignedData {
    const own = plotColumns(chart.table, log, sliced);
    return (chart.base ? mergeColumns(own, plotColumns(chart.base, log, isSliced(chart.base))) : own) as uPlot.AlignedData;
  }

  /** The charts' colours and axis type, from the page's CSS (theme and presenter size);
   * `scale` is the axis type's size over the usual 11 px, which the axes' room grows by. */
  private colors(): { series: string[]; axis: string; grid: string; font: string; scale: number } {
    const css = getComputedStyle(this.root);
    const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
    const series = Array.from({ length: PALETTE }, (_, i) => v(`--chart-${i + 1}`, "#1f5fbf"));
    const px = Number(v("--chart-axis-px", "11")) || 11;
    return { series, axis: v("--muted", "#5a6374"), grid: v("--chart-grid", "#e6e9ef"), font: `${px}px ${v("--sans", "sans-serif")}`, scale: px / 11 };
  }

  /** A series' name as shown: its optimizer's name added when several optimizers ran. */
  private seriesLabel(s: SeriesInfo): string {
    if (this.data.steps.size > 1 && s.optimizer && s.label !== s.optimizer && !s.label.startsWith(s.optimizer)) return `${s.optimizer}: ${s.label}`;
    return s.label;
  }

  /** Draw `chart` anew, on a log y axis or not, sliced or not (see flush). */
  private create(chart: Chart, log: boolean, sliced: boolean): void {
    chart.plot?.destroy();
    chart.plotEl.replaceChildren();
    const table = chart.table;
    const c = this.colors();
    chart.log = log;
    chart.sliced = sliced;
    chart.yDigits = 4;
    chart.logTag.hidden = !log;
    const bytes = table.unit === "bytes";
    // a log axis ticks at powers of ten, a log byte axis at powers of two (byteLogSplits)
    const onPowers = log && bytes ? doublings(this.plotHeight) : decades(this.plotHeight);
    const fmt = bytes ? formatBytes : formatNumber;
    const steps = table.kind === "steps";
    const stepped = table.kind === "time" ? uPlot.paths.stepped?.({ align: 1, alignGaps: 1 }) : undefined;
    const axis = (values: uPlot.Axis["values"]): uPlot.Axis => ({
      stroke: c.axis,
      font: c.font,
      grid: { stroke: c.grid, width: 1 },
      ticks: { stroke: c.grid, width: 1, size: 4 },
      values,
    });
    const lines: uPlot.Series[] = sliced
      ? slicedSeries(c.series[0], stepped).map((s, i) => ({ ...s, show: !chart.hidden.has(i) }))
      : table.series.map((s, i) => ({
          label: this.seriesLabel(s),
          stroke: c.series[i % PALETTE],
          width: 1.5,
          dash: seriesLook(i).dash?.slice(),
          show: !chart.hidden.has(i),
          paths: stepped,
          // dots: the steps recorded in full (larger), and any value no line reaches (chart-gaps.ts)
          points: { show: false, size: 6, fill: c.series[i % PALETTE], filter: (u: uPlot, si: number) => this.dotIdx(u, si, chart, steps) },
        }));
    const series: uPlot.Series[] = [{ label: table.kind === "time" ? "seconds" : "step" }, ...lines, ...this.ghostSeries(chart, c.series, stepped)];
    const opts: uPlot.Options = {
      width: Math.max(chart.plotEl.clientWidth, 200),
      height: this.plotHeight,
      legend: { show: false },
      cursor: {
        sync: { key: table.kind === "time" ? "gw-time" : table.ownSteps ? `gw-own:${table.id}` : "gw-steps" },
        focus: { prox: 24 },
        points: { size: 7 },
        drag: { x: true, y: false },
      },
      focus: { alpha: 0.35 },
      scales: { x: { time: false, range: table.kind === "time" ? timeRange : padRange }, y: log ? { distr: 3, log: bytes ? 2 : 10 } : { range: bytes ? fromZero : linearRange } },
      axes: [
        {
          ...axis((_u, splits) => splits.map((v) => (table.kind === "time" ? `${formatNumber(v)} s` : formatNumber(v)))),
          size: Math.round(30 * c.scale),
          // seconds ("0.075 s") need more room between ticks than uPlot's 50 px: in presenter
          // type they ran together ("0.025 s0.05 s0.075 s")
          ...(table.kind === "time" ? { space: Math.round(60 * c.scale) } : { incrs: STEP_INCRS as number[] }),
        },
        {
          // a linear axis of numbers labels its ticks with as many digits as tell them apart
          ...axis((u, splits) => (chart.yTicks = log || bytes ? splits.map((v) => (v === null ? "" : log && !bytes ? formatPow10(v) : fmt(v))) : digitLabels(chart, splits, () => chart.plot === u && this.readout(chart, u)))),
          // as wide as its widest label (a learning rate of 4.9998e-4 did not fit 62 px), and
          // as the other charts' y axes, so that the plots of stacked cards line up
          size: (_u, values) => this.yAxes.size(chart, axisRoom(values, c.font, 4, Math.round(62 * c.scale))),
          ...(log
            ? {
                incrs: (bytes ? BYTE_INCRS : LOG_INCRS) as number[],
                splits: bytes ? byteLogSplits : logSplits,
                filter: onPowers,
                grid: { stroke: c.grid, width: 1, filter: onPowers },
                ticks: { stroke: c.grid, width: 1, size: 4, filter: onPowers },
              }
            : bytes
              ? { incrs: BYTE_INCRS as number[] }
              : {}),
        },
      ],
      series,
      hooks: { setCursor: [(u) => this.readout(chart, u)] },
    };
    const plot = new uPlot(opts, this.plotData(chart, log, sliced), chart.plotEl);
    chart.plot = plot;
    chart.seriesCount = table.series.length;
    renderLegend(chart, c.series, (s) => this.seriesLabel(s));
    this.readout(chart, plot);
    renderFoot(chart);
    this.bindClicks(chart, plot);
  }

  /** The compared run's series: dashed, in the colour of this run's series of the same name. */
  private ghostSeries(chart: Chart, colors: string[], paths: uPlot.Series.PathBuilder | undefined): uPlot.Series[] {
    const base = chart.base;
    if (!base) return [];
    const show = !chart.hidden.has(-1);
    const dashed = { width: 1.25, dash: [5, 4], show, paths, points: { show: false } };
    if (isSliced(base)) {
      const color = colors[0];
      return [
        { ...dashed, label: `peak (${COMPARED})`, stroke: translucent(color, "80") },
        { ...dashed, label: `floor (${COMPARED})`, stroke: color },
      ];
    }
    const own = chart.table.series.map((s) => s.key);
    return base.series.map((s, i) => {
      const at = own.indexOf(s.key);
      return { ...dashed, label: `${this.seriesLabel(s)} (${COMPARED})`, stroke: at >= 0 ? colors[at % PALETTE] : colors[(own.length + i) % PALETTE] };
    });
  }

  /** Indexes of the dots of series `si`: its steps recorded in full (`steps`: a step chart), and its lone points. */
  private dotIdx(u: uPlot, si: number, chart: Chart, steps: boolean): number[] | null {
    const [i0, i1] = u.series[0].idxs ?? [0, u.data[0].length - 1];
    const lone = lonePoints(u.data[si] as PlotColumn, i0, i1);
    const detail = steps ? (this.detailIdx(u, si, chart) ?? []) : [];
    const all = detail.length && lone.length ? [...new Set([...detail, ...lone])].sort((a, b) => a - b) : detail.length ? detail : lone;
    return all.length ? all : null;
  }

  /** Indexes of the steps recorded in full, for the dots of a per-optimizer series (or of the backward() calls). */
  private detailIdx(u: uPlot, si: number, chart: Chart): number[] | null {
    const opt = chart.table.series[si - 1]?.optimizer;
    const calls = chart.table.id === "calls";
    if (!opt && !calls) return null;
    const [i0, i1] = u.series[0].idxs ?? [0, u.data[0].length - 1];
    const out: number[] = [];
    for (const step of calls ? this.data.detailCalls : this.data.detailSteps(opt!)) {
      const i = step - 1;
      if (i >= i0 && i <= i1 && u.data[si][i] !== null && u.data[si][i] !== undefined) out.push(i);
    }
    return out.length ? out : null;
  }

  private readout(chart: Chart, u: uPlot): void {
    const table = chart.table;
    const fmt = readoutFormat(chart);
    const idx = u.cursor.idx;
    if (idx === null || idx === undefined || idx < 0) return readLast(chart, u, fmt, (s) => this.seriesLabel(s));
    // the plot's rows are both runs' x values (chart-compare.ts): read the plot, not the table
    const x = u.data[0][idx];
    const own = ownCount(chart);
    const value = (si: number) => {
      if (si > own || chart.sliced) return fmt(u.data[si][idx] ?? null);
      // this run's own value, from its table: a log axis leaves out values <= 0 (a logged 0
      // reads 0, not –); a step's row is step - 1; the plot's rows are the table's unless
      // the compared run's were merged in
      const row = table.kind === "steps" ? x - 1 : chart.base ? table.xs.indexOf(x) : idx;
      return cellText(table, si - 1, x, row >= 0 ? table.cols[si - 1][row] : null, fmt);
    };
    const shown = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, k) => from + k).filter((si) => u.series[si].show);
    const mine = chart.sliced ? [] : shown(1, own);
    const theirs = shown(own + 1, u.series.length - 1);
    let picks = [...mine, ...theirs];
    if (picks.length > 3) {
      const near = nearest(u, idx);
      picks = near === null ? [] : [near];
    }
    const parts = [table.kind === "time" ? `${formatNumber(x)} s` : table.stepText(x)];
    if (chart.sliced) parts.push(`peak ${value(1)}`, `floor ${value(2)}`); // a slice of rows, from its first row's time
    for (const si of picks) {
      const single = si <= own ? mine.length === 1 : theirs.length === 1 && mine.length <= 1 && !chart.sliced;
      const name = si > own ? (single ? COMPARED : u.series[si].label) : this.seriesLabel(table.series[si - 1]);
      parts.push(single && si <= own ? value(si) : `${name} ${value(si)}`);
    }
    let hint = "";
    const press = this.touched ? "tap again" : "click";
    if (table.id === "calls") hint = this.data.detailCalls.has(x) ? `● recorded in full: ${press} to open this backward() call` : "loss only";
    else if (table.kind === "steps") {
      const ownPick = picks.find((si) => si <= own);
      const opt = table.series[(ownPick ?? 1) - 1]?.optimizer;
      const ev = opt ? this.data.step(opt, x) : undefined;
      if (ev) hint = ev.detail ? `● recorded in full: ${press} to open` : "metrics only";
    }
    writeReadout(chart, parts.join(" · "), hint);
    chart.card.dataset.hover = String(x);
  }

  private bindClicks(chart: Chart, u: uPlot): void {
    if (chart.table.kind === "time") return;
    const open = (idx: number) => this.openAt(chart, u, idx);
    bindStepPresses(u.over, () => u.cursor.idx, open, () => this.readout(chart, u), (finger) => (this.touched = finger));
    bindStepKeys(chart, u, open);
  }

  /** Open what the point at row `idx` of `chart` stands for: a step's backward walk, or a backward() call. */
  private openAt(chart: Chart, u: uPlot, idx: number): void {
    const step = u.data[0][idx];
    if (chart.table.id === "calls") {
      this.steps.openCall(step - 1);
      return;
    }
    const si = nearest(u, idx, ownCount(chart)); // a step of this run, not the compared one
    const opt = (si !== null ? chart.table.series[si - 1]?.optimizer : null) ?? this.data.steps.keys().next().value;
    if (opt) this.steps.open(opt, step);
  }
}
