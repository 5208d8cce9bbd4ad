// Arrow-key navigation of the graph: moves follow the drawing, not the data structure.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { GNode } from "../src/graph-build";
import { describeNode, nextInDirection, noNodeText, type Placed, startNode } from "../src/graph-keys";

// A layered graph as ELK draws the cubic: the loss on top, two branches, the leaf below.
//            sub (200, 0)
//   pow (100, 100)     mul (300, 100)
//            acc (200, 200)
//            x   (200, 300)
const cubic: Placed[] = [
  { id: "sub", x: 200, y: 0 },
  { id: "pow", x: 100, y: 100 },
  { id: "mul", x: 300, y: 100 },
  { id: "acc", x: 200, y: 200 },
  { id: "x", x: 200, y: 300 },
];
const at = (id: string) => cubic.find((n) => n.id === id)!;

test("down from the loss goes to a branch below it, and on down to the leaf", () => {
  assert.equal(nextInDirection(at("sub"), cubic, "down"), "pow"); // the next row, not acc straight below
  assert.equal(nextInDirection(at("pow"), cubic, "down"), "acc");
  assert.equal(nextInDirection(at("acc"), cubic, "down"), "x");
  assert.equal(nextInDirection(at("x"), cubic, "down"), null);
});

test("left and right move within a layer; up climbs back to the loss", () => {
  assert.equal(nextInDirection(at("pow"), cubic, "right"), "mul");
  assert.equal(nextInDirection(at("mul"), cubic, "left"), "pow");
  assert.equal(nextInDirection(at("pow"), cubic, "left"), null);
  assert.equal(nextInDirection(at("mul"), cubic, "up"), "sub");
  assert.equal(nextInDirection(at("sub"), cubic, "up"), null);
});

test("down goes to the next row even when its only node is far to the side", () => {
  const nodes: Placed[] = [
    { id: "from", x: 500, y: 0 },
    { id: "child", x: 100, y: 80 },
    { id: "below", x: 500, y: 160 },
  ];
  assert.equal(nextInDirection(nodes[0], nodes, "down"), "child");
  assert.equal(nextInDirection(nodes[1], nodes, "up"), "from");
});

test("within the next row the node closest across wins; sideways stays in the row", () => {
  const nodes: Placed[] = [
    { id: "from", x: 0, y: 0 },
    { id: "far", x: 300, y: 100 },
    { id: "near", x: -40, y: 110 },
    { id: "row", x: 200, y: 10 },
    { id: "lower", x: 50, y: 60 },
  ];
  assert.equal(nextInDirection(nodes[0], nodes, "down"), "lower");
  assert.equal(nextInDirection(nodes[4], nodes, "down"), "near");
  assert.equal(nextInDirection(nodes[0], nodes, "right"), "row"); // not "lower", a row down
});

test("navigation starts at the top-most node, leftmost on a tie", () => {
  assert.equal(startNode(cubic), "sub");
  assert.equal(startNode([{ id: "b", x: 5, y: 0 }, { id: "a", x: 1, y: 0 }]), "a");
  assert.equal(startNode([]), null);
});

const node = (kind: GNode["kind"], label: string, count?: number): GNode => ({ id: "n", kind, label, parent: null, width: 1, height: 1, op: null, count });

test("what a screen reader hears names the node, its kind, and what Enter does to a module", () => {
  assert.equal(describeNode(node("op", "MulBackward0\nline 2")), "MulBackward0, line 2: backward node");
  assert.equal(describeNode(node("acc", "AccumulateGrad")), "AccumulateGrad: gradient accumulator");
  assert.equal(describeNode(node("collapsed", "model.0", 3)), "model.0: folded module, 3 nodes; Enter unfolds it");
});

test("at the edge, a screen reader hears that no node lies that way, and why when the graph is drawn in part", () => {
  assert.equal(noNodeText("down", false), "No node below.");
  assert.equal(noNodeText("left", false), "No node to the left.");
  assert.match(noNodeText("up", true), /^No node above\. Only part of this graph is drawn: Draw all shows the rest/);
});

test("a node reached while stepping says its step look as the legend does", () => {
  assert.equal(describeNode(node("op", "MulBackward0\nline 2"), ["current"]), "MulBackward0, line 2: backward node; running now");
  assert.equal(describeNode(node("op", "MulBackward0"), ["done", "freed"]), "MulBackward0: backward node; ran, freed: its saved tensors are gone");
  assert.equal(describeNode(node("acc", "AccumulateGrad"), ["pending"]), "AccumulateGrad: gradient accumulator; still to run");
  assert.equal(describeNode(node("op", "MulBackward0"), ["idle"]), "MulBackward0: backward node; not in this backward call");
});
