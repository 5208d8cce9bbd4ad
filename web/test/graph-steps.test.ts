// What the graph shows at a stepper position, from real recorded traces.
import assert from "node:assert/strict";
import { test } from "node:test";
import { gradAt } from "../src/graph-steps";
import { loadModel as model } from "./traces";

test("accumulate_loop: a leaf's .grad grows 4, 8, 12 across calls, and reads None once the snippet clears it", () => {
  const m = model("accumulate_loop");
  assert.equal(m.backwards.length, 4);
  const x = [...m.tensors.values()].find((t) => t.name === "x");
  assert.ok(x);
  const first = (call: number) => m.backward(call)!.entries[0];
  const last = (call: number) => m.backward(call)!.entries.at(-1)!;
  assert.equal(gradAt(m, x.id, first(0)), "None");
  assert.equal(gradAt(m, x.id, last(0)), "4");
  assert.equal(gradAt(m, x.id, first(1)), "4");
  assert.equal(gradAt(m, x.id, last(2)), "12");
  // `x.grad = None` ran before the fourth call: it starts from None, not from 12
  assert.equal(gradAt(m, x.id, first(3)), "None");
  assert.equal(gradAt(m, x.id, last(3)), "4");
});

test("stepped: a leaf's versions, one an optimizer step, share one .grad history", () => {
  const m = model("stepped");
  const ws = [...m.tensors.values()].filter((t) => t.name === "w").map((t) => t.id);
  assert.equal(ws.length, 2); // as made, and as step 1 left it (read by the second forward)
  for (const id of ws) assert.deepEqual(m.versionsOf(id), ws);
  // each accumulation landed on the version its backward read; the history has both
  const { accs, final } = m.gradHistoryOf(ws[0]);
  assert.deepEqual(accs.map((a) => a.tensor), [ws[0], ws[1]]);
  assert.deepEqual(accs.map((a) => a.backward), [0, 1]);
  assert.equal(final?.id, ws[1]);
  assert.equal(m.gradHistoryOf(ws[1]).accs.length, 2);
  // a tensor no in-place change touched is its only version
  const loss = [...m.tensors.values()].find((t) => !t.ev.is_leaf)!;
  assert.deepEqual(m.versionsOf(loss.id), [loss.id]);
});
