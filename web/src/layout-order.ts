// The order ELK is given the graph in (readingOrder), and repeated graphs put side by side in
// the order they were made after it (NOTE [Repeats in run order]).
import { type GEdge, type GNode, neighbours, outputsOf } from "./graph-build";
import type { LayoutEdge, LayoutNode, Placement } from "./layout";

// NOTE [Repeats in run order]
// A loop that calls backward() several times draws one graph per call beside the others,
// all sending gradient into the same leaves. ELK orders such twins to save crossings, and
// where the order makes no difference it comes out scrambled: the accumulate lesson's four
// `y = x ** 2` graphs read 3, 2, 1, 4 from the left, the rent regression's first three steps
// 3, 1, 2. Each graph's own part (the nodes only its output reaches) is a block; blocks that
// are the same shape, node for node (sizes, module groups, and where they send gradient
// outside themselves), swap places so they read left to right in the order they were made.
// The drawing is the same up to which block stands where, so no crossing is added.

interface Block {
  root: string;
  /** The block's nodes and edges in a fixed walk order: corresponding ones match by index. */
  nodes: string[];
  edges: string[];
  shape: string;
}

/**
 * Put blocks of the same shape in `placement` (ELK's, for `nodes` and `edges`) in the order
 * their outputs come in `nodes`, left to right. Changes `placement` in place.
 */
export function orderRepeats(nodes: readonly LayoutNode[], edges: readonly LayoutEdge[], placement: Placement): void {
  const leaves = new Map(nodes.filter((n) => !n.compound).map((n) => [n.id, n]));
  const out = new Map<string, LayoutEdge[]>();
  const hasIn = new Set<string>();
  for (const e of edges) {
    if (!leaves.has(e.source) || !leaves.has(e.target) || e.source === e.target) continue;
    (out.get(e.source) ?? out.set(e.source, []).get(e.source)!).push(e);
    hasIn.add(e.target);
  }
  const roots = [...leaves.keys()].filter((id) => !hasIn.has(id) && out.has(id));
  if (roots.length < 2) return;
  // how many outputs reach each node: a block is what only its own output reaches
  const reached = new Map<string, number>();
  for (const root of roots) for (const id of reachable(root, out)) reached.set(id, (reached.get(id) ?? 0) + 1);
  const byShape = new Map<string, Block[]>();
  for (const root of roots) {
    const block = blockOf(root, out, leaves, reached);
    (byShape.get(block.shape) ?? byShape.set(block.shape, []).get(block.shape)!).push(block);
  }
  for (const blocks of byShape.values()) if (blocks.length > 1) reorder(blocks, placement);
}

function reachable(root: string, out: Map<string, LayoutEdge[]>): Set<string> {
  const seen = new Set<string>([root]);
  const todo = [root];
  while (todo.length) for (const e of out.get(todo.pop()!) ?? []) if (!seen.has(e.target)) seen.add(e.target), todo.push(e.target);
  return seen;
}

function blockOf(root: string, out: Map<string, LayoutEdge[]>, leaves: Map<string, LayoutNode>, reached: Map<string, number>): Block {
  const index = new Map<string, number>();
  const block: Block = { root, nodes: [], edges: [], shape: "" };
  const parts: string[] = [];
  const visit = (id: string): number => {
    index.set(id, block.nodes.length);
    block.nodes.push(id);
    const n = leaves.get(id)!;
    parts.push(`(${Math.round(n.width)}x${Math.round(n.height)}@${n.parent ?? ""}`);
    for (const e of out.get(id) ?? []) {
      block.edges.push(e.id);
      if (reached.get(e.target) !== 1) parts.push(`>${e.target}`);
      else parts.push(`>#${index.has(e.target) ? index.get(e.target) : visit(e.target)}`);
    }
    parts.push(")");
    return index.get(id)!;
  };
  visit(root);
  block.shape = parts.join("");
  return block;
}

/** Give `blocks` (the same shape, in run order) the places their outputs hold, left to right. */
function reorder(blocks: Block[], placement: Placement): void {
  const { positions, routes } = placement;
  const x = (b: Block) => positions.get(b.root)?.x ?? 0;
  const slots = [...blocks].sort((a, b) => x(a) - x(b));
  if (slots.every((slot, i) => slot === blocks[i])) return;
  const at = new Map(blocks.flatMap((b) => b.nodes.map((id) => [id, positions.get(id)] as const)));
  const lines = new Map(blocks.flatMap((b) => b.edges.map((id) => [id, routes.get(id)] as const)));
  blocks.forEach((block, i) => {
    const slot = slots[i];
    block.nodes.forEach((id, k) => {
      const p = at.get(slot.nodes[k]);
      if (p) positions.set(id, p);
    });
    block.edges.forEach((id, k) => {
      const line = lines.get(slot.edges[k]);
      if (line) routes.set(id, line);
      else routes.delete(id);
    });
  });
}

/**
 * `nodes` and `edges` in the order a reader takes the graph in, which ELK keeps within each
 * layer (its model order): breadth-first from each output along its edges (a node's inputs
 * in slot order, then what it saved), the output that reaches the most nodes first, so the
 * graph backward walks comes first and a computation left dangling beside it
 * (`if z.abs().max() > 1.2:` builds a graph of its own) stands to one side rather than
 * between a node and its input.
 * Module groups keep their place first; each edge follows its source.
 */
export function readingOrder(nodes: GNode[], edges: GEdge[]): [GNode[], GEdge[]] {
  // a leaf is ranked where its AccumulateGrad is, not where a product happened to save it
  // (`h * w` saves w first); saved tensors come after a node's inputs
  const kinds = new Map(nodes.map((n) => [n.id, n.kind]));
  const savedToFollow = (e: GEdge) => e.kind === "saved" && kinds.get(e.target) !== "leaf" && kinds.get(e.target) !== "param";
  const out = neighbours([...edges.filter((e) => e.kind !== "saved"), ...edges.filter(savedToFollow)], "out");
  const reached = (from: string, mark: Map<string, number>): void => {
    const queue = [from];
    for (let i = 0; i < queue.length; i++) {
      const id = queue[i];
      if (mark.has(id)) continue;
      mark.set(id, mark.size);
      for (const next of out.get(id) ?? []) if (!mark.has(next)) queue.push(next);
    }
  };
  const roots = outputsOf(nodes, edges).map((n) => {
    const mark = new Map<string, number>();
    reached(n.id, mark);
    return { id: n.id, reach: mark.size };
  });
  roots.sort((a, b) => b.reach - a.reach); // stable: equal ones stay oldest first
  const rank = new Map<string, number>();
  for (const r of roots) reached(r.id, rank);
  const place = new Map<string, number>();
  nodes.forEach((n, i) => place.set(n.id, n.kind === "group" ? i - nodes.length : (rank.get(n.id) ?? rank.size + i)));
  const at = (id: string) => place.get(id) ?? Infinity; // an edge's source is always a node
  const sortedNodes = [...nodes].sort((a, b) => at(a.id) - at(b.id));
  // a node's edges: its inputs, then what it saved, each in the order their targets were
  // reached (a node lists what it saved by name: attention's key, output, query, value drew
  // k left of q)
  const savedLast = (e: GEdge) => (e.kind === "saved" ? 1 : 0);
  const sortedEdges = edges
    .map((e, i) => ({ e, i }))
    .sort((a, b) => at(a.e.source) - at(b.e.source) || savedLast(a.e) - savedLast(b.e) || at(a.e.target) - at(b.e.target) || a.i - b.i)
    .map((x) => x.e);
  return [sortedNodes, sortedEdges];
}
