// Place the graph's elements: ELK's layered layout (layout.ts, in a worker) for graphs up
// to ELK_MAX_NODES, with its routes for the edges that would cross a node (graph-routes.ts);
// Cytoscape's breadth-first layout above that or when ELK fails (level of detail: see
// graph.ts).
import type { Core } from "cytoscape";
import { reducedMotion } from "./dom";
import { type GEdge, type GNode, neighbours, outputsOf } from "./graph-build";
import { levelCounts } from "./graph-lod";
import { clearRoutes, routeEdges } from "./graph-routes";
import { ELK_MAX_NODES, elkAvailable, layoutElk } from "./layout";

export type LayoutName = "elk" | "breadthfirst";

/** A layout the graph view applied (window.gradwalk.graph.lastLayout, read by tests and benchmarks). */
export interface LayoutInfo {
  /** When it was applied (performance.now()). */
  at: number;
  /** From the first change it covers to applied. */
  ms: number;
  nodes: number;
  edges: number;
  layout: LayoutName;
}

/**
 * Position `cy`'s elements, which must be `nodes` and `edges` (`count` of the nodes are
 * not module groups); with `animate`, nodes already placed glide to their new place, and
 * the promise resolves when they are there. Returns the layout used.
 */
export async function placeElements(cy: Core, nodes: GNode[], edges: GEdge[], count: number, animate: boolean): Promise<LayoutName> {
  if (count <= ELK_MAX_NODES && elkAvailable()) {
    try {
      [nodes, edges] = readingOrder(nodes, edges);
      const { positions, routes } = await layoutElk(
        nodes.map((n) => ({ id: n.id, parent: n.parent, width: n.width, height: n.height, compound: n.kind === "group" })),
        edges.map((e) => ({ id: e.id, source: e.source, target: e.target })),
      );
      // Another run replaced the graph while ELK worked: this one is gone.
      if (cy.destroyed()) return "elk";
      const gliding: Promise<void>[] = [];
      const glide = animate && !reducedMotion();
      cy.batch(() => {
        for (const [id, p] of positions) {
          const el = cy.getElementById(id);
          if (!el.nonempty()) continue;
          if (glide && !el.hasClass("unplaced")) {
            gliding.push(new Promise<void>((done) => el.animate({ position: p }, { duration: 220, complete: () => done() })));
          } else {
            el.position(p);
          }
        }
      });
      routeEdges(cy, positions, routes);
      // Resolve once every node is where it goes (a fit measures the final places), or a
      // little later at most: a stopped animation never calls `complete`.
      if (gliding.length) await Promise.race([Promise.all(gliding), new Promise((done) => setTimeout(done, 400))]);
      return "elk";
    } catch (err) {
      if (cy.destroyed()) return "elk";
      console.warn("gradwalk: ELK layout failed, using breadth-first", err);
    }
  }
  clearRoutes(cy);
  const roots = outputsOf(nodes, edges).map((n) => n.id);
  // Breadth-first fits the levels into its bounding box (the viewport by default): size
  // the box by the number of levels and the widest one, so rows keep a readable spacing.
  const { levels, widest } = levelCounts(roots, edges);
  cy.elements()
    .not(":parent")
    .layout({
      name: "breadthfirst",
      directed: true,
      roots,
      animate: false,
      fit: false,
      avoidOverlap: false,
      nodeDimensionsIncludeLabels: false,
      boundingBox: { x1: 0, y1: 0, w: Math.max(400, widest * 170), h: Math.max(300, levels * 70) },
    })
    .run();
  return "breadthfirst";
}

/**
 * `nodes` and `edges` in the order a reader takes the graph in, which ELK keeps within each
 * layer (its model order): breadth-first from each output along its edges (a node's inputs in
 * slot order, then what it saved), the output that reaches the most nodes first, so the graph backward walks
 * reads down the middle and a computation left dangling beside it (`if z.abs().max() > 1.2:`
 * builds a graph of its own) stands to one side rather than between a node and its input.
 * Module groups keep their place first; each edge follows its source.
 */
export function readingOrder(nodes: GNode[], edges: GEdge[]): [GNode[], GEdge[]] {
  // a leaf is ranked where its AccumulateGrad is, not where a product happened to save it
  // (`h * w` saves w first); saved tensors come after a node's inputs
  const kinds = new Map(nodes.map((n) => [n.id, n.kind]));
  const bySaving = (e: GEdge) => e.kind === "saved" && kinds.get(e.target) !== "leaf" && kinds.get(e.target) !== "param";
  const out = neighbours([...edges.filter((e) => e.kind !== "saved"), ...edges.filter(bySaving)], "out");
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
  const at = (id: string) => place.get(id) ?? Infinity;
  const sortedNodes = [...nodes].sort((a, b) => at(a.id) - at(b.id));
  const sortedEdges = edges.map((e, i) => ({ e, i })).sort((a, b) => at(a.e.source) - at(b.e.source) || a.i - b.i).map((x) => x.e);
  return [sortedNodes, sortedEdges];
}
