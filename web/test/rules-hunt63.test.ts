// The rule and arithmetic a card writes must be what PyTorch did (hunt 63: the gradients were
// right, the words in front of them were not), from a real recorded trace.
import assert from "node:assert/strict";
import { test } from "node:test";
import { tensorExpr } from "../src/naming";
import { explain } from "../src/rules";
import type { TraceModel } from "../src/trace-model";
import { loadModel } from "./traces";

/** The cards of every node named `name`, in walk order: the summary and each line. */
function cards(model: TraceModel, name: string): { summary: string; lines: string[] }[] {
  return model.timeline.flatMap((entry) => {
    if (entry.kind !== "node" || !entry.exec || model.node(entry.exec.node)?.name !== name) return [];
    const ex = explain(model, entry);
    return ex ? [{ summary: ex.summary, lines: ex.lines.map((l) => l.text) }] : [];
  });
}

test("torch.addmm's card scales by its beta and alpha, and sums only a bias that was broadcast", () => {
  const [scaled, bias] = cards(loadModel("card_numbers"), "AddmmBackward0");
  assert.equal(scaled.summary, "out = 0.5 · M + 2 · A @ B");
  assert.match(scaled.lines.join("\n"), /\/∂M = 0\.5 · grad = \[\[0\.5, 0\.5\]\]/);
  assert.match(scaled.lines.join("\n"), /\/∂A = 2 · grad @ Bᵀ = \[\[4, 6\]\]/);
  assert.match(scaled.lines.join("\n"), /\/∂B = 2 · Aᵀ @ grad = \[\[2, 2\], \[2, 2\]\]/);
  assert.match(bias.lines.join("\n"), /\/∂bias = grad summed over the batch rows = \[3, 3\]/);
});

test("a division that rounds has no gradient and reads as it rounds", () => {
  const model = loadModel("card_numbers");
  const [floor, trunc] = cards(model, "DivBackward1").length ? cards(model, "DivBackward1") : cards(model, "DivBackward2");
  assert.match(floor.summary, /rounding_mode='floor'.*no gradient/);
  assert.match(floor.lines[0], /= 0 \(rounding has slope 0\) = 0$/);
  assert.ok(floor.lines[0].includes("x // 2") && !floor.lines[0].includes("x / 2"), floor.lines[0]);
  assert.match(trunc.summary, /rounding_mode='trunc'/);
  const divs = model.ops.filter((op) => op.name === "div").map((op) => tensorExpr(model, op.outputs[0]));
  assert.deepEqual(divs, ["x // 2", "trunc(x / 2)"]);
});

test("cross-entropy with an ignored target divides by the rows counted", () => {
  const [nll] = cards(loadModel("card_numbers"), "NllLossBackward0");
  assert.match(nll.lines[0], /ignore_index \(-100\) \(N = 2 of 3 rows\)/);
});

test("a negative number after a minus is bracketed (cos, sub's alpha)", () => {
  const model = loadModel("card_numbers");
  const [cos] = cards(model, "CosBackward0");
  assert.match(cos.lines[0], /= −grad · sin\(c\) = −\(−2\) × 0\.6442 = 1\.288/);
  const [sub] = cards(model, "SubBackward0");
  assert.match(sub.lines[1], /= −\(−2\) · grad = −\(−2\) × 2 = 4$/);
  const made = model.ops.find((op) => op.name === "sub");
  assert.equal(made && tensorExpr(model, made.outputs[0]), "a − (−2) * b");
});

test("x ** 1 passes its gradient on as it came", () => {
  const [pow] = cards(loadModel("card_numbers"), "PowBackward0");
  assert.equal(pow.summary, "out = a**1 · power rule");
  assert.match(pow.lines[0], /= grad = 5$/);
});
