// The training charts' tables, from synthetic events: steps line up per optimizer, a
// restarted optimizer gets its own series, metrics sort by step, memory follows the clock.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ChartData, envelope, formatBytes, formatNumber } from "../src/charts-data";
import type { GradwalkEvent, OptimizerStep } from "../src/types/events";

let seq = 0;

function step(optimizer: string, n: number, loss: number | null, extra: Partial<OptimizerStep> = {}): GradwalkEvent {
  return {
    type: "optimizer_step",
    seq: seq++,
    t: n * 0.01,
    optimizer,
    step: n,
    loss,
    lr: [0.1],
    grad_norm: 1 / n,
    update_norm: 0.1 / n,
    param_norm: 1,
    params: [
      { tensor: 1, name: "fc.weight", grad_norm: 0.5 / n, update_norm: 0.05 / n, param_norm: 1 },
      { tensor: 2, name: "fc.bias", grad_norm: 0.2 / n, update_norm: 0.02 / n, param_norm: 1 },
    ],
    graph_bytes: 0,
    cuda_allocated: null,
    wall_s: 0.001,
    detail: n <= 2,
    line: 9,
    ...extra,
  } as GradwalkEvent;
}

function started(): GradwalkEvent {
  return { type: "run_started", seq: seq++, t: 5, source: "", filename: "s.py", device: "cpu" } as unknown as GradwalkEvent;
}

test("two optimizers stay apart, step for step", () => {
  const events = [started()];
  for (let n = 1; n <= 3; n++) events.push(step("opt (SGD)", n, 10 / n), step("probe (Adam)", n, 5 / n));
  events.push(step("opt (SGD)", 4, 2.5));
  const data = ChartData.from(events, false);
  const loss = data.tables.get("loss")!;
  assert.deepEqual(loss.xs, [1, 2, 3, 4]);
  assert.deepEqual(loss.series.map((s) => s.label), ["opt (SGD)", "probe (Adam)"]);
  assert.deepEqual(loss.cols[0], [10, 5, 10 / 3, 2.5]);
  assert.deepEqual(loss.cols[1], [5, 2.5, 5 / 3, null]);
  assert.deepEqual(data.detailSteps("opt (SGD)"), [1, 2]);
  assert.equal(data.stepCount, 7);
  assert.deepEqual(data.ordered.map((t) => t.id), ["loss", "grad", "update", "lr", "memory"]);
});

test("an optimizer whose steps start again is a new series", () => {
  const data = ChartData.from([step("opt (SGD)", 1, 3), step("opt (SGD)", 2, 2), step("opt (SGD)", 1, 9)], false);
  assert.deepEqual(data.tables.get("loss")!.series.map((s) => s.label), ["opt (SGD)", "opt (SGD) #2"]);
  assert.equal(data.step("opt (SGD) #2", 1)?.loss, 9);
});

test("per parameter: one series per parameter name; non-finite values are gaps", () => {
  const data = ChartData.from([step("opt", 1, Number.POSITIVE_INFINITY), step("opt", 2, 1)], true);
  const grad = data.tables.get("grad")!;
  assert.deepEqual(grad.series.map((s) => s.label), ["fc.weight", "fc.bias"]);
  assert.deepEqual(grad.cols[0], [0.5, 0.25]);
  assert.deepEqual(data.tables.get("loss")!.cols[0], [null, 1]);
});

test("a gap left by a NaN or infinite value remembers which it was, as the trace wrote it", () => {
  // the trace's JSON writes them as strings
  const odd = (v: string) => v as unknown as number;
  const data = ChartData.from([step("opt", 1, 3), step("opt", 2, odd("Infinity")), step("opt", 3, odd("NaN")), step("opt", 4, odd("-Infinity"))], false);
  const loss = data.tables.get("loss")!;
  assert.deepEqual(loss.cols[0], [3, null, null, null]);
  assert.deepEqual([1, 2, 3, 4].map((s) => loss.notFiniteAt(0, s)), [null, "inf", "NaN", "-inf"]);
  assert.equal(loss.notFiniteAt(1, 2), null);
});

test("a metric logged at its own steps (an epoch's) moves its cursor alone; step=i keeps the optimizer's", () => {
  const metric = (name: string, value: number, s: number | null): GradwalkEvent =>
    ({ type: "metric", seq: seq++, t: 0, name, value, step: s, line: 3 }) as GradwalkEvent;
  const events: GradwalkEvent[] = [];
  for (let epoch = 0; epoch < 3; epoch++) {
    for (let i = 1; i <= 4; i++) {
      const n = epoch * 4 + i;
      events.push(step("opt", n, 1 / n), metric("batch_acc", 0.5, n - 1)); // step=i from 0: one behind
    }
    events.push(metric("val_acc", 0.9, epoch));
  }
  const data = ChartData.from(events, false);
  const val = data.tables.get("metric:val_acc")!;
  assert.equal(val.ownSteps, true);
  assert.equal(val.stepText(2), "its step 2");
  assert.match(val.help, /at its own steps \(step=…, not the optimizer's\): its cursor moves alone$/);
  const batch = data.tables.get("metric:batch_acc")!;
  assert.equal(batch.ownSteps, false);
  assert.equal(batch.stepText(5), "step 5");
  assert.equal(data.tables.get("loss")!.ownSteps, false);
});

test("metrics sort by step; without one they sit at the latest training step", () => {
  const metric = (name: string, value: number, s: number | null): GradwalkEvent =>
    ({ type: "metric", seq: seq++, t: 0, name, value, step: s, line: 3 }) as GradwalkEvent;
  const data = ChartData.from([metric("acc", 0.5, 20), metric("acc", 0.4, 10), step("opt", 1, 1), step("opt", 2, 1), metric("val", 0.9, null)], false);
  const acc = data.tables.get("metric:acc")!;
  assert.deepEqual(acc.xs, [10, 20]);
  assert.deepEqual(acc.cols[0], [0.4, 0.5]);
  assert.deepEqual(data.tables.get("metric:val")!.xs, [2]);
  // the snippet's own metrics come right after the loss, in the order first logged
  assert.deepEqual(data.ordered.map((t) => t.id), ["loss", "metric:acc", "metric:val", "grad", "update", "lr", "memory"]);
});

test("graph memory follows the run's clock, from memory events and steps", () => {
  const memory = (t: number, saved: number): GradwalkEvent =>
    ({ type: "memory", seq: seq++, t, saved_bytes: saved, delta: 0, cuda_allocated: saved * 2, line: 4 }) as GradwalkEvent;
  const data = ChartData.from([started(), memory(5.5, 100), memory(6, 300), step("opt", 1, 1, { t: 6.5, graph_bytes: 0 } as Partial<OptimizerStep>)], false);
  const mem = data.tables.get("memory")!;
  assert.deepEqual(mem.xs, [0.5, 1, 1.5]);
  assert.deepEqual(mem.cols[0], [100, 300, 0]);
  assert.deepEqual(data.tables.get("cuda")!.cols[0], [200, 600]);
});

test("numbers and bytes read short", () => {
  assert.equal(formatNumber(0.000123), "1.23e-4");
  assert.equal(formatNumber(0.0005), "5e-4"); // a learning rate's axis tick read 5.00e-4
  assert.equal(formatNumber(0.00015), "1.5e-4");
  assert.equal(formatNumber(250000), "2.5e5");
  assert.equal(formatNumber(106.6251), "106.6");
  assert.equal(formatNumber(null), "–");
  assert.equal(formatBytes(230016), "225 KiB");
  assert.equal(formatBytes(96), "96 B");
});

test("a loop that steps by hand charts the loss of each backward() call", async () => {
  const { loadTrace } = await import("./traces");
  const manual = ChartData.from(loadTrace("manual_gd").events, false);
  const calls = manual.ordered[0];
  assert.equal(calls.id, "calls");
  assert.deepEqual(calls.xs, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const losses = calls.cols[0] as number[];
  assert.ok(losses.every((v, i) => i === 0 || v < losses[i - 1]), String(losses)); // gradient descent works
  // at w = 0 the first loss is mean((3x + 2)²) over the 20 points of linspace(-1, 1)
  const xs = Array.from({ length: 20 }, (_, i) => -1 + (2 * i) / 19);
  const first = xs.reduce((sum, x) => sum + (3 * x + 2) ** 2, 0) / 20;
  assert.ok(Math.abs(losses[0] - first) < 1e-4, `${losses[0]} vs ${first}`);
  // one call is no curve; and a run with an optimizer has its own loss chart
  assert.ok(!ChartData.from(loadTrace("cubic").events, false).ordered.some((t) => t.id === "calls"));
  const stepped = ChartData.from([...loadTrace("manual_gd").events, step("opt (SGD)", 1, 0.5)], false);
  assert.deepEqual(stepped.ordered.map((t) => t.id).slice(0, 1), ["loss"]);
});

test("envelope: each run of rows holds its peak and its floor; a last point closes the last run", () => {
  // a graph built and freed twice, then kept: 0..96 B, then 96 B held
  const xs = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0, 2.0];
  const ys = [0, 96, 0, 96, 0, 96, null, 96, 96, 96];
  const [starts, peak, floor] = envelope(xs, ys, 4);
  // rows 0-1, 2-4, 5-6, 7-9: each run starts at its first row's x
  assert.deepEqual(starts, [0, 0.2, 0.5, 0.7, 2.0]);
  assert.deepEqual(peak, [96, 96, 96, 96, 96]);
  assert.deepEqual(floor, [0, 0, 96, 96, 96]);
  assert.deepEqual(envelope([], [], 4), [[], [], []]);
  // fewer rows than slices: a run per row; one row: one point
  assert.deepEqual(envelope([3], [7], 2), [[3], [7], [7]]);
  // a run of nulls only reads the last value before it
  assert.deepEqual(envelope([0, 1, 2, 3], [5, 6, null, null], 2), [[0, 2, 3], [6, 6, 6], [5, 6, 6]]);
});

test("a loop that steps by hand: whole calls and counted ones make one loss chart, and counted ones carry memory", () => {
  const events: GradwalkEvent[] = [started()];
  // calls 1 and 2 recorded in full (their roots are one-element tensors), 3 and 4 counted
  for (const index of [0, 1]) {
    events.push({ type: "tensor", seq: seq++, t: 5 + index, id: 10 + index, value: { kind: "full", shape: [], flat: [4 - index] } } as unknown as GradwalkEvent);
    events.push({ type: "backward_started", seq: seq++, t: 5 + index, index, roots: [10 + index] } as unknown as GradwalkEvent);
  }
  for (const index of [2, 3]) {
    events.push({ type: "backward_counted", seq: seq++, t: 7 + index, index, loss: 4 - index, graph_bytes: 0, graph_peak_bytes: 4096, wall_s: 0.001, line: 5 } as GradwalkEvent);
  }
  const data = ChartData.from(events, false);
  assert.deepEqual(data.ordered.map((t) => t.id), ["calls", "memory"]);
  const calls = data.tables.get("calls")!;
  assert.deepEqual([...calls.xs], [1, 2, 3, 4]);
  assert.deepEqual([...calls.cols[0]], [4, 3, 2, 1]);
  assert.deepEqual([...data.detailCalls].sort(), [1, 2]);
  // each counted call: its peak, then what it left held
  assert.deepEqual([...data.tables.get("memory")!.cols[0]], [4096, 0, 4096, 0]);
});
