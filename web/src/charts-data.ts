// The numbers behind the training charts, gathered from the event stream as it arrives.
//
// Every chart is one table in uPlot's shape: an ascending x column and one y column per
// series, null where a series has no point. Step charts (loss, norms, learning rate) share
// the optimizer step as x, so several optimizers line up step for step and stay separate
// series; memory is charted against the run's clock, because the graph grows and shrinks
// between steps (and in loops that never step at all). Ingesting appends: O(series) per
// event at most, so a 1,000-step run streams without recomputing anything.
import type { GradwalkEvent, MemoryChanged, MetricLogged, OptimizerStep } from "./types/events";
import { isFull, num } from "./values";

export type ChartKind = "steps" | "time" | "metric";
export type Unit = "number" | "bytes";

export interface SeriesInfo {
  key: string;
  label: string;
  /** The optimizer (its instance label) the series belongs to; null for non-step series. */
  optimizer: string | null;
}

/** One chart's data: `xs` ascending, `cols[i]` aligned with it, described by `series[i]`. */
export class Table {
  readonly xs: number[] = [];
  readonly cols: (number | null)[][] = [];
  readonly series: SeriesInfo[] = [];
  private readonly index = new Map<string, number>();
  /** Steps whose value was NaN or infinite (not plotted), by column: "NaN", "inf", "-inf". */
  private readonly notFinite = new Map<number, Map<number, string>>();
  /** Bumped on every change, so a view redraws only the tables that moved. */
  version = 0;
  /**
   * A metric logged with a `step=` of the snippet's own count (an epoch), not the optimizer
   * step it was logged at: its x axis is that count, so its cursor moves alone. Hovering the
   * loss at optimizer step 17 had put val_acc's at its step 17, epoch 17 (step 108).
   */
  ownSteps = false;

  constructor(
    readonly id: string,
    readonly title: string,
    readonly kind: ChartKind,
    readonly unit: Unit,
    /** What the chart shows (its help, without the note {@link ownSteps} adds). */
    readonly about: string,
  ) {}

  /** What the chart shows, in a sentence (its card's line under the title). */
  get help(): string {
    return this.ownSteps ? `${this.about} at its own steps (step=…, not the optimizer's): its cursor moves alone` : this.about;
  }

  /** How a step of this chart is read out: "step 17", or "its step 17" for {@link ownSteps}. */
  stepText(x: number): string {
    return `${this.ownSteps ? "its step" : "step"} ${x}`;
  }

  get length(): number {
    return this.xs.length;
  }

  column(info: SeriesInfo): (number | null)[] {
    let i = this.index.get(info.key);
    if (i === undefined) {
      i = this.series.length;
      this.index.set(info.key, i);
      this.series.push(info);
      this.cols.push(new Array<number | null>(this.xs.length).fill(null));
    }
    return this.cols[i];
  }

  /** Set `info`'s value at step `step` (1-based): rows are steps 1..n, one per row. */
  setStep(info: SeriesInfo, step: number, value: number | null): void {
    const col = this.column(info);
    while (this.xs.length < step) {
      this.xs.push(this.xs.length + 1);
      for (const c of this.cols) c.push(null);
    }
    col[step - 1] = finite(value);
    const n = value === null || value === undefined ? null : num(value);
    if (n !== null && !Number.isFinite(n)) {
      const at = this.index.get(info.key)!;
      let odd = this.notFinite.get(at);
      if (!odd) this.notFinite.set(at, (odd = new Map()));
      odd.set(step, Number.isNaN(n) ? "NaN" : n > 0 ? "inf" : "-inf");
    }
    this.version++;
  }

  /** "NaN", "inf" or "-inf" where column `col` had such a value at step `step` (a step chart's gaps). */
  notFiniteAt(col: number, step: number): string | null {
    return this.notFinite.get(col)?.get(step) ?? null;
  }

  /** The first step any column was NaN or infinite at, what it was there, and at how many
   * steps some column was; null when every value was a number. */
  notFiniteSummary(): { step: number; value: string; steps: number } | null {
    const steps = new Map<number, string>();
    for (const odd of this.notFinite.values()) for (const [step, v] of odd) if (!steps.has(step)) steps.set(step, v);
    if (!steps.size) return null;
    const first = Math.min(...steps.keys());
    return { step: first, value: steps.get(first)!, steps: steps.size };
  }

  /** Add a row at `x` with `info`'s value (others null), keeping x ascending. */
  addRow(info: SeriesInfo, x: number, value: number | null): void {
    const col = this.column(info);
    let at = this.xs.length;
    while (at > 0 && this.xs[at - 1] > x) at--;
    if (at > 0 && this.xs[at - 1] === x && this.kind === "metric") {
      col[at - 1] = finite(value);
    } else {
      this.xs.splice(at, 0, x);
      for (const c of this.cols) c.splice(at, 0, null);
      col[at] = finite(value);
    }
    this.version++;
  }
}

function finite(v: number | null | undefined): number | null {
  return v === null || v === undefined || !Number.isFinite(v) ? null : v;
}

/** A step as a chart knows it: the event and the optimizer instance it belongs to. */
export interface StepRef {
  optimizer: string;
  ev: OptimizerStep;
}

export class ChartData {
  readonly tables = new Map<string, Table>();
  /** optimizer instance label -> its steps, index = step - 1 */
  readonly steps = new Map<string, OptimizerStep[]>();
  private readonly lastStep = new Map<string, { step: number; instance: string; n: number }>();
  private readonly metricCount = new Map<string, number>();
  /** The backward() calls recorded in full (1-based): in a loop that steps by hand, the first ones. */
  readonly detailCalls = new Set<number>();
  /** tensor id -> its value, for one-element tensors (a backward call's root: its loss) */
  private readonly scalars = new Map<number, number>();
  private t0: number | null = null;
  private maxStep = 0;
  version = 0;

  constructor(readonly perParam: boolean) {}

  static from(events: readonly GradwalkEvent[], perParam: boolean): ChartData {
    const data = new ChartData(perParam);
    for (const ev of events) data.add(ev);
    return data;
  }

  /** The charts in the order they are shown, the ones with data only. */
  get ordered(): Table[] {
    // a loop that steps by hand (w -= lr * w.grad) has no optimizer step: its loss is the
    // root of each backward() call
    const calls = this.stepCount === 0 && (this.tables.get("calls")?.length ?? 0) > 1 ? ["calls"] : [];
    const withRows = (ids: string[]) => ids.map((id) => this.tables.get(id)).filter((t): t is Table => !!t && t.length > 0);
    // the snippet's own metrics (gradwalk.log) right after the loss: what its author chose
    // to watch, read against the loss (at the end, val_acc was four charts down, below the
    // fold of a 1280 x 800 screen)
    const metrics = [...this.tables.values()].filter((t) => t.kind === "metric" && t.length > 0);
    return [...withRows([...calls, "loss"]), ...metrics, ...withRows(["grad", "update", "lr", "memory", "cuda"])];
  }

  get stepCount(): number {
    let n = 0;
    for (const list of this.steps.values()) n += list.length;
    return n;
  }

  /** Steps recorded in full (tape, graph, backward walk), per optimizer instance. */
  detailSteps(optimizer: string): number[] {
    return (this.steps.get(optimizer) ?? []).filter((s) => s.detail).map((s) => s.step);
  }

  step(optimizer: string, step: number): OptimizerStep | undefined {
    return this.steps.get(optimizer)?.[step - 1];
  }

  add(ev: GradwalkEvent): void {
    if (this.t0 === null && ev.type === "run_started") this.t0 = ev.t;
    switch (ev.type) {
      case "optimizer_step":
        this.addStep(ev);
        break;
      case "memory":
        this.addMemory(ev);
        break;
      case "metric":
        this.addMetric(ev);
        break;
      case "tensor":
        if (isFull(ev.value) && ev.value.flat.length === 1) this.scalars.set(ev.id, num(ev.value.flat[0]));
        return;
      case "backward_started": {
        this.detailCalls.add(ev.index + 1);
        const loss = this.scalars.get(ev.roots[0]);
        if (loss === undefined) return;
        this.addCallLoss(ev.index, loss);
        break;
      }
      case "backward_counted":
        // a call of a loop that steps by hand past its first ones: its loss and memory only
        if (ev.loss !== null) this.addCallLoss(ev.index, ev.loss);
        this.addStepMemory(ev.t, ev.graph_peak_bytes, ev.graph_bytes, null);
        break;
      default:
        return;
    }
    this.version++;
  }

  private table(id: string, title: string, kind: ChartKind, unit: Unit, help: string): Table {
    let t = this.tables.get(id);
    if (!t) {
      t = new Table(id, title, kind, unit, help);
      this.tables.set(id, t);
    }
    return t;
  }

  /**
   * The label of the optimizer instance that made `ev`. Each optimizer counts its own steps
   * from 1; a label whose steps start again is a new optimizer with the same name.
   */
  private instance(ev: OptimizerStep): string {
    const seen = this.lastStep.get(ev.optimizer);
    if (!seen) {
      this.lastStep.set(ev.optimizer, { step: ev.step, instance: ev.optimizer, n: 1 });
      return ev.optimizer;
    }
    if (ev.step <= seen.step) {
      seen.n += 1;
      seen.instance = `${ev.optimizer} #${seen.n}`;
    }
    seen.step = ev.step;
    return seen.instance;
  }

  private addStep(ev: OptimizerStep): void {
    const opt = this.instance(ev);
    let list = this.steps.get(opt);
    if (!list) {
      list = [];
      this.steps.set(opt, list);
    }
    list[ev.step - 1] = ev;
    this.maxStep = Math.max(this.maxStep, ev.step);
    const own = (suffix = "") => ({ key: `${opt}${suffix}`, label: `${opt}${suffix}`, optimizer: opt });
    if (ev.loss !== null) {
      const t = this.table("loss", "Loss", "steps", "number", "the loss each step backpropagated (the root of the last backward())");
      t.setStep(own(), ev.step, ev.loss);
    }
    const grad = this.table("grad", "Gradient norm", "steps", "number", "‖grad‖ the step used (after any clipping, such as clip_grad_norm_): all parameters together, or each one");
    const update = this.table("update", "Update norm", "steps", "number", "how far the step moved the parameters: ‖param after − param before‖");
    if (this.perParam && ev.params.length) {
      for (const p of ev.params) {
        const info = { key: `${opt}\u0000${p.name}`, label: p.name, optimizer: opt };
        grad.setStep(info, ev.step, p.grad_norm);
        update.setStep(info, ev.step, p.update_norm);
      }
    } else {
      grad.setStep(own(), ev.step, ev.grad_norm);
      update.setStep(own(), ev.step, ev.update_norm);
    }
    const lr = this.table("lr", "Learning rate", "steps", "number", "the learning rate of each parameter group at this step");
    ev.lr.forEach((value, group) => {
      const suffix = ev.lr.length > 1 ? ` group ${group}` : "";
      lr.setStep(own(suffix), ev.step, value);
    });
    this.addStepMemory(ev.t, ev.graph_peak_bytes, ev.graph_bytes, ev.cuda_allocated ?? null);
  }

  /**
   * The graph's peak since the last step, then what the step left held: a metrics-only step
   * (or backward() call) sends no memory events of its own, its rise and fall come with it.
   */
  private addStepMemory(t: number, peak: number, held: number, cuda: number | null): void {
    if (peak > held) this.graphRow(t, peak);
    this.addGraphBytes(t, held, cuda);
  }

  /** Backward call `index`'s loss (0-based; the chart counts from 1), where no optimizer stepped. */
  private addCallLoss(index: number, loss: number): void {
    const t = this.table("calls", "Loss", "steps", "number", "the root of each backward() call, one call a step (no optimizer stepped)");
    t.setStep({ key: "loss", label: "loss", optimizer: null }, index + 1, loss);
  }

  private clock(t: number): number {
    return Math.max(0, t - (this.t0 ?? 0));
  }

  private graphRow(t: number, bytes: number): void {
    const mem = this.table("memory", "Graph memory", "time", "bytes", "bytes held by tensors saved for backward, over the run: a graph kept alive keeps them");
    mem.addRow({ key: "graph", label: "saved by the graph", optimizer: null }, this.clock(t), bytes);
  }

  private addGraphBytes(t: number, bytes: number, cuda: number | null): void {
    this.graphRow(t, bytes);
    if (cuda !== null) {
      const c = this.table("cuda", "CUDA memory", "time", "bytes", "torch.cuda.memory_allocated() over the run");
      c.addRow({ key: "cuda", label: "CUDA allocated", optimizer: null }, this.clock(t), cuda);
    }
  }

  private addMemory(ev: MemoryChanged): void {
    this.addGraphBytes(ev.t, ev.saved_bytes, ev.cuda_allocated ?? null);
  }

  private addMetric(ev: MetricLogged): void {
    const n = (this.metricCount.get(ev.name) ?? 0) + 1;
    this.metricCount.set(ev.name, n);
    // Without an explicit step, a metric belongs to the training step it was logged at.
    const x = ev.step ?? (this.maxStep || n);
    const t = this.table(`metric:${ev.name}`, ev.name, "metric", "number", `logged with gradwalk.log("${ev.name}", value)`);
    // step=i in a loop is the optimizer's count (give or take one); step=epoch is not
    if (ev.step !== null && ev.step !== undefined && this.maxStep > 0 && Math.abs(ev.step - this.maxStep) > 1) t.ownSteps = true;
    t.addRow({ key: ev.name, label: ev.name, optimizer: null }, x, ev.value);
  }
}

export function formatNumber(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  const a = Math.abs(v);
  if (a === 0) return "0";
  // as learning rates are written: 5e-4, 1.23e-4 (not 5.00e-4)
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2).replace(/\.?0+e/, "e").replace("e+", "e");
  return String(Number(v.toPrecision(4)));
}

export function formatBytes(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  const units = ["B", "KiB", "MiB", "GiB"];
  let x = v;
  let u = 0;
  while (Math.abs(x) >= 1024 && u < units.length - 1) {
    x /= 1024;
    u++;
  }
  return `${u ? Number(x.toPrecision(3)) : Math.round(x)} ${units[u]}`;
}

/**
 * A long series cut into `slices` runs of consecutive rows (the same number of rows in
 * each, give or take one): each run's first x, and the largest (peak) and smallest (floor)
 * value in it; a last point at the last row's x closes the final run. Runs of rows, not
 * equal stretches of the clock: a stretch in which the run stalled holds no row, and as a
 * slice of its own it read as the graph held throughout (or as nothing held), where the
 * rows around it show a graph built and freed. A run whose values are all null reads the
 * last value before it. `xs` must be ascending.
 */
export function envelope(
  xs: readonly number[],
  col: readonly (number | null)[],
  slices: number,
): [number[], (number | null)[], (number | null)[]] {
  const starts: number[] = [];
  const peak: (number | null)[] = [];
  const floor: (number | null)[] = [];
  const n = xs.length;
  if (!n) return [starts, peak, floor];
  const runs = Math.max(1, Math.min(slices, n));
  let carry: number | null = null;
  for (let k = 0; k < runs; k++) {
    const from = Math.floor((k * n) / runs);
    const to = Math.floor(((k + 1) * n) / runs);
    let hi: number | null = null;
    let lo: number | null = null;
    for (let i = from; i < to; i++) {
      const v = col[i];
      if (v === null) continue;
      hi = hi === null ? v : Math.max(hi, v);
      lo = lo === null ? v : Math.min(lo, v);
      carry = v;
    }
    starts.push(xs[from]);
    peak.push(hi ?? carry);
    floor.push(lo ?? carry);
  }
  if (xs[n - 1] > starts[starts.length - 1]) {
    starts.push(xs[n - 1]);
    peak.push(peak[peak.length - 1]);
    floor.push(floor[floor.length - 1]);
  }
  return [starts, peak, floor];
}
