// What a chart draws of a table: a gap (null) where a value cannot be drawn, undefined
// (passed over) where a series has no row.
import assert from "node:assert/strict";
import { test } from "node:test";
import { mergeColumns } from "../src/chart-compare";
import { lonePoints, plotColumns } from "../src/chart-gaps";
import { Table } from "../src/charts-data";

const loss = { key: "loss", label: "loss", optimizer: "opt" };
const lr = { key: "lr", label: "lr", optimizer: "opt" };

test("a NaN or infinite step is a gap; a step a series has no value at is passed over", () => {
  const t = new Table("loss", "Loss", "steps", "number", "");
  [0.9, 0.5, Number.NaN, 0.3, Number.POSITIVE_INFINITY, 0.2].forEach((v, i) =>
    t.setStep(loss, i + 1, v),
  );
  t.setStep(lr, 1, 0.1);
  t.setStep(lr, 4, 0.05);
  assert.deepEqual(plotColumns(t, false, false), [
    [1, 2, 3, 4, 5, 6],
    [0.9, 0.5, null, 0.3, null, 0.2],
    [0.1, undefined, undefined, 0.05, undefined, undefined],
  ]);
});

test("on a log axis a value <= 0 is a gap: the 0 B between two graphs is not joined over", () => {
  const t = new Table("memory", "Graph memory", "time", "bytes", "");
  const mem = { key: "mem", label: "held", optimizer: null };
  [
    [0.1, 48_000],
    [0.2, 0],
    [0.3, 48_000],
    [0.4, 0],
  ].forEach(([x, v]) => t.addRow(mem, x, v));
  assert.deepEqual(plotColumns(t, true, false), [
    [0.1, 0.2, 0.3, 0.4],
    [48_000, null, 48_000, null],
  ]);
  assert.deepEqual(plotColumns(t, false, false)[1], [48_000, 0, 48_000, 0]);
  // drawn in slices (a long run): the floor of 0 is a gap on a log axis, the peak is not
  for (let i = 0; i < 400; i++) t.addRow(mem, 1 + i / 100, i % 2 ? 0 : 48_000);
  const [, peak, floor] = plotColumns(t, true, true);
  assert.ok(peak.every((v) => v === 48_000));
  assert.ok(floor.every((v) => v === null));
});

test("a compared run's rows are passed over in this run's columns, and its gaps stay gaps", () => {
  const ours = new Table("loss", "Loss", "steps", "number", "");
  const theirs = new Table("loss", "Loss", "steps", "number", "");
  [1, 0.5].forEach((v, i) => ours.setStep(loss, i + 1, v));
  [1, Number.NaN, 0.25].forEach((v, i) => theirs.setStep(loss, i + 1, v));
  assert.deepEqual(
    mergeColumns(
      plotColumns(ours, false, false),
      plotColumns(theirs, false, false),
    ),
    [
      [1, 2, 3],
      [1, 0.5, undefined],
      [1, null, 0.25],
    ],
  );
});

test("a value no line reaches is a dot: between two gaps, or the only value a series has", () => {
  // a graph held for an instant at each step, 0 B between (a log axis): every peak is lone
  assert.deepEqual(lonePoints([48, null, 48, null, 48], 0, 4), [0, 2, 4]);
  // a finite loss between NaN steps; the rows a series has no value at are passed over
  assert.deepEqual(lonePoints([0.9, 0.5, null, undefined, 0.3, undefined, null, 0.2, 0.1], 0, 8), [4]);
  assert.deepEqual(lonePoints([undefined, 7, undefined], 0, 2), [1]);
  // a line of two or more values has no dot; only rows in the window count
  assert.deepEqual(lonePoints([1, 2, 3], 0, 2), []);
  assert.deepEqual(lonePoints([48, null, 48, null, 48], 1, 3), [2]);
});
