// The y scale each chart is drawn on: "auto" picks log only for positive numbers that span
// three decades; "linear" and "log" apply to every chart.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BYTE_INCRS, distinctLabels, LATE_FIRST_POINT, linearRange, LOG_INCRS, LOG_SPAN, logAxis, logSplits, timeRange } from "../src/chart-scales";
import { formatBytes, Table } from "../src/charts-data";

function table(values: (number | null)[], unit: "number" | "bytes" = "number"): Table {
  const t = new Table("loss", "Loss", "steps", unit, "");
  values.forEach((v, i) => t.setStep({ key: "opt", label: "opt", optimizer: "opt" }, i + 1, v));
  return t;
}

test("auto: a loss falling over three decades is drawn on a log axis", () => {
  assert.equal(logAxis(table([100, 1, 0.01, 6.5e-7]), "auto"), true);
  assert.equal(logAxis(table([LOG_SPAN, 1]), "auto"), true);
});

test("auto: values within three decades, a zero, a negative or bytes stay linear", () => {
  assert.equal(logAxis(table([0.7, 0.5, 0.37]), "auto"), false);
  assert.equal(logAxis(table([LOG_SPAN - 1, 1]), "auto"), false);
  assert.equal(logAxis(table([100, 0, 1e-6]), "auto"), false);
  assert.equal(logAxis(table([100, -1e-6]), "auto"), false);
  assert.equal(logAxis(table([1e6, 1], "bytes"), "auto"), false);
  assert.equal(logAxis(table([]), "auto"), false);
});

test("auto: gaps are ignored, and every series counts", () => {
  assert.equal(logAxis(table([null, 100, null, 0.01]), "auto"), true);
  const t = table([1, 2]);
  t.setStep({ key: "b", label: "b", optimizer: "b" }, 1, 1e-5);
  assert.equal(logAxis(t, "auto"), true);
});

test("linear and log are what they say, for every chart", () => {
  assert.equal(logAxis(table([100, 1e-6]), "linear"), false);
  assert.equal(logAxis(table([0.7, 0.5]), "log"), true);
  assert.equal(logAxis(table([1e6, 1], "bytes"), "log"), true);
});

test("log ticks are the powers of ten in range, however wide (an exploding loss reaches 1e36)", () => {
  assert.deepEqual(logSplits(null as never, 1, 0.5, 2000), [1, 10, 100, 1000]);
  const wide = logSplits(null as never, 1, 100, 1e36);
  assert.equal(wide.length, 35);
  assert.equal(wide[0], 100);
  assert.equal(wide.at(-1), 1e36);
  assert.ok(wide.every((v) => String(v).match(/^1(0*|e\+\d+)$/)), String(wide));
  // under two powers of ten: 2x and 5x each power too (a loss from 0.9 to 0.2 had one tick,
  // "1", or none); none of those in range either: its ends; nothing to draw: nothing
  assert.deepEqual(logSplits(null as never, 1, 2, 8), [2, 5]);
  assert.deepEqual(logSplits(null as never, 1, 0.2, 0.9), [0.2, 0.5]);
  assert.deepEqual(logSplits(null as never, 1, 0.3, 3), [0.5, 1, 2]);
  assert.deepEqual(logSplits(null as never, 1, 3, 4), [3, 4]);
  assert.deepEqual(logSplits(null as never, 1, 0, 8), []);
  // increments reach past any float32 loss, so uPlot always finds one
  assert.equal(LOG_INCRS.at(-1), 1e308);
  assert.equal(LOG_INCRS[0], 1e-308);
});

test("a bytes axis ticks where its labels are exact: 4 KiB, 8 KiB, 1.5 KiB, never 4.88 KiB", () => {
  assert.equal(BYTE_INCRS[0], 1);
  assert.ok(BYTE_INCRS.includes(4096) && BYTE_INCRS.includes(2 ** 30));
  assert.ok(!BYTE_INCRS.includes(5000));
  const factor: Record<string, number> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30 };
  for (const step of BYTE_INCRS.filter((v) => v <= 2 ** 30)) {
    for (let k = 1; k <= 7; k++) {
      const [n, unit] = formatBytes(k * step).split(" ");
      assert.equal(Number(n) * factor[unit], k * step, `${k} × ${step} B read as ${n} ${unit}`);
    }
  }
});

test("a linear axis draws values that differ only by float noise as one flat line", () => {
  // clip_grad_norm_ holds a norm at max_norm: 1.0000000005 ... 1.00000005
  const [lo, hi] = linearRange(null as never, 1.0000000005, 1.00000005);
  assert.ok(lo! < 1 && hi! > 1.00000005 && hi! - lo! > 0.01, `${lo} .. ${hi}`);
  const [a, b] = linearRange(null as never, 0.5, 1.5);
  assert.ok(a! <= 0.5 && b! >= 1.5 && b! - a! < 2, `${a} .. ${b}`);
  assert.deepEqual(linearRange(null as never, null, null), [0, 1]);
  assert.deepEqual(linearRange(null as never, 0, 0), [0, 1]); // uPlot's own range: 0 to 100
});

test("a linear axis's tick labels differ: as many digits as tell them apart", () => {
  assert.deepEqual(distinctLabels([0, 0.5, 1]), ["0", "0.5", "1"]);
  assert.deepEqual(distinctLabels([1727.505, 1727.51, 1727.515]), ["1727.505", "1727.51", "1727.515"]);
  assert.deepEqual(distinctLabels([null, 2, 3]), ["", "2", "3"]);
});

test("time axis: from the run's start, unless the first point comes late in the run", () => {
  // a warm worker's run: the first saved tensor 0.04 s in, drawn from "0 s"
  const [a, b] = timeRange(null as never, 0.04, 0.5);
  assert.equal(a, 0);
  assert.ok(b > 0.5 && b < 0.52);
  // `gradwalk record` in a fresh process: 0.96 s importing torch._dynamo, then 20 batches in
  // 0.05 s, which must fill the chart (they had the last 5% of its width)
  const [lo, hi] = timeRange(null as never, 0.964, 1.009);
  assert.ok(lo > 0.96 && lo < 0.964, `from the first point, not the run's start: ${lo}`);
  assert.ok(hi > 1.009 && hi < 1.011);
  // the boundary: a first point at a quarter of the span still starts at 0
  assert.equal(timeRange(null as never, LATE_FIRST_POINT, 1)[0], 0);
  assert.deepEqual(timeRange(null as never, null, null), [0, 1]);
});
