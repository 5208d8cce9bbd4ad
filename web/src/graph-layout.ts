// Place the graph's elements: ELK's layered layout (layout.ts, in a worker) for graphs up
// to ELK_MAX_NODES, with its routes for the edges that would cross a node (graph-routes.ts);
// Cytoscape's breadth-first layout above that or when ELK fails (level of detail: see
// graph.ts).
import type { Core, NodeSingular, Position } from "cytoscape";
import { reducedMotion } from "./dom";
import { type GEdge, type GNode, outputsOf } from "./graph-build";
import { levelCounts } from "./graph-lod";
import { clearRoutes, routeEdges } from "./graph-routes";
import { ELK_MAX_NODES, elkAvailable, layoutElk } from "./layout";
import { readingOrder } from "./layout-order";

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
        edges.map((e) => ({ id: e.id, source: e.source, target: e.target, straight: e.kind === "grad" })),
      );
      // Another run replaced the graph while ELK worked: this one is gone.
      if (cy.destroyed()) return "elk";
      const gliding: Promise<void>[] = [];
      const glides: [NodeSingular, Position][] = [];
      const glide = animate && !reducedMotion();
      cy.batch(() => {
        for (const [id, p] of positions) {
          const el = cy.getElementById(id);
          if (!el.nonempty()) continue;
          if (glide && !el.hasClass("unplaced")) {
            glides.push([el as NodeSingular, p]);
            gliding.push(new Promise<void>((done) => el.animate({ position: p }, { duration: 220, complete: () => done() })));
          } else {
            el.position(p);
          }
        }
      });
      // Resolve once every node is where it goes (a fit measures the final places), or a
      // little later at most: a stopped animation never calls `complete`. A route is drawn
      // once its ends are where it was made for: see NOTE [Routes and gliding nodes]. A glide
      // still going then (a busy machine draws few frames) ends where it was going, at once.
      if (gliding.length) {
        clearRoutes(cy);
        await Promise.race([Promise.all(gliding), new Promise((done) => setTimeout(done, 400))]);
        if (cy.destroyed()) return "elk";
        cy.batch(() => {
          for (const [el, p] of glides) {
            if (el.removed()) continue;
            if (el.animated()) el.stop(true, false);
            el.position(p);
          }
        });
      }
      routeEdges(cy, positions, routes);
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
 * Move every placed node of `cy` away from (or towards) the centre of their box by `ratio`:
 * the type scale grows or shrinks each node by about that much (presenter type), and the
 * gaps between them must grow with it until the layout has placed them again (NOTE [Bigger
 * type, same gaps]).
 */
export function spreadPlaced(cy: Core, ratio: number): void {
  const placed = cy.nodes().not(":parent").not(".unplaced");
  if (placed.empty() || ratio === 1) return;
  const box = placed.boundingBox();
  const midX = (box.x1 + box.x2) / 2;
  const midY = (box.y1 + box.y2) / 2;
  cy.batch(() => {
    placed.positions((node) => {
      const p = node.position();
      return { x: midX + (p.x - midX) * ratio, y: midY + (p.y - midY) * ratio };
    });
  });
}

// NOTE [Bigger type, same gaps]: presenter type makes each node bigger (graph-build.ts sizes
// them by their label's type). The new sizes took effect at once, while the layout that
// places them for those sizes runs in a worker: in between, the graph was drawn with the old
// places and the new sizes, neighbours overlapped, and Cytoscape warned once for every edge
// between two that did ("Edge ... has invalid endpoints", its ends inside each other) and
// left it out of that frame. The placed nodes are spread by the same ratio first, so each
// keeps clear of its neighbours until it glides to its new place.

// NOTE [Routes and gliding nodes]: a route's points are fractions along its source-target
// line and distances across it (graph-routes.ts), made for the nodes' new places. Set while
// the nodes still glide there from their old ones, the points of a route that bends around
// a node landed inside its own source or target on the way, Cytoscape found no endpoints
// (about 40 "Edge ... has invalid endpoints" warnings for pitfall_loss_tensor_total's live
// graph, growing batch by batch) and left those edges out until the glide ended. Edges are
// straight lines while nodes glide, which always have ends, and take their routes after.
