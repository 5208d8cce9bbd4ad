// Readable labels for unnamed tensors, from real recorded traces.
import assert from "node:assert/strict";
import { test } from "node:test";
import { attrOf, callLabels, tensorExpr } from "../src/naming";
import { TraceModel } from "../src/trace-model";
import type { GradwalkTrace } from "../src/types/events";
import { loadTrace as load } from "./traces";

function labelsOfOps(trace: GradwalkTrace): Record<string, string> {
  const model = TraceModel.from(trace.events, trace.source);
  const labels: Record<string, string> = {};
  for (const op of model.ops) labels[op.name] = tensorExpr(model, op.outputs[0]);
  return labels;
}

test("cubic: the numbers an op was passed are written out (4*x, x**3)", () => {
  const labels = labelsOfOps(load("cubic"));
  assert.equal(labels.mul, "x * 4");
  assert.equal(labels.pow, "x**3");
});

test("a trace recorded before constants existed still reads", () => {
  const trace = load("cubic");
  for (const e of trace.events) if (e.type === "op") delete (e as { constants?: unknown }).constants;
  const labels = labelsOfOps(trace);
  assert.equal(labels.mul, "x * …");
  assert.equal(labels.pow, "x**3");
});

test("backward calls that read alike are numbered; a unique one keeps its label", () => {
  assert.deepEqual(callLabels(["loss.backward() · line 9", "y.backward() · line 4", "loss.backward() · line 9"]), [
    "#1 loss.backward() · line 9",
    "y.backward() · line 4",
    "#2 loss.backward() · line 9",
  ]);
});

test("an expression before .backward() or .grad is parenthesised as Python reads it", () => {
  for (const plain of ["loss", "fc1.weight", "t3", "tanh(h)", "sum(x * w)"]) assert.equal(attrOf(plain), plain);
  assert.equal(attrOf("x * x"), "(x * x)"); // `x * x.backward()` is x times x's backward
  assert.equal(attrOf("x**3"), "(x**3)");
  assert.equal(attrOf("−x"), "(−x)");
  assert.equal(attrOf("f(a) * g(b)"), "(f(a) * g(b))"); // ends in a call, is not one
});
