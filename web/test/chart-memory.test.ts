// A long run's memory chart, drawn as peak and floor per run of its points: a graph built
// and freed every step keeps a floor of 0 and a peak at the graph, even where the run
// stalls with its graph held or with nothing held.
import assert from "node:assert/strict";
import { test } from "node:test";
import { memoryFoot, sliceCount } from "../src/chart-memory";
import { envelope } from "../src/charts-data";

/** 300 steps, one time unit each: a 96 B graph built at the start and freed 0.8 later;
 * every 20th step stalls with its graph held for 30 units, every 20th (other) one stalls
 * for 30 units after freeing it. */
function sawtooth(): [number[], number[]] {
  const xs: number[] = [];
  const ys: number[] = [];
  let t = 0;
  for (let i = 0; i < 300; i++) {
    const held = i % 20 === 10 ? 30 : 0.8;
    xs.push(t, t + held);
    ys.push(96, 0);
    t += held + (i % 20 === 0 ? 30 : 0.2);
  }
  return [xs, ys];
}

test("slices of 8 rows or more: a freed graph never lifts the floor, a stall never empties the band", () => {
  const [xs, ys] = sawtooth();
  assert.equal(sliceCount(xs.length), 75);
  const [, peak, floor] = envelope(xs, ys, sliceCount(xs.length));
  assert.deepEqual(new Set(peak), new Set([96]));
  assert.deepEqual(new Set(floor), new Set([0]));
  // a slice within one step (one row here) reads its graph as kept
  const [, , thin] = envelope(xs, ys, xs.length);
  assert.ok(thin.some((f) => f === 96));
  assert.match(memoryFoot(ys)!.text, /floor steady at 0 B/);
});

test("a graph kept from step to step lifts the floor slice after slice", () => {
  const xs = Array.from({ length: 600 }, (_, i) => i);
  // each step builds 96 B and keeps them (total += loss): 96 kept, then 192, 288 ...
  const ys = xs.map((i) => 96 * (Math.floor(i / 2) + 1) + (i % 2 ? 0 : 96));
  const [, , floor] = envelope(xs, ys, sliceCount(xs.length));
  assert.ok(floor.every((f, i) => i === 0 || f! >= floor[i - 1]!)); // the last point repeats the last slice
  assert.ok(floor[floor.length - 1]! > 50 * floor[0]!);
  assert.match(memoryFoot(ys)!.text, /floor rose/);
});

test("the slice count stays between 1 and 160", () => {
  assert.equal(sliceCount(0), 1);
  assert.equal(sliceCount(401), 50);
  assert.equal(sliceCount(100_000), 160);
});
