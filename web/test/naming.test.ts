// Readable labels for unnamed tensors, from real recorded traces.
import assert from "node:assert/strict";
import { test } from "node:test";
import { attrOf, backwardCallText, callLabels, elementSetText, tensorExpr } from "../src/naming";
import { TraceModel } from "../src/trace-model";
import type { GradwalkTrace } from "../src/types/events";
import { loadTrace as load, loadModel } from "./traces";

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

test("an element set reads as it was written, not as its arguments", () => {
  const model = loadModel("element_sets");
  const sets = model.ops.filter((op) => op.name === "setitem");
  assert.deepEqual(
    sets.map((op) => elementSetText(model, op)),
    ["y[0] = 0", "y[mask] = v"],
  );
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

test("an unnamed module output reads as the module call it came out of (net.fc1(…))", () => {
  const model = TraceModel.from(load("small_net").events);
  const [fc1, fc2] = model.ops.filter((op) => op.name === "linear");
  const relu = model.ops.find((op) => op.name === "relu")!;
  assert.equal(fc1.module_path, "net.fc1");
  assert.equal(tensorExpr(model, fc1.outputs[0]), "net.fc1(…)");
  assert.equal(tensorExpr(model, relu.outputs[0]), "relu(net.fc1(…))"); // an expression when one fits
  assert.equal(tensorExpr(model, fc2.outputs[0]), "out"); // a variable's name wins
  // the input handed from the snippet into net.fc1 came out of no module
  assert.equal(model.moduleOutputOf(fc1.inputs[0]), undefined);
});

test("a call of torch.autograd.grad reads as one, not as y.backward()", () => {
  const grad = TraceModel.from(load("autograd_grad").events);
  assert.equal(grad.backwards[0].start.api, "autograd.grad");
  assert.equal(backwardCallText(grad, 0), "torch.autograd.grad(y, …)");
  assert.equal(backwardCallText(TraceModel.from(load("cubic").events), 0), "y.backward()");
});
