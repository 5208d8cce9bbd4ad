// Where the graph's viewport goes on a fit: the whole graph, at most life-size; a graph too
// big to read whole is shown from its top (the loss, where backward starts) at a zoom where
// its labels show, as wide as the pane. Pure functions of a Cytoscape core (graph.ts decides
// when to call them).
import type { CollectionReturnValue, Core, SingularElementReturnValue } from "cytoscape";
import { leastShift, reducedMotion } from "./dom";
import type { Box } from "./graph-offscreen";

/**
 * A pane is often too short to fit a whole graph at a size whose labels show (node text
 * under 7 px is hidden): lesson-sized graphs, and any graph the stepper walks, are kept at
 * this zoom or more, top first. The Fit button still shows everything.
 */
export const READABLE_ZOOM = 0.62;
export const READABLE_MAX_NODES = 60;
/**
 * A lesson-sized graph (READABLE_MAX_NODES or fewer) too big to show whole at READABLE_ZOOM
 * is read, not surveyed: it is shown in part at this zoom, where an op's label is 10 px (14
 * in presenter type), its top first and the rest a pan away; a wider or taller pane shows
 * more of it. Fitted to the pane's width instead, a small network's labels were 8 px at
 * 1280 x 720 (presenter type's bigger nodes only made that fit smaller), and a narrow lesson
 * graph went to life size in a short pane, showing two of its four rows.
 */
export const LESSON_ZOOM = 0.85;
const LIFE_SIZE_MAX = 1.4;
/**
 * Presenter type's smallest node label, in screen px: what reads from the back of a room.
 * A lesson-sized graph fitted to a 1280 x 720 projector's graph pane went to zoom 0.64 to
 * 0.7, its labels 10 to 11 px; it is now shown in part at LESSON_ZOOM or the zoom that keeps
 * them this big, whichever is more (13.6 px: every node's label is an op's 16 px in
 * presenter type), the rest a pan away and the Fit button showing it all.
 */
export const PRESENTER_LABEL_PX = 13.5;

export interface FitOptions {
  animate: boolean;
  /** Thousands of nodes: fit their boxes, not their labels (measuring labels is the slow part). */
  big: boolean;
  /** Keep the graph readable (false: the Fit button, which shows everything). */
  readable: boolean;
  /** The stepper's element, kept in view at a readable zoom; null outside the stepper. */
  focus: string | null;
  /** What lies over the pane's edges (the "7 more ▸" cues): the focus is kept clear of it. */
  covers?: readonly Box[];
  /** The smallest node label a lesson-sized graph is shown at, in screen px (presenter
   * type's {@link PRESENTER_LABEL_PX}); null: READABLE_ZOOM's. */
  labelPx?: number | null;
}

/** Fit the visible elements of `cy` in view as {@link FitOptions} say. */
export function fitGraph(cy: Core, { animate, big, readable, focus, covers = [], labelPx = null }: FitOptions): void {
  const visible = cy.elements(":visible");
  if (!visible.length) return;
  // A pan still animating (a step followed) would land after the fit and undo it.
  cy.stop(true);
  if (animate && !big && !reducedMotion()) cy.animate({ fit: { eles: visible, padding: 24 } }, { duration: 250 });
  else if (!big) cy.fit(visible, 24);
  else {
    const bb = visible.nodes().boundingBox({ includeLabels: false, includeOverlays: false });
    const zoom = Math.max(cy.minZoom(), Math.min((cy.width() - 48) / Math.max(bb.w, 1), (cy.height() - 48) / Math.max(bb.h, 1)));
    cy.viewport({ zoom, pan: { x: cy.width() / 2 - ((bb.x1 + bb.x2) / 2) * zoom, y: cy.height() / 2 - ((bb.y1 + bb.y2) / 2) * zoom } });
  }
  if (cy.zoom() > LIFE_SIZE_MAX) {
    cy.zoom(LIFE_SIZE_MAX);
    cy.center(visible);
    return;
  }
  const lessonSized = cy.nodes().length <= READABLE_MAX_NODES;
  const floor = lessonSized && labelPx ? Math.max(READABLE_ZOOM, zoomForLabels(cy, labelPx)) : READABLE_ZOOM;
  if (readable && cy.zoom() < floor && (focus || lessonSized)) {
    topFirst(cy, lessonSized ? Math.max(LESSON_ZOOM, floor) : readableZoom(cy), 16);
    if (focus) nudgeInto(cy, cy.getElementById(focus), covers);
  } else if (readable && cy.zoom() < 0.2) {
    topFirst(cy, 0.55, 24);
  }
}

/** The zoom at which the smallest label of `cy`'s visible nodes is `px` screen px (at most life-size). */
function zoomForLabels(cy: Core, px: number): number {
  const sizes = cy.nodes(":visible").filter((n) => n.isChildless() && !!n.data("label")).map((n) => n.numericStyle("font-size"));
  const smallest = sizes.length ? Math.min(...sizes) : 0;
  return smallest > 0 ? Math.min(LIFE_SIZE_MAX, px / smallest) : READABLE_ZOOM;
}

/**
 * The zoom of a graph of more than READABLE_MAX_NODES too big to fit whole: as wide as the
 * pane allows (a pane widened by its divider shows the graph bigger), at most life-size, and
 * never under READABLE_ZOOM.
 */
function readableZoom(cy: Core): number {
  const bb = cy.elements(":visible").nodes().boundingBox({ includeLabels: false, includeOverlays: false });
  const across = (cy.width() - 48) / Math.max(bb.w, 1);
  return Math.max(READABLE_ZOOM, Math.min(1, across));
}

/**
 * Zoom to `zoom`, the graph's top (a module group's name above it included) `margin` px below
 * the pane's top, centred across; a graph wider than the pane starts at its left edge (centred, it lost a column of nodes on each
 * side) and is then panned the least that shows its top node (the loss, where backward
 * starts), which the left of a wide graph could leave out of view, showing only the empty
 * tops of module groups.
 */
function topFirst(cy: Core, zoom: number, margin: number): void {
  const nodes = cy.elements(":visible").nodes();
  const bb = nodes.boundingBox({ includeLabels: false, includeOverlays: false });
  // a module group's name is drawn above its box: the top group's (`loss_fn`) was cut in half
  const groups = nodes.filter((n) => n.isParent());
  const y1 = groups.nonempty() ? Math.min(bb.y1, groups.boundingBox({ includeLabels: true, includeOverlays: false }).y1) : bb.y1;
  const wide = bb.w * zoom > cy.width() - 2 * margin;
  const x = wide ? margin - bb.x1 * zoom : cy.width() / 2 - ((bb.x1 + bb.x2) / 2) * zoom;
  cy.viewport({ zoom, pan: { x, y: margin - y1 * zoom } });
  if (!wide) return;
  // the topmost node of the graph (a module group's box is not one)
  const top = nodes.filter((n) => n.isChildless()).min((n) => n.boundingBox({ includeLabels: false, includeOverlays: false }).y1);
  if (!top.ele) return;
  // Out of view from the left edge, it is brought to the middle (as far as the graph goes
  // on to the right), not just inside the pane's edge: an MLP's MseLossBackward0, laid out
  // right of its network, sat in the far corner with its long edge leaving the pane.
  const box = top.ele.renderedBoundingBox({ includeLabels: false, includeOverlays: false });
  if (box.x2 > cy.width() - margin) {
    const right = bb.x2 * zoom + x; // the graph's right edge, rendered
    cy.panBy({ x: Math.min(0, Math.max(cy.width() / 2 - (box.x1 + box.x2) / 2, cy.width() - margin - right)), y: 0 });
  }
  nudgeInto(cy, top.ele);
}

/**
 * What must show with element `el`: an AccumulateGrad with the leaf it writes `.grad` into
 * (the step's point, `x.grad: None → 14.75`); anything else alone. Presenter type's
 * bigger zoom showed the first lesson's AccumulateGrad step with its leaf cut off below.
 */
function withItsLeaf(el: CollectionReturnValue | SingularElementReturnValue): CollectionReturnValue {
  const leaf = el.filter("node[kind = 'acc']").outgoers("edge[kind = 'acc']").targets(":visible");
  return el.union(leaf);
}

/** Within this many rendered px of a running node, the labels of the gradients it sends show with it. */
const NEAR_LABELS = 120;

/**
 * The box (rendered px) that must show for element `el`: it and its leaf ({@link withItsLeaf}),
 * and for a node the stepper runs, the labels near it of the gradients it sends now, where
 * they fit in the pane with it. A step opened at 1024 x 768 in presenter type left the
 * running AddmmBackward0 at the pane's bottom edge, its gradients' numbers cut off under it.
 */
function mustShow(cy: Core, el: CollectionReturnValue | SingularElementReturnValue): Box {
  const own = withItsLeaf(el).renderedBoundingBox({ includeLabels: false, includeOverlays: true });
  const box = { x1: own.x1, x2: own.x2, y1: own.y1, y2: own.y2 };
  el.filter("node").outgoers("edge.flowing").forEach((e) => {
    const b = e.renderedBoundingBox({ includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false });
    const near = b.w > 0 && b.h > 0 && b.x2 > own.x1 - NEAR_LABELS && b.x1 < own.x2 + NEAR_LABELS && b.y1 < own.y2 + NEAR_LABELS && b.y2 > own.y1 - NEAR_LABELS;
    if (!near) return;
    const grown = { x1: Math.min(box.x1, b.x1), x2: Math.max(box.x2, b.x2), y1: Math.min(box.y1, b.y1), y2: Math.max(box.y2, b.y2) };
    if (grown.x2 - grown.x1 <= cy.width() - 48 && grown.y2 - grown.y1 <= cy.height() - 48) Object.assign(box, grown);
  });
  return box;
}

/** Pan the least distance that brings element `el` wholly into view. */
function nudgeInto(cy: Core, el: CollectionReturnValue | SingularElementReturnValue, covers: readonly Box[] = []): void {
  if (!el.nonempty()) return;
  const box = mustShow(cy, el);
  const { dx, dy } = leastPan(box, cy, 24);
  const moved = { x1: box.x1 + dx, x2: box.x2 + dx, y1: box.y1 + dy, y2: box.y2 + dy };
  const by = clearOf(moved, covers, { width: cy.width(), height: cy.height() }, { x: dx, y: dy });
  if (by.x || by.y) cy.panBy(by);
}

/**
 * The pan that brings element `el` into view, or null when it is wholly in view already
 * (its box, not its centre: a node drawn whole at the pane's top, where a top-first fit puts
 * the loss 16 px down, is in view, and centring it hid the graph's lower half). Down, the
 * node is centred, so the nodes it sends gradients to (the walk's next steps) show too;
 * across, the pan is the least that shows it (centring cut a graph as wide as the pane off
 * at one side).
 */
export function revealPan(cy: Core, el: SingularElementReturnValue): { x: number; y: number } | null {
  // the running node's highlight ring is part of what must show
  const box = mustShow(cy, el);
  const { dx, dy } = leastPan(box, cy, 0);
  if (!dx && !dy) return null;
  return { x: leastPan(box, cy, 24).dx, y: dy ? cy.height() / 2 - (box.y1 + box.y2) / 2 : 0 };
}

/**
 * Pan the view of `cy` by `by` rendered px: a short glide, or at once when `instant` (a big
 * graph, slow to redraw) or when the user asked for less motion.
 */
export function panView(cy: Core, by: { x: number; y: number }, instant = false): void {
  if (instant || reducedMotion()) cy.panBy(by);
  else cy.animate({ panBy: by }, { duration: 200 });
}

/**
 * Bring `el` into view when it is not wholly in it (see revealPan); a pan still under way
 * (steps in quick succession) stops where it is, so the next is measured from there, not
 * queued after it from a view that has since moved. Returns whether the view moved.
 */
export function revealElement(cy: Core, el: SingularElementReturnValue, instant: boolean, covers: readonly Box[] = []): boolean {
  cy.stop(true);
  const pan = revealPan(cy, el) ?? { x: 0, y: 0 };
  const box = mustShow(cy, el);
  const by = clearOf({ x1: box.x1 + pan.x, x2: box.x2 + pan.x, y1: box.y1 + pan.y, y2: box.y2 + pan.y }, covers, { width: cy.width(), height: cy.height() }, pan);
  if (!by.x && !by.y) return false;
  panView(cy, by, instant);
  return true;
}

/**
 * `pan`, and more where `box` (where `pan` puts the element) would lie under one of `covers` (the "7 more
 * ▸" cues at the pane's edges, which hid the stepper's running node): the least move, across
 * or down, that takes the box 8 px clear of it, toward the pane's middle.
 */
export function clearOf(box: Box, covers: readonly Box[], pane: { width: number; height: number }, pan: { x: number; y: number }): { x: number; y: number } {
  const by = { ...pan };
  for (const c of covers) {
    const b = { x1: box.x1 + by.x - pan.x, x2: box.x2 + by.x - pan.x, y1: box.y1 + by.y - pan.y, y2: box.y2 + by.y - pan.y };
    if (b.x2 <= c.x1 || b.x1 >= c.x2 || b.y2 <= c.y1 || b.y1 >= c.y2) continue;
    const across = (c.x1 + c.x2) / 2 > pane.width / 2 ? c.x1 - 8 - b.x2 : c.x2 + 8 - b.x1;
    const down = (c.y1 + c.y2) / 2 > pane.height / 2 ? c.y1 - 8 - b.y2 : c.y2 + 8 - b.y1;
    if (Math.abs(across) <= Math.abs(down)) by.x += across;
    else by.y += down;
  }
  return by;
}

/** Zoom the view of `cy` by `factor` about its centre, within its zoom limits. */
export function zoomAboutCentre(cy: Core, factor: number): void {
  const level = Math.min(cy.maxZoom(), Math.max(cy.minZoom(), cy.zoom() * factor));
  cy.zoom({ level, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
}

/**
 * The least pan that brings a rendered box `margin` px inside the viewport of `cy`; a box
 * bigger than the viewport keeps its top (left) edge in view.
 */
export function leastPan(box: { x1: number; x2: number; y1: number; y2: number }, cy: Core, margin: number): { dx: number; dy: number } {
  return {
    dx: leastShift(box.x1, box.x2, margin, cy.width() - margin),
    dy: leastShift(box.y1, box.y2, margin, cy.height() - margin),
  };
}
