// Keyboard navigation of the graph canvas: which node an arrow key moves to, and what a
// screen reader hears about it. Pure functions over positions and graph data, so the
// choice is unit-tested without a browser; graph.ts wires them to the canvas.
import type { GNode } from "./graph-build";

export type Direction = "up" | "down" | "left" | "right";

export const ARROWS: Readonly<Record<string, Direction>> = {
  ArrowUp: "up",
  ArrowDown: "down",
  ArrowLeft: "left",
  ArrowRight: "right",
};

export interface Placed {
  id: string;
  x: number;
  y: number;
}

const UNIT: Record<Direction, [number, number]> = {
  up: [0, -1],
  down: [0, 1],
  left: [-1, 0],
  right: [1, 0],
};

/** Nodes whose centres differ by less than this along a direction sit in the same row (or column). */
const SAME_ROW = 24;

/**
 * The node an arrow key moves to from `from`. The graph is drawn in rows, from the loss at
 * the top down to the leaves: up and down move to the nearest row in that direction (the
 * next layer, even when its node sits off to the side), and within it to the node closest
 * across; left and right move along the same row. `null` when nothing lies that way.
 */
export function nextInDirection(from: Placed, nodes: readonly Placed[], dir: Direction): string | null {
  const [ux, uy] = UNIT[dir];
  const sideways = dir === "left" || dir === "right";
  let nearest = Infinity;
  const ahead: { id: string; along: number; across: number }[] = [];
  for (const n of nodes) {
    if (n.id === from.id) continue;
    const dx = n.x - from.x;
    const dy = n.y - from.y;
    const along = dx * ux + dy * uy;
    const across = Math.abs(dx * uy - dy * ux);
    if (along <= (sideways ? 0 : SAME_ROW / 2) || (sideways && across > SAME_ROW)) continue;
    ahead.push({ id: n.id, along, across });
    nearest = Math.min(nearest, along);
  }
  let best: string | null = null;
  let bestKey = Infinity;
  for (const c of ahead) {
    // sideways, the closest along the row; up or down, the closest across within the nearest row
    const key = sideways ? c.along : c.along <= nearest + SAME_ROW ? c.across : Infinity;
    if (key < bestKey) {
      bestKey = key;
      best = c.id;
    }
  }
  return best;
}

/** The node keyboard navigation starts from: the top-most (the loss, in a layered layout), leftmost on a tie. */
export function startNode(nodes: readonly Placed[]): string | null {
  let best: Placed | null = null;
  for (const n of nodes) if (!best || n.y < best.y - 0.5 || (Math.abs(n.y - best.y) <= 0.5 && n.x < best.x)) best = n;
  return best?.id ?? null;
}

const KIND_WORDS: Record<GNode["kind"], string> = {
  op: "backward node",
  acc: "gradient accumulator",
  leaf: "leaf tensor",
  param: "parameter",
  input: "input tensor",
  saved: "saved tensor",
  group: "module",
  collapsed: "folded module",
};

/** What a screen reader says when keyboard focus lands on `node`. */
export function describeNode(node: GNode): string {
  const label = node.label.replace(/\s*\n\s*/g, ", ");
  const kind = KIND_WORDS[node.kind];
  if (node.kind === "collapsed") return `${label}: ${kind}, ${node.count ?? 0} nodes; Enter unfolds it`;
  if (node.kind === "group") return `${label}: ${kind}; Enter folds it`;
  return `${label}: ${kind}`;
}
