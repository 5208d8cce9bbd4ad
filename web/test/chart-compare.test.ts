// Two runs on one chart: their rows merged on one x column, and the change between their
// code in a few words.
import assert from "node:assert/strict";
import { test } from "node:test";
import { describeChange, mergeColumns, sourceChange } from "../src/chart-compare";
import type { Columns } from "../src/chart-gaps";

test("two runs' rows merge on the union of their x values, each run undefined where it has no row", () => {
  const ours: Columns = [[1, 2, 3], [0.9, 0.5, 0.25]];
  const theirs: Columns = [[1, 2, 3, 4, 5], [1.0, 0.8, 0.6, 0.4, 0.2]];
  assert.deepEqual(mergeColumns(ours, theirs), [
    [1, 2, 3, 4, 5],
    [0.9, 0.5, 0.25, undefined, undefined],
    [1.0, 0.8, 0.6, 0.4, 0.2],
  ]);
  // seconds into each run: interleaved, two columns a side (a peak and a floor)
  const a: Columns = [[0.1, 0.3], [96, 96], [0, 0]];
  const b: Columns = [[0.0, 0.3, 0.5], [10, 11, 12], [20, 30, 40]];
  assert.deepEqual(mergeColumns(a, b), [
    [0.0, 0.1, 0.3, 0.5],
    [undefined, 96, 96, undefined],
    [undefined, 0, 0, undefined],
    [10, undefined, 11, 12],
    [20, undefined, 30, 40],
  ]);
  assert.deepEqual(mergeColumns([[], []], [[2], [5]]), [[2], [undefined], [5]]);
});

test("an x both runs have twice pairs up row by row, in order", () => {
  assert.deepEqual(mergeColumns([[1, 1, 2], [7, 8, 9]], [[1, 2], [3, 4]]), [
    [1, 1, 2],
    [7, 8, 9],
    [3, undefined, 4],
  ]);
});

test("the change is the first changed line, narrowed to its words", () => {
  const before = "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\nfor epoch in range(400):\n    pass\n";
  const after = before.replace("lr=0.05", "lr=0.5");
  assert.deepEqual(sourceChange(before, after), { kind: "changed", line: 2, before: "lr=0.05", after: "lr=0.5", more: 0 });
  assert.equal(describeChange(sourceChange(before, after)), "line 2: lr=0.05 → lr=0.5");
  const fixed = "total = 0\nfor b in range(20):\n    total += loss  # keeps the graph\n";
  assert.deepEqual(sourceChange(fixed, fixed.replace("total += loss ", "total += loss.item() ")), {
    kind: "changed",
    line: 3,
    before: "loss",
    after: "loss.item()",
    more: 0,
  });
});

test("lines added, removed or changed further down are counted; the same code says so", () => {
  const before = "a = 1\nb = 2\nc = 3\n";
  assert.deepEqual(sourceChange(before, "a = 1\nb = 20\nc = 30\nd = 4\n"), { kind: "changed", line: 2, before: "2", after: "20", more: 2 });
  assert.equal(describeChange(sourceChange(before, "a = 1\nb = 20\nc = 30\nd = 4\n")), "line 2: 2 → 20 (and 2 more lines)");
  // a line removed is said so (it read "b = 2 → c = 3", a change c = 3 never had)
  assert.deepEqual(sourceChange(before, "a = 1\nc = 3\n"), { kind: "removed", line: 2, before: "b = 2", after: "", more: 0 });
  assert.equal(describeChange(sourceChange(before, "a = 1\nc = 3\n")), "line 2 removed: b = 2");
  assert.equal(sourceChange(before, `${before}\n\n`), null);
  assert.equal(describeChange(null), "the same code");
  const long = `x = ${"1 + ".repeat(30)}1`;
  const change = sourceChange("x = 0", long)!;
  assert.equal(change.after.length, 40);
  assert.ok(change.after.endsWith("…"));
});

test("a line added or removed near the top does not read as every line below it changed", () => {
  const rent = "import torch\nimport torch.nn as nn\n\nmodel = nn.Linear(1, 1)\nfor epoch in range(400):\n    opt.step()\nprint(model.weight)\n";
  const logged = rent.replace("import torch\n", "import torch\nimport gradwalk\n").replace("    opt.step()\n", "    opt.step()\n    gradwalk.log('w', model.weight.item())\n");
  // the run before logged a metric; this one does not
  assert.deepEqual(sourceChange(logged, rent), { kind: "removed", line: 2, before: "import gradwalk", after: "", more: 1 });
  assert.equal(describeChange(sourceChange(logged, rent)), "line 2 removed: import gradwalk (and 1 more line)");
  assert.deepEqual(sourceChange(rent, logged), { kind: "added", line: 2, before: "", after: "import gradwalk", more: 1 });
  assert.equal(describeChange(sourceChange(rent, logged)), "line 2 added: import gradwalk (and 1 more line)");
  // a change further down, after a line added above it: the added line first, the change counted
  const both = logged.replace("range(400)", "range(40)");
  assert.deepEqual(sourceChange(rent, both), { kind: "added", line: 2, before: "", after: "import gradwalk", more: 2 });
  assert.equal(describeChange(sourceChange("a\n\nb\n", "a\nb\n")), "line 2 removed: (a blank line)");
});
