// A long run's memory chart, drawn as peak and floor per slice of the clock: a graph built
// and freed every step keeps a floor of 0, even where a step stalls with its graph held.
import assert from "node:assert/strict";
import { test } from "node:test";
import { memoryFoot, sliceCount } from "../src/chart-memory";
import { envelope } from "../src/charts-data";

/** 300 steps, one time unit each: a 96 B graph built at the start and freed 0.8 later;
 * every 20th step stalls with its graph held for 3 units. */
function sawtooth(): [number[], number[]] {
  const xs: number[] = [];
  const ys: number[] = [];
  let t = 0;
  for (let i = 0; i < 300; i++) {
    const held = i % 20 === 10 ? 3 : 0.8;
    xs.push(t, t + held);
    ys.push(96, 0);
    t += held + 0.2;
  }
  return [xs, ys];
}

test("a slice spans about 8 rows: wider than a step, so a freed graph never lifts the floor", () => {
  const [xs, ys] = sawtooth();
  assert.equal(sliceCount(xs.length), 75);
  const [, peak, floor] = envelope(xs, ys, sliceCount(xs.length));
  assert.ok(peak.every((p) => p === 96));
  assert.deepEqual(new Set(floor), new Set([0]));
  // slices narrower than the stalls (160 of them) put the floor at the peak now and then
  const [, , thin] = envelope(xs, ys, 160);
  assert.ok(thin.some((f) => f === 96));
  assert.match(memoryFoot(ys)!.text, /floor steady at 0 B/);
});

test("the slice count stays between 1 and 160", () => {
  assert.equal(sliceCount(0), 1);
  assert.equal(sliceCount(401), 50);
  assert.equal(sliceCount(100_000), 160);
});
