// The graph's elements from real recorded traces: every gradient edge says its shape.
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildGraph } from "../src/graph-build";
import { loadModel as model } from "./traces";

test("small_net: every gradient edge has its shape, the weight.t() inside F.linear's too", () => {
  const m = model("small_net");
  const { edges, nodes } = buildGraph(m, { showSaved: false, collapsed: new Set() });
  const grad = edges.filter((e) => e.kind === "grad");
  assert.ok(grad.length >= 8);
  for (const e of grad) assert.match(e.label, /^(scalar|\[[0-9×]+\])$/, `${e.id}: ${JSON.stringify(e.label)}`);
  // F.linear's AddmmBackward0 sends the gradient of weight.t() to TBackward0: [hidden×out], the weight transposed
  const tNodes = nodes.filter((n) => n.label.startsWith("TBackward0"));
  assert.equal(tNodes.length, 2);
  const intoT = grad.filter((e) => tNodes.some((n) => n.id === e.target)).map((e) => e.label).sort();
  assert.deepEqual(intoT, ["[16×2]", "[4×16]"]);
});
