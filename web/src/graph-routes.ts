// Edges that would cross a node follow ELK's route around it.
//
// Cytoscape draws an edge as a line from its source's centre to its target's. An edge that
// skips layers (x * exp(x): MulBackward0 sends a gradient straight to x's AccumulateGrad,
// past ExpBackward0) then runs through the node between, and reads as a second edge into
// it. ELK routed each edge clear of the nodes, from a point on its source's border (not
// the centre: a residual's skip edge left AddBackward0 a little left of its centre, and a
// line from the centre clipped the TBackward0 below) through its bends to a point on its
// target's border. An edge whose straight line would cross a node is drawn along that route
// ("round-segments", whose points Cytoscape takes as a fraction along the source-target
// line and a distance across it: routeW and routeD in the edge's data, mapped by
// graph-style.ts; the legs from each centre to the route's ends, just off the borders, lie
// under the nodes). Other edges stay straight lines, as before.
import type { Core, EdgeSingular } from "cytoscape";
import type { Positions, Routes } from "./layout";

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
 * Draw the edges of `cy` whose straight line would cross a node along ELK's `routes`, the
 * nodes being at `positions` (centres; every non-group node of `cy` must be there);
 * clear the route of every other edge.
 */
export function routeEdges(cy: Core, positions: Positions, routes: Routes): void {
  const boxes = new Map<string, Box>();
  cy.nodes().forEach((n) => {
    const at = positions.get(n.id());
    if (!at || n.isParent()) return;
    const w = Number(n.data("width")) / 2;
    const h = Number(n.data("height")) / 2;
    boxes.set(n.id(), { x1: at.x - w, y1: at.y - h, x2: at.x + w, y2: at.y + h });
  });
  const insides = new Map([...boxes].map(([id, box]) => [id, grown(box, -INSET)]));
  cy.batch(() => {
    cy.edges().forEach((e) => {
      const points = routes.get(e.id());
      const from = positions.get(e.source().id());
      const to = positions.get(e.target().id());
      if (points && from && to && crossesANode(from, to, e, insides)) setRoute(e, from, to, points, boxes);
      else clearRoute(e);
    });
  });
}

/** Draw every edge of `cy` as a straight line again (a layout without routes). */
export function clearRoutes(cy: Core): void {
  cy.batch(() => cy.edges().forEach(clearRoute));
}

function clearRoute(e: EdgeSingular): void {
  // data() with an object restyles the edge; removeData() does not (Cytoscape 3.x), and an
  // edge left styled "round-segments" without its points has no endpoints: it is not drawn
  if (e.data("routeW") !== undefined) e.data({ routeW: undefined, routeD: undefined });
}

/** How far (model px) outside its nodes' boxes a route starts and ends. */
const OFF_BORDER = 4;

/**
 * `route` from where it leaves `source` to where it enters `target` (boxes grown by
 * OFF_BORDER). Cytoscape clips an edge where the leg from a node's centre to the route's
 * first (last) point leaves the node: ELK's points on the border itself gave no crossing,
 * and no edge was drawn at all.
 */
function offTheBorders(route: Point[], source: Box, target: Box): Point[] {
  const leave = (points: Point[], box: Box): Point[] => {
    for (let i = 0; i + 1 < points.length; i++) {
      const span = clip(points[i], points[i + 1], box);
      if (!span || span[0] > 0) return points.slice(i); // this leg starts outside the box
      if (span[1] < 1) {
        const [p, q] = [points[i], points[i + 1]];
        return [{ x: p.x + (q.x - p.x) * span[1], y: p.y + (q.y - p.y) * span[1] }, ...points.slice(i + 1)];
      }
    }
    return points;
  };
  return leave(leave(route, grown(source, OFF_BORDER)).reverse(), grown(target, OFF_BORDER)).reverse();
}

function setRoute(e: EdgeSingular, from: Point, to: Point, route: Point[], boxes: Map<string, Box>): void {
  const source = boxes.get(e.source().id());
  const target = boxes.get(e.target().id());
  const points = source && target ? offTheBorders(route, source, target) : route;
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

/** Whether the line `from`-`to` of edge `e` meets the inside (`insides`: boxes shrunk by INSET) of a node other than its ends. */
function crossesANode(from: Point, to: Point, e: EdgeSingular, insides: Map<string, Box>): boolean {
  const source = e.source().id();
  const target = e.target().id();
  for (const [id, box] of insides) {
    if (id !== source && id !== target && clip(from, to, box) !== null) return true;
  }
  return false;
}

function grown(b: Box, by: number): Box {
  return { x1: b.x1 - by, y1: b.y1 - by, x2: b.x2 + by, y2: b.y2 + by };
}

/** The part of segment `a`-`b` inside `box`, as fractions [from, to] along it, or null (Liang-Barsky). */
function clip(a: Point, b: Point, box: Box): [number, number] | null {
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
      if (q < 0) return null;
      continue;
    }
    const t = q / p;
    if (p < 0) t0 = Math.max(t0, t);
    else t1 = Math.min(t1, t);
    if (t0 > t1) return null;
  }
  return [t0, t1];
}
