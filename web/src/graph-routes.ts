// Edges that would cross a node follow ELK's route around it.
//
// Cytoscape draws an edge as a line from its source's centre to its target's. An edge that
// skips layers (x * exp(x): MulBackward0 sends a gradient straight to x's AccumulateGrad,
// past ExpBackward0) then runs through the node between, and reads as a second edge into
// it. ELK reserved a lane for such an edge and says where it bends; an edge whose straight
// line would cross a node is drawn along those bend points ("round-segments", whose points
// Cytoscape takes as a fraction along the source-target line and a distance across it:
// routeW and routeD in the edge's data, mapped by graph-style.ts). Other edges stay
// straight lines, as before.
import type { Core, EdgeSingular } from "cytoscape";
import type { Bends, Positions } from "./layout";

type Point = { x: number; y: number };

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/**
 * A line must pass this far (model px) inside a node's body to count as crossing it: one
 * that grazes a corner reads fine as it is, and ELK's route for it jogs sideways.
 */
const INSET = 3;

/**
 * Route the edges of `cy` whose straight line would cross a node along ELK's `bends`, the
 * nodes being at `positions` (centres; every non-group node of `cy` must be there);
 * clear the route of every other edge.
 */
export function routeEdges(cy: Core, positions: Positions, bends: Bends): void {
  const boxes = new Map<string, Box>();
  cy.nodes().forEach((n) => {
    const at = positions.get(n.id());
    if (!at || n.isParent()) return;
    const w = Number(n.data("width")) / 2 - INSET;
    const h = Number(n.data("height")) / 2 - INSET;
    boxes.set(n.id(), { x1: at.x - w, y1: at.y - h, x2: at.x + w, y2: at.y + h });
  });
  cy.batch(() => {
    cy.edges().forEach((e) => {
      const points = bends.get(e.id());
      const from = positions.get(e.source().id());
      const to = positions.get(e.target().id());
      if (points && from && to && crossesANode(from, to, e, boxes)) setRoute(e, from, to, points);
      else clearRoute(e);
    });
  });
}

/** Draw every edge of `cy` as a straight line again (a layout without bend points). */
export function clearRoutes(cy: Core): void {
  cy.batch(() => cy.edges().forEach(clearRoute));
}

function clearRoute(e: EdgeSingular): void {
  if (e.data("routeW") !== undefined) e.removeData("routeW routeD");
}

function setRoute(e: EdgeSingular, from: Point, to: Point, points: Point[]): void {
  const dx = to.x - from.x;
  const dy = to.y - from.y;
  const length2 = dx * dx + dy * dy;
  if (length2 < 1) return clearRoute(e);
  const length = Math.sqrt(length2);
  const weights: number[] = [];
  const distances: number[] = [];
  for (const p of points) {
    const px = p.x - from.x;
    const py = p.y - from.y;
    weights.push((px * dx + py * dy) / length2);
    // Cytoscape's "across" is the source-target direction turned a quarter (-dy, dx)
    distances.push((px * -dy + py * dx) / length);
  }
  e.data({ routeW: weights, routeD: distances });
}

function crossesANode(from: Point, to: Point, e: EdgeSingular, boxes: Map<string, Box>): boolean {
  const ends = new Set([e.source().id(), e.target().id()]);
  for (const [id, box] of boxes) {
    if (!ends.has(id) && segmentMeetsBox(from, to, box)) return true;
  }
  return false;
}

/** Whether the segment `a`-`b` has a point inside `box` (Liang-Barsky clipping). */
export function segmentMeetsBox(a: Point, b: Point, box: Box): boolean {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  let t0 = 0;
  let t1 = 1;
  const sides: [number, number][] = [
    [-dx, a.x - box.x1],
    [dx, box.x2 - a.x],
    [-dy, a.y - box.y1],
    [dy, box.y2 - a.y],
  ];
  for (const [p, q] of sides) {
    if (p === 0) {
      if (q < 0) return false;
      continue;
    }
    const t = q / p;
    if (p < 0) t0 = Math.max(t0, t);
    else t1 = Math.min(t1, t);
    if (t0 > t1) return false;
  }
  return true;
}
