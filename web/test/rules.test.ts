// The chain-rule text for the worked examples, from real recorded traces.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { explain } from "../src/rules";
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
  assert.ok(all.includes("a.grad: 0 + 3 → 3"), all.join("\n"));
  assert.ok(all.includes("b.grad: 0 + 8 → 8"), all.join("\n"));
});

test("cubic: power rule, wrapped numbers, accumulation", () => {
  const all = texts(load("cubic")).flat();
  assert.ok(all.includes("∂y/∂x = grad · 3 · x² = 1 × 3 × 2.5² = 18.75"), all.join("\n"));
  assert.ok(all.includes("∂y/∂x = grad · 4 = −1 × 4 = −4"), all.join("\n"));
  assert.ok(all.includes("x.grad: 0 + 14.75 → 14.75"), all.join("\n"));
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
