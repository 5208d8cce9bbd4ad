// Labels of the nodes the layers a deep-learning course teaches make, from real recorded traces.
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildGraph } from "../src/graph-build";
import { edgeTargetLabel, tensorExpr } from "../src/naming";
import { explain } from "../src/rules";
import type { TraceModel } from "../src/trace-model";
import { loadModel } from "./traces";

/** Each grad_fn node's graph label, by node id. */
function nodeLabels(model: TraceModel): Map<number, string> {
  const graph = buildGraph(model, { showSaved: false, collapsed: new Set() });
  return new Map(graph.nodes.filter((n) => n.kind === "op").map((n) => [n.node!, n.label]));
}

const named = (model: TraceModel, name: string) => [...model.nodes.values()].filter((n) => n.name === name);

test("a layer applied twice: the inner call's output reads shared(v), not t<id>", () => {
  const model = loadModel("shared_layer");
  const [inner, outer] = model.ops.filter((op) => op.name === "linear");
  assert.equal(tensorExpr(model, inner.outputs[0]), "shared(v)");
  assert.equal(tensorExpr(model, outer.outputs[0]), "z");
});

test("cross-entropy's log_softmax node says what it computes, in the graph and on the stepper", () => {
  const model = loadModel("shared_layer");
  const [logSoftmax] = named(model, "LogSoftmaxBackward0");
  const [nll] = named(model, "NllLossBackward0");
  assert.equal(nodeLabels(model).get(logSoftmax.id), "LogSoftmaxBackward0\nlog_softmax(z) · [2×4]");
  assert.equal(edgeTargetLabel(model, nll.id, 0), "log_softmax(z)");
});

test("a transformer layer's residual adds and activations read through their modules, not t<id>", () => {
  const model = loadModel("transformer");
  const labels = nodeLabels(model);
  // the layer's own nodes, not those inside self-attention's one op
  const second = (name: string) =>
    named(model, name)
      .filter((n) => n.tensor !== null)
      .map((n) => labels.get(n.id)!.split("\n")[1]);
  assert.deepEqual(second("AddBackward0"), ["x + self_attn(…) · [2×3×8]", "norm1(…) + linear2(…) · [2×3×8]"]);
  assert.deepEqual(second("ReluBackward0"), ["relu(linear1(…)) · [2×3×16]"]);
  assert.deepEqual(second("PowBackward0"), ["norm2(…)**2 · [2×3×8]"]);
  const attention = model.ops.find((op) => op.name === "multi_head_attention_forward")!;
  assert.equal(tensorExpr(model, attention.outputs[0]), "multi_head_attention_forward(…)");
});

test("a gradient into a node made inside one op is named as the graph labels that node, not `TransposeBackward0's output`", () => {
  const model = loadModel("transformer");
  const labels = nodeLabels(model);
  let inner = 0;
  for (const node of model.nodes.values()) {
    node.edges.forEach((edge, slot) => {
      const target = edge.node === null ? undefined : model.node(edge.node);
      if (!target || target.tensor !== null || (target.grad_shapes?.length ?? 1) > 1) return;
      const label = edgeTargetLabel(model, node.id, slot);
      assert.doesNotMatch(label, /Backward\d*'s output/, `${node.name} → ${target.name}`);
      // the second line of the target's graph label, its shape left off: `#2 transpose(…)`
      const second = labels.get(target.id)?.split("\n")[1]?.replace(/ · \[[^\]]*\]$/, "");
      if (second !== undefined && !target.name.startsWith("TBackward")) assert.equal(label, second, target.name);
      inner += 1;
    });
  }
  // self-attention's one op makes its transposes, views and products without tensors of their own
  assert.ok(inner >= 10, `${inner} edges into nodes made inside one op`);
});

test("a GRU's gates, made inside one op, read as the calls they are, counted in order", () => {
  const model = loadModel("gru");
  const labels = nodeLabels(model);
  for (const [name, call] of [["SigmoidBackward0", "sigmoid"], ["TanhBackward0", "tanh"]]) {
    const gates = named(model, name);
    assert.ok(gates.length >= 3, name);
    // each step's gate told apart from the others: #1, #2, … in the order the op made them
    const texts = [...gates].sort((a, b) => a.id - b.id).map((gate) => labels.get(gate.id)!);
    assert.deepEqual(texts, texts.map((_, i) => `${name}\n#${i + 1} ${call}(…) · [2×4]`));
  }
});

test("a dim passed as -1 reads -1 on the stepper, not PyTorch's unsigned 18446744073709551615", () => {
  const model = loadModel("negative_dims");
  const texts: Record<string, string> = {};
  for (const entry of model.backwards[0].entries) {
    const node = entry.exec ? model.node(entry.exec.node) : undefined;
    const card = entry.exec ? explain(model, entry) : null;
    if (node && card) texts[node.name] = [card.summary, ...card.lines.map((l) => l.text)].join("\n");
  }
  for (const [name, text] of Object.entries(texts)) assert.doesNotMatch(text, /\d{19}/, `${name}: ${text}`);
  assert.match(texts.SoftmaxBackward0, /Σ over dim -1/);
  assert.match(texts.LogSoftmaxBackward0, /Σ over dim -1/);
  assert.match(texts.LogsumexpBackward0, /over dim -1/);
  assert.match(texts.CumsumBackward0, /cumsum\(x, dim=-1\)/);
  assert.match(texts.MaxBackward0, /dim=-1/);
  assert.match(texts.VarBackward0, /dim=-1/);
});

test("nn.LSTM's one fused node has its rule: each weight's gradient summed over the time steps", () => {
  const model = loadModel("lstm");
  const out = model.ops.find((op) => op.name === "lstm")!;
  const layer = model.node(model.tensor(out.outputs[0])!.ev.grad_fn!)!;
  const entry = model.backwards[0].entries.find((e) => e.exec?.node === layer.id)!;
  const card = explain(model, entry)!;
  assert.doesNotMatch(card.summary, /no rule/, card.summary);
  assert.match(card.summary, /LSTM layer over every time step/);
  const lines = card.lines.map((l) => l.text);
  assert.equal(lines.length, 4); // W_ih, W_hh, b_ih, b_hh: x and h₀, c₀ need no gradient
  assert.match(lines[0], /^∂\(sum\(out\)\)\/∂lstm\.weight_ih_l0 = Σ over time steps of \(gate grads\)ₜᵀ @ xₜ = /);
  assert.match(lines[1], /∂lstm\.weight_hh_l0 = Σ over time steps of \(gate grads\)ₜᵀ @ hₜ₋₁ = /);
});

test("cross-entropy's NllLoss card divides by N only for a mean, by the rows or their total weight", () => {
  const model = loadModel("nll_reductions");
  const cards = model.backwards.map((call) => {
    const entry = call.entries.find((e) => e.exec && model.node(e.exec.node)?.name === "NllLossBackward0")!;
    const card = explain(model, entry)!;
    return `${card.summary}\n${card.lines[0].text}`;
  });
  const [mean, sum, none, weighted] = cards;
  assert.match(mean, /^out = −mean .*\n.* = −grad \/ N at each row's target class, 0 elsewhere \(N = 3 rows\) = /);
  assert.match(sum, /^out = −sum .*\n.* = −grad at each row's target class, 0 elsewhere = /);
  assert.match(none, /one loss a row.*\n.* = −\(each row's grad\) at its target class, 0 elsewhere = /);
  assert.match(weighted, /^out = −weighted mean .*\n.* = −grad · weight\[target\] \/ N .*\(N = Σ weight\[target\]\) = /);
});

test("a node with several outputs is labelled with all it made (q, k, v = x.chunk(3)), not its last", () => {
  const model = loadModel("qkv_chunk");
  const labels = nodeLabels(model);
  const splits = [...named(model, "SplitBackward0"), ...named(model, "SplitWithSizesBackward0")];
  assert.deepEqual(
    splits.map((n) => labels.get(n.id)),
    ["SplitBackward0\nq, k, v · 3 × [2×4×6]", "SplitWithSizesBackward0\nhead, tail · [2×1×6], [2×3×6]"],
  );
});
