// A window on a graph too big to draw whole: the part nearest its outputs.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { GEdge, GNode, GraphElements, NodeKind } from "../src/graph-build";
import { PartDrawn, windowOf } from "../src/graph-window";

function node(id: string, kind: NodeKind = "op", parent: string | null = null): GNode {
  return { id, kind, label: id, parent, width: 60, height: 30, op: null };
}

function edge(source: string, target: string, kind: GEdge["kind"] = "grad"): GEdge {
  return { id: `${source}>${target}`, kind, source, target, label: "" };
}

/** ops n1..n`count` in creation order, each sending its gradient to the one before (n`count` is the loss). */
function chain(count: number): GraphElements {
  const nodes = Array.from({ length: count }, (_, i) => node(`n${i + 1}`));
  const edges = nodes.slice(1).map((n, i) => edge(n.id, nodes[i].id));
  return { nodes, edges, gradNodes: count };
}

test("a graph within the cap is drawn whole", () => {
  const built = chain(5);
  const w = windowOf(built, 5);
  assert.equal(w.cut, false);
  assert.equal(w.nodes, built.nodes);
  assert.equal(w.shownGradNodes, 5);
});

test("a long chain keeps the nodes nearest its loss, and the edges between them", () => {
  const w = windowOf(chain(10), 4);
  assert.equal(w.cut, true);
  assert.deepEqual(w.nodes.map((n) => n.id), ["n7", "n8", "n9", "n10"]);
  assert.deepEqual(w.edges.map((e) => e.id), ["n8>n7", "n9>n8", "n10>n9"]);
  assert.equal(w.shownGradNodes, 4);
  assert.equal(w.gradNodes, 10);
});

test("many outputs into one leaf: the newest ones, with the AccumulateGrad and leaf they share", () => {
  // y = x * 2 in an endless loop: every MulBackward0 is an output
  const ops = Array.from({ length: 6 }, (_, i) => node(`m${i + 1}`));
  const nodes = [...ops, node("acc", "acc"), node("x", "leaf")];
  const edges = [...ops.map((o) => edge(o.id, "acc")), edge("acc", "x", "acc")];
  const w = windowOf({ nodes, edges, gradNodes: 7 }, 4);
  assert.deepEqual(new Set(w.nodes.map((n) => n.id)), new Set(["m6", "m5", "acc", "x"]));
  assert.equal(w.edges.length, 3);
  assert.equal(w.shownGradNodes, 3); // two MulBackward0 and the AccumulateGrad; the leaf is a tensor
});

test("module groups come along with what they hold, outermost first; a folded group counts its members", () => {
  const nodes = [
    node("g:net", "group"),
    node("g:net.fc", "group", "g:net"),
    node("g:other", "group"),
    { ...node("g:net.head", "collapsed", "g:net"), count: 5 },
    node("n1", "op", "g:other"),
    node("n2", "op", "g:net.fc"),
    node("n3", "op"),
  ];
  const edges = [edge("n3", "n2"), edge("n2", "g:net.head"), edge("g:net.head", "n1")];
  const w = windowOf({ nodes, edges, gradNodes: 7 }, 3);
  assert.deepEqual(w.nodes.map((n) => n.id), ["g:net", "g:net.fc", "g:net.head", "n2", "n3"]);
  assert.equal(w.shownGradNodes, 7);
});

test("nodes no output reaches are kept last, newest first", () => {
  const nodes = [node("old", "leaf"), node("new", "leaf"), ...chain(3).nodes];
  const edges = chain(3).edges;
  const w = windowOf({ nodes, edges, gradNodes: 3 }, 4);
  assert.deepEqual(w.nodes.map((n) => n.id), ["new", "n1", "n2", "n3"]);
});

test("with a focus, the window holds the nodes nearest it, up and down the graph", () => {
  const w = windowOf(chain(10), 3, "n4");
  assert.equal(w.cut, true);
  assert.deepEqual(w.nodes.map((n) => n.id), ["n3", "n4", "n5"]);
  assert.deepEqual(w.edges.map((e) => e.id), ["n4>n3", "n5>n4"]);
  // a focus that is not a node of the graph is no focus
  assert.deepEqual(windowOf(chain(10), 3, "n99").nodes.map((n) => n.id), ["n8", "n9", "n10"]);
});

test("PartDrawn follows what is looked at, the latest move winning, and goes back to the output", () => {
  let redraws = 0;
  const part = new PartDrawn(3, () => redraws++);
  const ids = (w: GraphElements) => w.nodes.map((n) => n.id);
  let drawn = new Set(ids(part.take(chain(10))));
  assert.deepEqual([...drawn], ["n8", "n9", "n10"]);
  part.follow("n9", drawn); // drawn already
  part.follow(null, drawn); // the output's part already
  assert.equal(redraws, 0);
  part.follow("n2", drawn);
  part.follow("n5", drawn); // a quick second move, before the part around n2 is drawn: it wins
  assert.equal(redraws, 2);
  drawn = new Set(ids(part.take(chain(10))));
  assert.deepEqual([...drawn], ["n4", "n5", "n6"]);
  assert.equal(part.toReveal(new Set()), null); // not drawn yet: later
  assert.equal(part.toReveal(drawn), "n5");
  assert.equal(part.toReveal(drawn), null);
  part.follow("n10", drawn); // back near the loss (the stepper's first step)
  part.follow("n10", drawn); // asked once
  assert.equal(redraws, 3);
  part.follow("n6", drawn); // a move back into the part still on its way: wins too
  assert.equal(redraws, 4);
  drawn = new Set(ids(part.take(chain(10))));
  assert.ok(drawn.has("n6") && part.aroundFocus);
  // nothing looked at (the stepper left, the selection cleared, the scrubber at the end)
  part.follow(null, drawn);
  assert.equal(redraws, 5);
  assert.equal(part.aroundFocus, false);
  assert.deepEqual(ids(part.take(chain(10))), ["n8", "n9", "n10"]);
  // Draw all
  part.all = true;
  assert.equal(part.take(chain(10)).cut, false);
  part.follow("n1", drawn);
  assert.equal(redraws, 5);
});

test("small graphs are kept whole or left out: none is cut through", () => {
  // three graphs of three nodes (a -> b -> c), the newest last; room for seven nodes
  const nodes: GNode[] = [];
  const edges: GEdge[] = [];
  for (const g of ["x", "y", "z"]) {
    nodes.push(node(`${g}c`), node(`${g}b`), node(`${g}a`));
    edges.push(edge(`${g}a`, `${g}b`), edge(`${g}b`, `${g}c`));
  }
  const w = windowOf({ nodes, edges, gradNodes: 9 }, 7);
  assert.deepEqual(new Set(w.nodes.map((n) => n.id)), new Set(["ya", "yb", "yc", "za", "zb", "zc"]));
});
