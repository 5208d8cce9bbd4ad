// Repeated graphs are put in run order (NOTE [Repeats in run order] in src/layout-order.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import type { GEdge, GNode } from "../src/graph-build";
import type { LayoutEdge, LayoutNode, Placement } from "../src/layout";
import { orderRepeats, readingOrder } from "../src/layout-order";

const node = (id: string, width = 100, parent: string | null = null): LayoutNode => ({ id, parent, width, height: 40, compound: false });
const edge = (source: string, target: string): LayoutEdge => ({ id: `${source}-${target}`, source, target });

/** Three `loss → mul → AccumulateGrad(w)` graphs, ELK having placed them 3, 1, 2 from the left. */
function threeSteps(): { nodes: LayoutNode[]; edges: LayoutEdge[]; placement: Placement } {
  const nodes = [node("acc"), node("w")];
  const edges = [edge("acc", "w")];
  for (const k of [1, 2, 3]) {
    nodes.push(node(`loss${k}`), node(`mul${k}`));
    edges.push(edge(`loss${k}`, `mul${k}`), edge(`mul${k}`, "acc"), edge(`mul${k}`, "w"));
  }
  const x = { 3: 0, 1: 200, 2: 400 } as Record<number, number>;
  const placement: Placement = { positions: new Map(), routes: new Map() };
  placement.positions.set("acc", { x: 200, y: 200 });
  placement.positions.set("w", { x: 200, y: 300 });
  for (const k of [1, 2, 3]) {
    placement.positions.set(`loss${k}`, { x: x[k], y: 0 });
    placement.positions.set(`mul${k}`, { x: x[k] + 10, y: 100 });
    placement.routes.set(`mul${k}-w`, [{ x: x[k] + 10, y: 120 }, { x: x[k] + 5, y: 250 }, { x: 200, y: 280 }]);
  }
  return { nodes, edges, placement };
}

test("graphs of the same shape read left to right in the order they were made", () => {
  const { nodes, edges, placement } = threeSteps();
  orderRepeats(nodes, edges, placement);
  const xs = [1, 2, 3].map((k) => placement.positions.get(`loss${k}`)!.x);
  assert.deepEqual(xs, [0, 200, 400]);
  // each block moves whole: its nodes and its edges' routes with it
  assert.deepEqual([1, 2, 3].map((k) => placement.positions.get(`mul${k}`)!.x), [10, 210, 410]);
  assert.deepEqual(placement.routes.get("mul1-w")![0], { x: 10, y: 120 });
  // the shared part stays
  assert.deepEqual(placement.positions.get("acc"), { x: 200, y: 200 });
});

test("graphs of other shapes keep the places ELK gave them", () => {
  const { nodes, edges, placement } = threeSteps();
  nodes.find((n) => n.id === "mul1")!.width = 160; // a longer label: it would not fit the other places
  orderRepeats(nodes, edges, placement);
  // 2 and 3 are alike and swap; 1 stays where it was
  assert.deepEqual([1, 2, 3].map((k) => placement.positions.get(`loss${k}`)!.x), [200, 0, 400]);
});

test("graphs in different module groups are not swapped", () => {
  const { nodes, edges, placement } = threeSteps();
  for (const k of [1, 2, 3]) nodes.find((n) => n.id === `mul${k}`)!.parent = `group${k}`;
  const before = new Map(placement.positions);
  orderRepeats(nodes, edges, placement);
  assert.deepEqual(placement.positions, before);
});

// --- readingOrder ------------------------------------------------------------------------

const g = (id: string, kind: GNode["kind"] = "op"): GNode => ({ id, kind, label: id, parent: null, op: null, width: 80, height: 30 });
const ge = (source: string, target: string, kind: GEdge["kind"] = "grad"): GEdge => ({ id: `${source}>${target}`, kind, source, target, label: "" });

test("the graph backward walks comes first; a computation left dangling beside it comes after", () => {
  // control_flow: `if z.abs().max() > 1.2` (abs7, max7, built first) dangles; loss → div → max8 → abs8 → mul
  const nodes = ["accH", "accW", "mul", "abs7", "max7", "abs8", "max8", "div", "loss"].map((id) => g(id, id.startsWith("acc") ? "acc" : "op"));
  nodes.push(g("h", "leaf"), g("w", "leaf"));
  const edges = [
    ge("accH", "h", "acc"),
    ge("accW", "w", "acc"),
    ge("mul", "accH"),
    ge("mul", "accW"),
    ge("mul", "w", "saved"), // h * w saves w first: the leaves still read h, w
    ge("mul", "h", "saved"),
    ge("abs7", "mul"),
    ge("max7", "abs7"),
    ge("abs8", "mul"),
    ge("max8", "abs8"),
    ge("div", "mul"),
    ge("div", "max8"),
    ge("loss", "div"),
  ];
  const [order, edgeOrder] = readingOrder(nodes, edges);
  const ids = order.map((n) => n.id);
  assert.deepEqual(ids, ["loss", "div", "mul", "max8", "accH", "accW", "abs8", "h", "w", "max7", "abs7"]);
  assert.equal(edgeOrder[0].id, "loss>div"); // each edge follows its source
  assert.equal(edgeOrder.length, edges.length);
});

test("graphs that reach as much keep the order they were made in; module groups stay first", () => {
  const nodes = [g("group", "group"), g("acc", "acc"), g("w", "param"), g("loss1"), g("loss2"), g("loss3")];
  const edges = [ge("acc", "w", "acc"), ge("loss1", "acc"), ge("loss2", "acc"), ge("loss3", "acc")];
  const ids = readingOrder(nodes, edges)[0].map((n) => n.id);
  assert.deepEqual(ids, ["group", "loss1", "acc", "w", "loss2", "loss3"]);
});

test("a node's edges go to ELK inputs first, then what it saved, each in the order their targets are read", () => {
  // scaled_dot_product_attention's node: inputs q, k, v; it saves key, output, query, value
  // (by name), which put k's leaf left of q's
  const nodes = [g("accQ", "acc"), g("accK", "acc"), g("accV", "acc"), g("q", "leaf"), g("k", "leaf"), g("v", "leaf"), g("out", "saved"), g("attn"), g("loss")];
  const edges = [
    ge("accQ", "q", "acc"),
    ge("accK", "k", "acc"),
    ge("accV", "v", "acc"),
    ge("attn", "k", "saved"),
    ge("attn", "out", "saved"),
    ge("attn", "q", "saved"),
    ge("attn", "v", "saved"),
    ge("attn", "accQ"),
    ge("attn", "accK"),
    ge("attn", "accV"),
    ge("loss", "attn"),
  ];
  const [order, edgeOrder] = readingOrder(nodes, edges);
  assert.deepEqual(order.map((n) => n.id), ["loss", "attn", "accQ", "accK", "accV", "out", "q", "k", "v"]);
  assert.deepEqual(
    edgeOrder.map((e) => e.id),
    ["loss>attn", "attn>accQ", "attn>accK", "attn>accV", "attn>out", "attn>q", "attn>k", "attn>v", "accQ>q", "accK>k", "accV>v"],
  );
});
