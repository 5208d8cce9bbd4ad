// Edge labels slid along their edges, off nodes and off each other.
//
// Cytoscape draws an edge's label at the edge's midpoint. A long edge's midpoint can fall
// under a node it passes by (the gradient into a ReLU hidden under a bias), the labels of
// edges fanning out of one node overlap (nn.Linear's AddmmBackward0 sends gradients to
// the weight's TBackward0 and to the bias side by side), and an edge into a module group
// has its midpoint on the group's name. So each shown label is moved to the first of a few
// places where it covers no node, no module name and no label placed before it: along its
// own edge, the middle first, then (a short edge has little room along it) beside the
// edge's middle; with none free, to the one it covers least. The labels of gradients
// flowing now are placed first, then those that flowed, then shapes.
import type { Core, EdgeSingular, NodeSingular } from "cytoscape";

/** Where along its edge a label may sit (0 at the source, 1 at the target), in order. */
const ALONG = [0.5, 0.38, 0.62, 0.27, 0.73, 0.17, 0.83];
/** Then beside the edge, at these places along it, on either side. */
const BESIDE = [0.5, 0.38, 0.62];
const GAP = 2; // model px kept clear around a label
/**
 * Kept clear beside a label, across, as a fraction of its height: two labels side by side
 * 4 px apart read as one ("‖·‖ 0.433[0.0138, −0.0138]" under a running AddmmBackward0 in
 * presenter type); this keeps them about a space apart.
 */
const SIDE_GAP = 0.25;
const CELL = 96; // grid cell of the obstacle index, model px

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

const LABEL_ONLY = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false } as const;

interface Obstacle extends Box {
  /** the query that last counted this box (one box can lie in several cells) */
  seen: number;
}

/** Boxes, indexed by the grid cells they cover, to ask what a box overlaps. */
class Obstacles {
  private cells = new Map<number, Obstacle[]>();
  private query = 0;

  add(b: Box): void {
    const o: Obstacle = { x1: b.x1, y1: b.y1, x2: b.x2, y2: b.y2, seen: 0 };
    this.each(b, (key) => {
      const list = this.cells.get(key);
      if (list) list.push(o);
      else this.cells.set(key, [o]);
    });
  }

  /** The area of `b` the boxes cover (each box counted once). */
  covered(b: Box): number {
    let area = 0;
    const query = ++this.query;
    this.each(b, (key) => {
      for (const o of this.cells.get(key) ?? []) {
        if (o.seen === query) continue;
        o.seen = query;
        const w = Math.min(b.x2, o.x2) - Math.max(b.x1, o.x1);
        const h = Math.min(b.y2, o.y2) - Math.max(b.y1, o.y1);
        if (w > 0 && h > 0) area += w * h;
      }
    });
    return area;
  }

  private each(b: Box, fn: (key: number) => void): void {
    const j1 = Math.floor(b.y1 / CELL);
    const j2 = Math.floor(b.y2 / CELL);
    for (let i = Math.floor(b.x1 / CELL); i <= Math.floor(b.x2 / CELL); i++) {
      for (let j = j1; j <= j2; j++) fn(i * 65_536 + j);
    }
  }
}

function rank(e: EdgeSingular): number {
  return e.hasClass("flowing") ? 0 : e.hasClass("flowed") ? 1 : 2;
}

type Point = { x: number; y: number };

/** The centres a label of half-size `w` x `h` may take on edge `from`-`to`, best first (see the top of this file). */
function candidates({ mid, from, to, bends }: Geometry, w: number, h: number): Point[] {
  const line = [from, ...bends, to];
  // the middle is the edge's own (a curved edge bows); the rest lie on its line, a chord
  // for a curve, or on the segments of an edge routed around nodes (graph-routes.ts)
  const along = (f: number) => (f === 0.5 ? { ...pointAlong(line, f), at: mid } : pointAlong(line, f));
  const out = ALONG.map((f) => along(f).at);
  for (const f of BESIDE) {
    const { at, nx, ny } = along(f);
    // far enough across the edge that the label's box clears the line
    const off = Math.abs(nx) * w + Math.abs(ny) * h + GAP;
    out.push({ x: at.x + nx * off, y: at.y + ny * off }, { x: at.x - nx * off, y: at.y - ny * off });
  }
  return out;
}

/** The point a fraction `f` of the way along the polyline `line`, and the unit normal there. */
function pointAlong(line: Point[], f: number): { at: Point; nx: number; ny: number } {
  const lengths = line.slice(1).map((p, i) => Math.hypot(p.x - line[i].x, p.y - line[i].y));
  let left = f * lengths.reduce((a, b) => a + b, 0);
  let i = 0;
  while (i < lengths.length - 1 && left > lengths[i]) left -= lengths[i++];
  const a = line[i];
  const b = line[i + 1];
  const len = lengths[i] || 1;
  const t = Math.min(1, left / len);
  return { at: { x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t }, nx: -(b.y - a.y) / len, ny: (b.x - a.x) / len };
}

interface Geometry {
  e: EdgeSingular;
  /** the label's size, model px */
  label: { w: number; h: number };
  mid: Point;
  from: Point;
  to: Point;
  /** where an edge routed around nodes bends, source end first; none for the others */
  bends: Point[];
}

const known = new WeakMap<EdgeSingular, { key: string; geometry: Geometry }>();

let measurer: CanvasRenderingContext2D | null = null;

/**
 * An edge label's size, measured in its own font. Not Cytoscape's label box: in the frame
 * after a step changed a label, that box could still have the old label's size (a shape's
 * `[16]` for a gradient's bold `‖·‖ 0.0845`), and the label was placed over a node.
 */
function labelSize(e: EdgeSingular): { w: number; h: number } {
  const text = String(e.data("label"));
  const size = e.numericStyle("font-size");
  const pad = e.numericStyle("text-background-padding");
  measurer ??= document.createElement("canvas").getContext("2d");
  if (measurer) measurer.font = `${e.style("font-style")} ${e.style("font-weight")} ${size}px ${e.style("font-family")}`;
  const width = measurer ? measurer.measureText(text).width : text.length * size * 0.62; // a monospace advance
  return { w: width + 2 * pad, h: size * 1.25 + 2 * pad };
}

/**
 * An edge's label size and line, as Cytoscape draws them. Asking costs ~15 us an edge, so
 * it is kept until the label, its look (rank) or either end node moves or resizes: a step
 * changes a few labels, not the hundreds a graph has.
 */
function geometryOf(e: EdgeSingular): Geometry {
  const s = e.source();
  const t = e.target();
  const sp = s.position();
  const tp = t.position();
  // a node's size is its data's (graph-style maps width and height from it)
  const key = `${e.data("label")}|${rank(e)}|${e.data("routeD") ?? ""}|${sp.x},${sp.y},${s.data("width")},${s.data("height")}|${tp.x},${tp.y},${t.data("width")},${t.data("height")}`;
  const kept = known.get(e);
  if (kept?.key === key) return kept.geometry;
  const bends = e.data("routeW") === undefined ? [] : segmentPointsOf(e);
  const geometry = { e, label: labelSize(e), mid: e.midpoint(), from: e.sourceEndpoint(), to: e.targetEndpoint(), bends };
  known.set(e, { key, geometry });
  return geometry;
}

/** The points where edge `e`, drawn as segments, bends. */
function segmentPointsOf(e: EdgeSingular): Point[] {
  return (e.segmentPoints() ?? []).map(({ x, y }) => ({ x, y }));
}

/**
 * Whether node or edge `el` is not where it will be drawn: not built yet at the tape's
 * scrubber (hidden), or waiting for the layout, not drawn (NOTE [Nothing drawn before it is
 * placed] in graph-sync.ts; a step opened from a link while the run's graph was laid out
 * placed labels between new nodes at the origin, and an edge hidden so has no midpoint).
 */
export function drawnLater(el: NodeSingular | EdgeSingular): boolean {
  return el.hasClass("future") || el.hasClass("unplaced");
}

/** Place every shown edge label of `cy` (see the top of this file). */
export function placeEdgeLabels(cy: Core): void {
  const obstacles = new Obstacles();
  cy.nodes().forEach((n: NodeSingular) => {
    if (n.hasClass("future")) return; // not built yet at the tape's scrubber: hidden
    if (n.isParent()) {
      obstacles.add(n.boundingBox(LABEL_ONLY)); // a module group is a frame: only its name is in the way
    } else {
      // the body: graph-build sizes each node for its widest label (a leaf's .grad included)
      const p = n.position();
      const w = n.outerWidth() / 2;
      const h = n.outerHeight() / 2;
      obstacles.add({ x1: p.x - w, y1: p.y - h, x2: p.x + w, y2: p.y + h });
    }
  });
  const edges: EdgeSingular[] = [];
  cy.edges().forEach((e: EdgeSingular) => {
    if (e.data("label") && !e.hasClass("idle") && !drawnLater(e) && !drawnLater(e.source()) && !drawnLater(e.target())) edges.push(e);
  });
  edges.sort((a, b) => rank(a) - rank(b));
  // read every edge's geometry before moving any label (a read after a write recomputes);
  // an edge between nodes on one spot has no line: its midpoint is NaN, and so was its margin
  const geometry = edges.map(geometryOf).filter(({ mid, from, to }) => [mid.x, mid.y, from.x, from.y, to.x, to.y].every(Number.isFinite));
  const margins = geometry.map((g) => {
    const { label, mid } = g;
    const w = label.w / 2 + Math.max(GAP, SIDE_GAP * label.h);
    const h = label.h / 2 + GAP;
    const boxAt = (at: Point): Box => ({ x1: at.x - w, y1: at.y - h, x2: at.x + w, y2: at.y + h });
    let best = mid;
    let bestCost = Infinity;
    for (const at of candidates(g, w, h)) {
      const cost = obstacles.covered(boxAt(at));
      if (cost < bestCost) {
        best = at;
        bestCost = cost;
        if (cost === 0) break;
      }
    }
    obstacles.add(boxAt(best));
    return { dx: best.x - mid.x, dy: best.y - mid.y };
  });
  cy.batch(() => {
    geometry.forEach(({ e }, i) => {
      const { dx, dy } = margins[i];
      if (e.numericStyle("text-margin-x") !== dx || e.numericStyle("text-margin-y") !== dy) {
        e.style({ "text-margin-x": dx, "text-margin-y": dy });
      }
    });
  });
}
