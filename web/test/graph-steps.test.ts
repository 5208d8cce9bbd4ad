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
