// Readable labels for unnamed tensors, from real recorded traces.
import assert from "node:assert/strict";
import { test } from "node:test";
import { argumentsText, attrOf, backwardCallText, callLabels, elementSetText, listed, madeKindText, madeShapesText, numberText, outputsText, subscriptText, TENSORS_LISTED, tensorExpr } from "../src/naming";
import { exprOf } from "../src/tensor-expr";
import { TraceModel } from "../src/trace-model";
import type { GradwalkTrace } from "../src/types/events";
import { loadTrace as load, loadModel } from "./traces";

function labelsOfOps(trace: GradwalkTrace): Record<string, string> {
  const model = TraceModel.from(trace.events, trace.source);
  const labels: Record<string, string> = {};
  for (const op of model.ops) labels[op.name] = tensorExpr(model, op.outputs[0]);
  return labels;
}

test("cubic: the numbers an op was passed are written out, in the snippet's order (4*x, x**3)", () => {
  const labels = labelsOfOps(load("cubic"));
  assert.equal(labels.rmul, "4 * x");
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
  assert.equal(labels.rmul, "x * …");
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

/** The label of the output of the `nth` op named `name` on the source line that reads `line`. */
function labelOnLine(model: TraceModel, line: string, name: string, nth = 0): string {
  const lineNo = model.source.split("\n").indexOf(line) + 1;
  const op = model.ops.filter((o) => o.line === lineNo && o.name === name)[nth];
  assert.ok(op, `no ${name} op on line ${JSON.stringify(line)}`);
  return tensorExpr(model, op.outputs[0]);
}

test("a subscript reads as written: a number key, a mask, a slice (kept as text, or from its source line)", () => {
  const model = loadModel("learner_labels");
  assert.equal(labelOnLine(model, "x[:2] * 1", "getitem"), "x[:2]");
  assert.equal(labelOnLine(model, "x[:2] * 1", "mul"), "x[:2] * 1");
  assert.equal(labelOnLine(model, "x[1] * 1", "getitem"), "x[1]");
  assert.equal(labelOnLine(model, "x[mask] * 1", "getitem"), "x[mask]");
  // two keys on one line: each from the text the trace keeps of its slice (the source line
  // cannot tell them apart)
  assert.equal(labelOnLine(model, "x[:2] + x[2:4]", "add"), "x[:2] + x[2:4]");
});

test("torch.sub(x, w, alpha=2) reads with its alpha, not as x − w", () => {
  const model = loadModel("learner_labels");
  assert.equal(labelOnLine(model, "torch.sub(x, w, alpha=2) * 1", "sub"), "x − 2 * w");
  assert.equal(labelOnLine(model, "torch.sub(x, w, alpha=2) * 1", "mul"), "(x − 2 * w) * 1");
});

test("an unnamed tensor made from numbers reads as the call that made it, not t<id>", () => {
  const model = loadModel("learner_labels");
  assert.equal(labelOnLine(model, "torch.arange(5.) * 1", "arange"), "arange(5)");
  assert.equal(labelOnLine(model, "torch.zeros(3) + 1", "add"), "zeros(3) + 1");
});

test("an op's outputs read apart: max(dim=0) gives .values and .indices", () => {
  const model = loadModel("learner_labels");
  const line = "x.view(2, 3).max(dim=0).values * 1";
  assert.equal(labelOnLine(model, line, "view"), "view(x, 2, 3)"); // the numbers it was passed
  const max = model.ops.find((o) => o.name === "max")!;
  assert.deepEqual(
    max.outputs.map((id) => tensorExpr(model, id)),
    ["max(…, dim=0).values", "max(…, dim=0).indices"],
  );
  assert.equal(labelOnLine(model, line, "mul"), "max(…).values * 1"); // the keyword gives way first
});

test("operators read by precedence (x * 2 + 1, a // 2), parenthesised only where Python needs it", () => {
  const model = loadModel("learner_labels");
  const line = "(x * 2 + 1) * (x + 1) // 2";
  assert.equal(labelOnLine(model, line, "add"), "x * 2 + 1");
  assert.equal(labelOnLine(model, line, "mul", 1), "(x * 2 + 1) * (x + 1)");
  assert.equal(labelOnLine(model, line, "floordiv"), "(… + 1) * (x + 1) // 2");
});

test("a chain past the naming depth leaves operands out (…), never t<id>", () => {
  const model = loadModel("learner_labels");
  const line = "(((x * 2 + 1).exp() - 3).sum() / 4).sqrt()";
  assert.equal(labelOnLine(model, line, "exp"), "exp(x * 2 + 1)");
  assert.equal(labelOnLine(model, line, "sum"), "sum(exp(… + 1) − 3)");
  assert.equal(labelOnLine(model, line, "sqrt"), "sqrt(sum(… − 3) / 4)");
  for (const op of model.ops) for (const id of op.outputs) assert.doesNotMatch(tensorExpr(model, id), /\bt\d+\b/);
});

test("a transpose read as an attribute is an op of its own (w.T, w.mT), not an unnamed t<id>", () => {
  const model = loadModel("transposes");
  const transposes = model.ops.filter((op) => op.name === "T" || op.name === "mT");
  assert.deepEqual(
    transposes.map((op) => tensorExpr(model, op.outputs[0])),
    ["w.T", "w.mT"],
  );
  assert.equal(labelOnLine(model, "(X @ w.T).sum(dim=1) * 1", "matmul"), "X @ w.T");
});

test("a comparison reads as the operator the snippet wrote (X > 0), not gt(X, 0)", () => {
  const model = loadModel("transposes");
  assert.equal(labelOnLine(model, "(X > 0) * 1", "gt"), "X > 0");
  assert.equal(labelOnLine(model, "(X > 0) * 1", "mul"), "(X > 0) * 1");
});

test("numbers passed by keyword are written out as the call wrote them (dim=1), and give way before operands do", () => {
  const model = loadModel("transposes");
  assert.equal(labelOnLine(model, "(X @ w.T).sum(dim=1) * 1", "sum"), "sum(X @ w.T, dim=1)");
  assert.equal(labelOnLine(model, "torch.softmax(X @ w.mT, dim=-1) * 1", "softmax"), "softmax(X @ w.mT)");
});

test("a variable rebound from itself on several lines is counted through them all", () => {
  const model = loadModel("rebound_lines");
  const made = (name: string) => model.ops.filter((op) => op.name === name).map((op) => tensorExpr(model, op.outputs[0]));
  // h = x * 2; h = h + 1; h = torch.tanh(h): each read `h`
  assert.deepEqual([...made("mul").slice(0, 1), ...made("add").slice(0, 1), ...made("tanh")], ["h₁", "h₂", "h₃"]);
  // g = x * 1, then a loop body of two lines: each line counted from 1, two tensors read `g₁`
  assert.deepEqual([...made("matmul"), ...made("sigmoid")].sort(), ["g₂", "g₃", "g₄", "g₅"]);
});

test("a tape row leaves out a True/False whose neighbours it cannot show, and keeps one it can", () => {
  const model = loadModel("positional_flags");
  // model.weight.to('cpu', None, False), as Module.to moves each parameter: no bare "False"
  // after the None the trace keeps no text of; model.to('cpu') itself is one op of the
  // module's tensors
  const moves = model.ops.filter((op) => op.name === "to");
  assert.deepEqual(moves.map((op) => op.api), ["Module.to", "Tensor.to"]);
  assert.deepEqual(moves.map((op) => argumentsText(model, op)), ["model.weight, model.bias, 'cpu'", "model.weight, 'cpu'"]);
  // handed back as they were: said once, not named again after the arrow
  assert.deepEqual(moves.map((op) => outputsText(model, op)), ["the same 2, unchanged", "model.weight"]);
  const sum = model.ops.find((op) => op.name === "sum")!;
  assert.equal(argumentsText(model, sum), "x, 0, True");
});

test("a computed float reads to 6 significant digits in labels and tape rows; written ones as written", () => {
  // torch.linspace(-math.pi, math.pi, 2000) filled a narrow tape column with 3.141592653589793
  assert.equal(numberText(-Math.PI), "-3.14159");
  assert.equal(numberText(1 / 3), "0.333333");
  assert.deepEqual([0.1, 1e-8, 2000, 0.05, 1.01, 123456789].map((v) => numberText(v)), ["0.1", "1e-8", "2000", "0.05", "1.01", "123456789"]);
  assert.equal(numberText(Math.PI, 17), "3.141592653589793"); // exactly, where there is room
  assert.deepEqual([true, NaN, -Infinity].map((v) => numberText(v)), ["True", "nan", "-inf"]);
});

test("a tape row names up to four tensors and counts the rest: clip_grad_norm_'s six gradients", () => {
  const model = loadModel("clipped");
  const clip = model.ops.find((op) => op.name === "clip_grad_norm");
  assert.ok(clip);
  assert.equal(clip.inputs.length, 6);
  assert.equal(TENSORS_LISTED, 4);
  assert.equal(argumentsText(model, clip, TENSORS_LISTED), "net.0.weight.grad, net.0.bias.grad, net.2.weight.grad, … +3 more, 1");
  // whole where there is room (the row's hover text)
  assert.equal(argumentsText(model, clip).split(", ").length, 7);
  assert.deepEqual(listed(["a", "b", "c", "d"]), ["a", "b", "c", "d"]);
  assert.deepEqual(listed(["a", "b", "c", "d", "e"]), ["a", "b", "c", "… +2 more"]);
  // its outputs, the norm and the gradients as new versions, are named and counted
  assert.equal(outputsText(model, clip, TENSORS_LISTED), "clip_grad_norm(…)[0], net.0.weight.grad, net.0.bias.grad, … +4 more");
});

test("a tape row's shape is that of what the op made, not of the inputs it hands on", () => {
  const model = loadModel("running_stats");
  const shapes = Object.fromEntries(model.ops.map((op) => [op.name, madeShapesText(model, op)]));
  // batch_norm's outputs: its result, then new versions of running_mean and running_var
  assert.equal(model.ops.find((op) => op.name === "batch_norm")!.outputs.length, 3);
  assert.equal(shapes.batch_norm, "[4×2]");
  assert.equal(shapes.add, "scalar"); // num_batches_tracked += 1, in place: its own new version
  assert.equal(shapes.double, "5 tensors"); // all the module's tensors, four converted, one handed back
});

test("arguments that are neither tensors nor numbers read as the call wrote them, in rows and in names", () => {
  const model = loadModel("arguments");
  const rows = model.ops.map((op) => [`L${op.line} ${op.name}`, op.name === "setitem" ? elementSetText(model, op) : argumentsText(model, op)]);
  assert.deepEqual(rows, [
    ["L2 arange", "8, requires_grad=True"],
    ["L2 reshape", "arange(8), (2, 4)"],
    ["L3 einsum", "'ij,kj->ik', x, x"],
    ["L4 detach", "x"],
    ["L4 mul", "detach(x), 0"],
    ["L4 mse_loss", "x, detach(x) * 0, reduction='sum'"],
    ["L5 getitem", "x, (:, 0)"],
    ["L5 mul", "x[:, 0], 2"],
    ["L6 getitem", "x, 0:1"],
    ["L7 pad", "x, (1, 1)"],
    ["L8 mul", "x, 1"],
    ["L10 setitem", "y[:, 1:3] = 0"],
    ["L11 to", "x, torch.float64"],
    ["L12 sum", "x, dim=1, dtype=torch.float64, keepdim=True"],
    ["L13 view", "x, 1, 1, 2, 4"],
    ["L13 view", "x, 1, 1, 2, 4"],
    ["L13 getitem", "view(x, 1, 1, 2, 4), (:, :, :, :1)"],
    ["L13 conv2d", "view(x, 1, 1, 2, 4), …[:, :, :, :1], stride=(2, 1), padding=1"],
    ["L14 tensor", "[[0], [3]]"],
    ["L15 gather", "x, 1, idx"],
    ["L16 ones", "4"],
    ["L17 layer_norm", "x, (4,), weight=w4"],
  ]);
  // the names of unnamed tensors write the call out, each argument in its place
  const named = Object.fromEntries(model.ops.map((op) => [`L${op.line} ${op.name}`, tensorExpr(model, op.outputs[0])]));
  assert.equal(named["L3 einsum"], "e");
  assert.equal(tensorExpr(model, model.ops.find((op) => op.name === "einsum")!.outputs[0]), "e");
  assert.equal(named["L5 getitem"], "x[:, 0]");
  assert.equal(named["L6 getitem"], "r");
  assert.equal(named["L4 detach"], "detach(x)");
  // a getitem row writes the subscript: x[:, 0], x[0:1]
  const gets = model.ops.filter((op) => op.name === "getitem");
  assert.deepEqual(gets.map((op) => subscriptText(model, op)), ["x[:, 0]", "x[0:1]", "view(x, 1, 1, 2, 4)[:, :, :, :1]"]);
  const masked = loadModel("learner_labels").ops.find((op) => op.name === "getitem" && op.inputs.length === 2);
  assert.ok(masked);
  assert.equal(subscriptText(loadModel("learner_labels"), masked), "x[mask]");
});

test("an unnamed tensor's name passes its call's tensors where the call did: by keyword, after a number", () => {
  const model = loadModel("placed_names");
  const made = model.ops.filter((op) => op.name === "mul").map((op) => exprOf(model, op.inputs[0], 2)?.text);
  // layer_norm's weight read as its third positional argument, the eps PyTorch would take it for
  assert.deepEqual(made, ["layer_norm(x, (4,), weight=w4)", "gather(x, 1, idx)", "x @ x.T"]);
});

test("a subscript whose key holds tensors reads as written, in rows and in names", () => {
  const model = loadModel("subscript_keys");
  const rows = model.ops
    .filter((op) => op.name === "getitem" || op.name === "setitem")
    .map((op) => [`L${op.line} ${op.name}`, op.name === "setitem" ? elementSetText(model, op) : subscriptText(model, op)]);
  assert.deepEqual(rows, [
    ["L4 getitem", "probs[range(4), Y]"], // read `probs, Y`, as if it were probs[Y]
    ["L5 getitem", "probs[arange(4), Y]"],
    ["L6 getitem", "probs[Y % 4]"],
    ["L7 getitem", "probs[probs > 0.5]"],
    ["L8 getitem", "probs[0, Y]"], // read `probs, Y` too
    ["L8 getitem", "probs[1, Y]"],
    ["L10 setitem", "z[range(4), Y] = 1"],
    ["L11 getitem", "probs[:, 0]"],
    ["L11 setitem", "z[Y % 4, 0] = detach(probs[:, 0])"],
  ]);
  // an unnamed tensor's name too, where the line has two keys for one tensor (read from the source line, `probs[…]`)
  const sum = model.ops.find((op) => op.name === "add")!;
  assert.equal(tensorExpr(model, sum.outputs[0]), "f");
  assert.equal(tensorExpr(model, sum.inputs[0]), "probs[0, Y]");
  assert.equal(tensorExpr(model, sum.inputs[1]), "probs[1, Y]");
  // a trace older than the key's text: the row names the tensors, the name reads the source line
  for (const op of model.ops) if (op.name === "getitem") op.arguments = [];
  assert.equal(subscriptText(model, model.ops.find((op) => op.name === "getitem")!), null);
});

test("a tape row names the dtype an op changed to, and a factory's dtype other than float32", () => {
  const model = loadModel("dtypes");
  const kinds = model.ops.map((op) => [`L${op.line} ${op.name}`, madeKindText(model, op)]);
  assert.deepEqual(kinds, [
    ["L2 arange", ""], // float32, the default
    ["L3 to", "float64"],
    ["L4 zeros", "float64"],
    ["L5 double", ""], // y is float64 already: handed back
    ["L5 mul", ""],
    ["L6 sum", "float32"],
    ["L7 long", "int64"],
    ["L8 randint", "int64"],
    ["L9 gt", "bool"],
    ["L10 ones", ""],
    ["L10 add", ""],
  ]);
});
