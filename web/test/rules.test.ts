// The chain-rule text for the worked examples, from real recorded traces.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { type Explanation, explain, hasRule } from "../src/rules";
import { TraceModel } from "../src/trace-model";
import type { GradwalkTrace } from "../src/types/events";

const dir = process.env.GRADWALK_TRACES ?? "/tmp";

function load(name: string): TraceModel {
  const trace = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as GradwalkTrace;
  return TraceModel.from(trace.events, trace.source);
}

function texts(model: TraceModel): string[][] {
  return model.timeline.map((entry) => {
    const ex = explain(model, entry);
    return ex ? [ex.incoming, ...ex.lines.map((l) => l.text), ...ex.accumulations] : ["end"];
  });
}

test("product: the product rule with the real numbers", () => {
  const all = texts(load("product")).flat();
  assert.ok(all.includes("∂c/∂a = grad · b = 1 × 3 = 3"), all.join("\n"));
  assert.ok(all.includes("∂c/∂b = grad · a = 1 × 2 = 2"), all.join("\n"));
  assert.ok(all.includes("a.grad: None → 3"), all.join("\n"));
  assert.ok(all.includes("b.grad: None → 8"), all.join("\n"));
});

test("a loss's unnamed target reads `target` where the snippet has a y of its own; a subscript needs no brackets", () => {
  const model = load("mse_own_y");
  const entry = model.timeline.find((e) => e.kind === "node" && e.exec && model.node(e.exec.node)?.name === "MseLossBackward0");
  assert.ok(entry);
  const ex = explain(model, entry);
  assert.equal(ex?.summary, "out = sum((y[:, 0:2] − target)²)");
  assert.deepEqual(ex?.lines.map((l) => l.text), ["∂loss/∂(y[:, 0:2]) = grad · 2(y[:, 0:2] − target) = [[−3, −5]]"]);
  // with no y of its own, the textbook y (cubic has none; the rent regression's target is named y)
  assert.ok(!texts(load("cubic")).flat().some((t) => t.includes("target")));
});

test("an element set: what it overwrote gets no gradient", () => {
  const model = load("element_sets");
  const byNode = new Map(model.timeline.map((entry) => [entry.kind === "node" && entry.exec ? model.node(entry.exec.node)?.name : "end", explain(model, entry)]));
  assert.match(byNode.get("CopySlices")?.summary ?? "", /overwritten in place/);
  assert.deepEqual(byNode.get("CopySlices")?.lines.map((l) => l.text), ["∂(sum(y))/∂y = grad with the overwritten elements set to 0 = [0, 0, 1, 1]"]);
  assert.deepEqual(byNode.get("IndexPutBackward0")?.lines.map((l) => l.text), ["∂(sum(y))/∂y = grad with a[idx] set to 0 = [1, 0, 1, 1]"]);
});

test("the nodes of layers and losses each have their rule", () => {
  const model = load("layers");
  const names = [...new Set(model.timeline.flatMap((e) => (e.kind === "node" && e.exec ? [model.node(e.exec.node)?.name ?? ""] : [])))];
  for (const name of ["ConvolutionBackward0", "NativeBatchNormBackward0", "MaxPool2DWithIndicesBackward0", "NativeLayerNormBackward0", "GeluBackward0", "LogSoftmaxBackward0", "NllLossBackward0"]) {
    assert.ok(names.includes(name), `${name} is not in the trace: ${names.join(" ")}`);
  }
  assert.deepEqual(names.filter((n) => n !== "AccumulateGrad" && !hasRule(n)), []);
  const nll = model.timeline.find((e) => e.kind === "node" && e.exec && model.node(e.exec.node)?.name === "NllLossBackward0");
  const card = nll && explain(model, nll);
  assert.match(card?.summary ?? "", /target class/);
  assert.match(card?.lines[0]?.text ?? "", /= −grad \/ N at each row's target class, 0 elsewhere \(N = 3 rows\)/);
});

test("cubic: power rule, wrapped numbers, accumulation", () => {
  const all = texts(load("cubic")).flat();
  assert.ok(all.includes("∂y/∂x = grad · 3 · x² = 1 × 3 × 2.5² = 18.75"), all.join("\n"));
  assert.ok(all.includes("∂y/∂x = grad · 4 = −1 × 4 = −4"), all.join("\n"));
  assert.ok(all.includes("x.grad: None → 14.75"), all.join("\n"));
});

test("cubic twice: the second backward accumulates", () => {
  const model = load("cubic_twice");
  assert.equal(model.backwards.length, 2);
  const all = texts(model).flat();
  assert.ok(all.includes("x.grad: 14.75 + 14.75 → 29.5"), all.join("\n"));
});

test("timeline: one entry per executed node plus an end per call", () => {
  const model = load("cubic");
  assert.deepEqual(
    model.timeline.map((e) => e.kind),
    ["node", "node", "node", "node", "end"],
  );
  assert.equal(model.timeline[4].finished?.graph_freed, true);
});

test("ingest ignores replayed events", () => {
  const model = load("cubic");
  const n = model.events.length;
  model.ingest(model.events.slice(-3));
  assert.equal(model.events.length, n);
});

test("small_net: a linear layer's rule names its inputs and its transposed weight", () => {
  const all = texts(load("small_net")).flat();
  assert.ok(all.some((t) => t.startsWith("∂loss/∂net.fc1.bias = grad summed over the batch rows = [16]")), all.join("\n"));
  assert.ok(all.some((t) => t.startsWith("∂loss/∂net.fc1.weightᵀ = xᵀ @ grad")), all.join("\n"));
  assert.ok(all.some((t) => t.startsWith("∂loss/∂(relu(net.fc1(…))) = grad @ net.fc2.weight =")), all.join("\n"));
});

test("custom_function: the node of Cube.apply says its rule is the snippet's own backward", () => {
  const model = load("custom_function");
  const first = model.timeline[0];
  assert.equal(model.node(first.exec?.node)?.name, "CubeBackward");
  const ex = explain(model, first)!;
  assert.match(ex.summary, /^Cube\.backward\(ctx, grad\) ran: the rule is your own/);
  assert.ok(ex.lines.some((l) => l.text.endsWith("← 12")), ex.lines.map((l) => l.text).join("\n"));
});

test("grad_hook: a node a hook fed says what arrived and what the hook made of it", () => {
  const model = load("grad_hook");
  const texts = model.timeline.map((entry) => explain(model, entry));
  const mul = model.timeline.findIndex((e) => model.node(e.exec?.node)?.name === "MulBackward0");
  // y's hook scaled the [6, 12] PowBackward0 sent into the [60, 120] MulBackward0 ran on
  assert.equal(texts[mul]?.incoming, "grad = [60, 120]: a hook on y (line 7) changed the ∂z/∂y = [6, 12] that arrived");
  assert.ok(texts[mul]?.lines.some((l) => l.text.endsWith("= [180, 360]")), JSON.stringify(texts[mul]));
  // no hook elsewhere: the nodes before and after read as always
  for (const entry of model.timeline) {
    if (entry.index === mul || !texts[entry.index]) continue;
    assert.doesNotMatch(texts[entry.index]!.incoming, /hook/, texts[entry.index]!.incoming);
  }
  const leaf = model.timeline.find((e) => model.node(e.exec?.node)?.name === "AccumulateGrad")!;
  assert.equal(explain(model, leaf)?.incoming, "grad = ∂z/∂x = [180, 360]");
});

test("no example without a hook says a hook changed a gradient", () => {
  for (const name of ["cubic", "product", "cubic_twice", "small_net", "accumulate_loop", "custom_function"]) {
    const model = load(name);
    for (const entry of model.timeline) assert.doesNotMatch(explain(model, entry)?.incoming ?? "", /hook/, `${name} ${entry.index}`);
  }
});

test("linear_3d: a tensor made inside one op is named as the graph labels its node, not as the node", () => {
  const model = load("linear_3d");
  const view = model.timeline.find((e) => model.node(e.exec?.node)?.name === "ViewBackward0")!;
  const lines = explain(model, view)!.lines.map((l) => l.text);
  assert.ok(lines.some((t) => t.startsWith("∂(sum(out))/∂(layer.bias + … @ …) = grad reshaped to [10×3]")), lines.join("\n"));
});

test("attention: the fused node writes out its backward with the snippet's q, k, v and its scale", () => {
  const model = load("attention");
  const cards = model.timeline.flatMap((e) => (e.kind === "node" && e.exec && model.node(e.exec.node)?.name.startsWith("ScaledDotProduct") ? [explain(model, e)] : []));
  assert.equal(cards.length, 2);
  const [causal, scaled] = cards;
  assert.equal(causal?.summary, "out = P v, P = softmax(q kᵀ · 1/√8) · attention; causal: each query's later keys masked out of P");
  const lines = causal?.lines.map((l) => l.text) ?? [];
  assert.equal(lines.length, 3, lines.join("\n"));
  assert.match(lines[0], /∂\S+\/∂q = dS k · 1\/√8, dS = P ⊙ \(G − Σ_row P ⊙ G\), G = grad vᵀ/);
  assert.match(lines[1], /∂\S+\/∂k = dSᵀ q · 1\/√8 \(dS as for q\)/);
  assert.match(lines[2], /∂\S+\/∂v = Pᵀ grad/);
  // scale=0.5 is the snippet's own, and the second call is not causal
  assert.equal(scaled?.summary, "out = P v, P = softmax(q kᵀ · 0.5) · attention");
});

/** The executed nodes of a trace, by name, with their cards. */
function cards(model: TraceModel): [string, Explanation][] {
  return model.timeline.flatMap((e) => {
    const name = e.kind === "node" && e.exec ? model.node(e.exec.node)?.name : undefined;
    const card = name ? explain(model, e) : null;
    return name && card ? [[name, card] as [string, Explanation]] : [];
  });
}

test("scalar_math: each function's slope is written out, and its numbers multiply to what PyTorch sent", () => {
  const all = cards(load("scalar_math"));
  const lines = all.flatMap(([, card]) => card.lines.map((l) => l.text));
  for (const expected of [
    "∂y/∂x = grad / √(1 − x²) = 1 × 1.155 = 1.155",
    "∂y/∂x = grad · cosh(x) = 1 × 1.128 = 1.128",
    "∂y/∂w = grad / √(w² − 1) = 1 × 0.8944 = 0.8944",
    "∂y/∂x = grad / (x · ln 2) = 1 × 2.885 = 2.885",
    "∂y/∂x = grad · w / (x² + w²) = 1 × 0.6 = 0.6",
    "∂y/∂w = −grad · x / (x² + w²) = 1 × (−0.2) = −0.2",
    "∂y/∂x = grad · (1 − 0.25) = 1 × 0.75 = 0.75",
  ]) {
    assert.ok(lines.includes(expected), `${expected}\n${lines.join("\n")}`);
  }
  // every substitution `g × s` equals the gradient PyTorch sent (to the 4 digits shown)
  const toNumber = (t: string) => Number(t.replace(/[()]/g, "").replace("−", "-"));
  let checked = 0;
  for (const line of lines) {
    const parts = line.split(" = ");
    const product = /^(\S+) × (\S+)$/.exec(parts[parts.length - 2] ?? "");
    if (!product) continue;
    const [g, s, sent] = [toNumber(product[1]), toNumber(product[2]), toNumber(parts[parts.length - 1])];
    assert.ok(Math.abs(g * s - sent) <= 1e-3 * Math.max(1, Math.abs(sent)), line);
    checked++;
  }
  assert.ok(checked >= 25, `${checked} substitutions checked:\n${lines.join("\n")}`);
  assert.deepEqual(all.filter(([name]) => name !== "AccumulateGrad" && !hasRule(name)).map(([name]) => name), []);
});

test("more_ops: every node of the wider op set has its rule, each saying where the gradient goes", () => {
  const all = cards(load("more_ops"));
  const names = new Set(all.map(([name]) => name));
  for (const name of ["TrilBackward0", "MedianBackward0", "Im2ColBackward0", "UpsampleBilinear2DBackward0", "MishBackward0", "HuberLossBackward0", "LinalgInvExBackward0", "LinalgCrossBackward0", "CdistBackward0", "NativeGroupNormBackward0"]) {
    assert.ok(names.has(name), `${name} is not in the trace: ${[...names].join(" ")}`);
  }
  const missing = [...names].filter((n) => n !== "AccumulateGrad" && !hasRule(n));
  assert.deepEqual(missing, []);
  for (const [name, card] of all) assert.doesNotMatch(card.summary, /no rule is written out/, name);
  const byName = new Map(all);
  assert.match(byName.get("MedianBackward0")?.lines[0]?.text ?? "", /shared evenly among the elements equal to the median/);
  assert.match(byName.get("TrilBackward0")?.summary ?? "", /above diagonal 0 set to 0/);
  assert.match(byName.get("TriuBackward0")?.summary ?? "", /below diagonal 1 set to 0/);
  assert.match(byName.get("FmodBackward0")?.summary ?? "", /^out = fmod\(v, 0\.2\)/);
  assert.match(byName.get("HuberLossBackward0")?.lines[0]?.text ?? "", /grad · clamp\(d, −δ, δ\) \/ N \(N = 9\)/);
  assert.match(byName.get("LinalgCrossBackward0")?.summary ?? "", /cross product/);
});
