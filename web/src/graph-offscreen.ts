// Cues at the graph pane's edges where the graph goes on past them ("3 more ▸"). A
// lesson-sized graph too big to read whole opens at a zoom where its labels show, its top
// first (graph-viewport.ts), and what lay past the pane's edge was easy to miss: control_flow
// with its saved tensors opened with h's leaf in view and w's, and the graph the `if` left
// dangling, cut off on the right with nothing saying so. Each cue counts the nodes that way;
// clicking it pans there. The Fit button still shows everything.
import type { Core, NodeSingular } from "cytoscape";
import { h, perFrame } from "./dom";
import { drawnLater } from "./graph-labels";
import { panView } from "./graph-viewport";

export type Side = "left" | "right" | "up" | "down";
const SIDES: readonly Side[] = ["left", "right", "up", "down"];
const ARROWS: Record<Side, string> = { left: "◂", right: "▸", up: "▴", down: "▾" };
const WHERE: Record<Side, string> = { left: "to the left", right: "to the right", up: "above", down: "below" };

/** Whether `side` is towards the graph's start (left, up): its cue's arrow comes first, its pan is positive. */
const towardsStart = (side: Side) => side === "left" || side === "up";

/** Node centres in the graph's own coordinates, x and y interleaved. */
export type Centres = Float64Array;

/** Where the graph is drawn in a pane: rendered = model × zoom + pan, in a width × height pane. */
export interface Viewport {
  zoom: number;
  pan: { x: number; y: number };
  width: number;
  height: number;
}

/**
 * How many nodes lie past each edge of the pane (a node past a corner counts on both sides):
 * their centres, or given each node's `halves` (half width and height, graph coordinates, in
 * the order of `centres`), a node of which a third or more is cut off by the edge. Presenter
 * type showed accumulate's PowBackward0 cut to "PowBackw…" at the right edge, its centre
 * just inside, and no cue said there was more.
 */
export function countBeyond(centres: Centres, view: Viewport, halves?: Float64Array): Record<Side, number> {
  const counts: Record<Side, number> = { left: 0, right: 0, up: 0, down: 0 };
  const { zoom, pan, width, height } = view;
  for (let i = 0; i < centres.length; i += 2) {
    const x = centres[i] * zoom + pan.x;
    const y = centres[i + 1] * zoom + pan.y;
    // from the centre, a sixth of the node's size on: a third of it past the edge
    const cx = halves ? ((halves[i] ?? 0) * zoom) / 3 : 0;
    const cy = halves ? ((halves[i + 1] ?? 0) * zoom) / 3 : 0;
    if (x - cx < 0) counts.left++;
    else if (x + cx > width) counts.right++;
    if (y - cy < 0) counts.up++;
    else if (y + cy > height) counts.down++;
  }
  return counts;
}

/**
 * The pan (rendered px) a cue on `side` makes: far enough that the farthest node that way
 * comes `margin` px inside the pane (its centre; given `halves`, as countBeyond's, its far
 * edge), but at most 80% of the pane, so that a fifth of what was in view stays in view and
 * the eye can follow where the graph went.
 */
export function panToward(side: Side, centres: Centres, view: Viewport, margin = 60, halves?: Float64Array): { x: number; y: number } {
  const across = side === "left" || side === "right";
  const { zoom, pan, width, height } = view;
  const size = across ? width : height;
  const offset = across ? pan.x : pan.y;
  const start = towardsStart(side);
  let far = start ? Infinity : -Infinity;
  for (let i = across ? 0 : 1; i < centres.length; i += 2) {
    const reach = halves ? (halves[i] ?? 0) * zoom : 0;
    const at = centres[i] * zoom + offset + (start ? -reach : reach);
    far = start ? Math.min(far, at) : Math.max(far, at);
  }
  if (!Number.isFinite(far)) return { x: 0, y: 0 };
  const limit = 0.8 * size;
  // positive: the graph moves right (or down), showing what was to the left (or above)
  const by = start ? Math.min(limit, Math.max(0, margin - far)) : -Math.min(limit, Math.max(0, far - (size - margin)));
  return across ? { x: by, y: 0 } : { x: 0, y: by };
}

/** A box in a pane's px: left, right, top, bottom. */
export interface Box {
  x1: number;
  x2: number;
  y1: number;
  y2: number;
}

/** A cue's distance from the pane's edge, and the room it keeps from a node (px). */
const EDGE = 6;
const PAD = 3;
/**
 * Edge labels are kept clear of on graphs of up to this many edges: reading every label's
 * box each frame of a pan is what a bigger graph cannot afford (its labels are hidden when
 * zoomed out anyway).
 */
const LABELLED_MAX_EDGES = 400;
/**
 * How much worse a cue's px over text (a node's or an edge's label, a group's name, another
 * cue) is than one over a node's box: where no spot is free, a cue over a node's rim still
 * hid nothing read, one over a label hid the word.
 */
const TEXT_WEIGHT = 4;
/** Box-drawing options that give a node's label alone. */
const LABEL_ONLY = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false };

/** Something a cue keeps off, and what covering a px of it costs. */
interface Obstacle extends Box {
  weight: number;
}

/** A node's box in the pane's px, and its place in the order of the cues' `centres`. */
interface NodeBox extends Obstacle {
  index: number;
}

/** A cue's best spot along its edge: its box, what it covers (weighted), and how many of those px are text. */
interface Spot {
  box: Box;
  cover: number;
  text: number;
}

/** The area two boxes share (0 when apart). */
function overlap(a: Box, b: Box): number {
  const w = Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1);
  const h = Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1);
  return w > 0 && h > 0 ? w * h : 0;
}

/**
 * Where along its edge a cue may go, nearest `start` first, 4 px apart, within [lo, hi]:
 * a corner cue (`fromEnd`) from `start` (the right corner) leftward, a side cue outward from
 * `start` (the edge's middle) both ways.
 */
export function* candidates(start: number, lo: number, hi: number, fromEnd: boolean): Generator<number> {
  const step = 4;
  if (fromEnd) {
    for (let at = start; at >= lo; at -= step) yield at;
    return;
  }
  yield start;
  for (let d = step; start - d >= lo || start + d <= hi; d += step) {
    if (start - d >= lo) yield start - d;
    if (start + d <= hi) yield start + d;
  }
}

/** The four cues of one graph pane, kept up to date as the view moves. */
export class OffscreenCues {
  readonly element: HTMLElement;
  private readonly buttons = new Map<Side, HTMLButtonElement>();
  private centres: Centres = new Float64Array(0);
  /** Each node's half width and half height (graph coordinates), in the order of `centres`. */
  private halves: Float64Array = new Float64Array(0);
  /** The nodes, in the order of `centres`. */
  private nodes: NodeSingular[] = [];
  /**
   * Each node's label box about its centre (graph coordinates; null: no label), read when a
   * cue's strip first meets the node and kept until a node's label or style changes: a pan
   * moves it with the node, and reads no box.
   */
  private labels: (Box | null | undefined)[] = [];
  private cy: Core | null = null;
  private readonly update = perFrame(() => this.show());

  /** `moved` is told when a cue pans the view (the user moved it: no refit undoes that). */
  constructor(private readonly moved: () => void) {
    this.element = h("div", { class: "gw-offscreen" });
    for (const side of SIDES) {
      const button = h("button", { type: "button", class: `gw-offscreen-cue gw-offscreen-${side}`, hidden: true, data: { side } });
      button.addEventListener("click", () => this.go(side));
      this.buttons.set(side, button);
      this.element.append(button);
    }
  }

  /** The cues on screen, as boxes in the pane's own px (Cytoscape's rendered coordinates). */
  covers(): Box[] {
    const pane = this.element.getBoundingClientRect();
    return [...this.buttons.values()]
      .filter((b) => !b.hidden)
      .map((b) => b.getBoundingClientRect())
      .map((r) => ({ x1: r.left - pane.left, x2: r.right - pane.left, y1: r.top - pane.top, y2: r.bottom - pane.top }));
  }

  /** Follow a new Cytoscape core (the view makes a new one for a new run or a big graph). */
  attach(cy: Core): void {
    this.cy = cy;
    this.centres = new Float64Array(0);
    this.halves = new Float64Array(0);
    this.nodes = [];
    this.labels = [];
    cy.on("viewport resize", this.update);
    // a step writes a leaf's .grad into its label, and restyles the nodes it ran
    cy.on("data style", "node", () => {
      this.labels = [];
      this.update();
    });
    // a step writes new labels on the edges (a gradient's numbers), and they are then slid off
    // the nodes (graph-labels.ts): the cues move off them again
    cy.on("data style", "edge", this.update);
    this.update();
  }

  /** Read the nodes' places again: call after a layout, or after nodes were shown or hidden. */
  refresh(): void {
    const cy = this.cy;
    if (!cy) return;
    // group boxes are drawn around their members, which count; a folded group is one node.
    // Shown is read off the classes that hide (graph-style.ts): called as the layout's new
    // nodes are shown, ":visible" could still read them hidden, and the cues stayed empty
    const nodes = cy.nodes().filter((n) => n.isChildless() && !drawnLater(n));
    const centres = new Float64Array(nodes.length * 2);
    const halves = new Float64Array(nodes.length * 2);
    nodes.forEach((n, i) => {
      const p = n.position();
      centres[2 * i] = p.x;
      centres[2 * i + 1] = p.y;
      halves[2 * i] = n.outerWidth() / 2;
      halves[2 * i + 1] = n.outerHeight() / 2;
    });
    this.centres = centres;
    this.halves = halves;
    this.nodes = nodes.toArray() as NodeSingular[];
    this.labels = [];
    this.update();
  }

  private viewport(): Viewport | null {
    const cy = this.cy;
    if (!cy || cy.destroyed()) return null;
    return { zoom: cy.zoom(), pan: cy.pan(), width: cy.width(), height: cy.height() };
  }

  private show(): void {
    const view = this.viewport();
    const counts = view ? countBeyond(this.centres, view, this.halves) : { left: 0, right: 0, up: 0, down: 0 };
    for (const side of SIDES) {
      const button = this.buttons.get(side) as HTMLButtonElement;
      const n = counts[side];
      button.hidden = n === 0;
      if (!n) continue;
      const what = `${n} more node${n === 1 ? "" : "s"} ${WHERE[side]}`;
      this.setWords(button, side, n, false);
      button.title = `${what}: click to pan there (Fit shows the whole graph)`;
      button.setAttribute("aria-label", `${what}: pan there`);
    }
    if (view) this.place(view, counts);
  }

  /** A cue's words: "3 more ▾", or in `short` its arrow and count alone ("3 ▾"; its title and aria-label say the rest). */
  private setWords(button: HTMLButtonElement, side: Side, n: number, short: boolean): void {
    const words = short ? `${n}` : `${n} more`;
    button.textContent = towardsStart(side) ? `${ARROWS[side]} ${words}` : `${words} ${ARROWS[side]}`;
    button.toggleAttribute("data-short", short);
  }

  /**
   * Put each cue shown at its edge where it covers no node: a cue at a fixed spot sat on a
   * node's label (control_flow's MaxBackward1 under "11 more ▸" in presenter type). Left and
   * right cues slide up and down from their edge's middle, the corner ones (up, down) leftward
   * from the right corner; where every spot covers some node or label, the one that covers
   * least, a px of text (a node's label, an edge's, a group's name) counting TEXT_WEIGHT times
   * a px of a node's box. Where even that hides text, the cue shrinks to its arrow and count
   * ("3 ▾") if that hides less: at 1024 x 768 "3 more ▾" covered rent_regression's
   * "model.weightᵀ", the only spot along the edge free of text too narrow for its words.
   */
  private place(view: Viewport, counts: Record<Side, number>): void {
    const { width, height } = view;
    if (width <= 0 || height <= 0) return;
    const nodes = this.nodeBoxes(view);
    const labels = this.labelBoxes();
    const taken: Obstacle[] = [];
    for (const side of ["up", "down", "right", "left"] as const) {
      const button = this.buttons.get(side) as HTMLButtonElement;
      if (button.hidden) continue;
      let best = this.spot(side, button, view, nodes, labels, taken);
      if (best && best.text > 0) {
        this.setWords(button, side, counts[side], true);
        const short = this.spot(side, button, view, nodes, labels, taken);
        if (short && short.cover < best.cover) best = short;
        else this.setWords(button, side, counts[side], false);
      }
      if (!best) continue;
      taken.push({ ...best.box, weight: TEXT_WEIGHT });
      button.style.left = `${Math.round(best.box.x1)}px`;
      button.style.top = `${Math.round(best.box.y1)}px`;
      button.style.right = "auto";
      button.style.bottom = "auto";
      button.style.transform = "none";
    }
  }

  /** The spot along `side`'s edge where `button`, as big as it is now, covers least. */
  private spot(side: Side, button: HTMLButtonElement, view: Viewport, nodes: NodeBox[], labels: Obstacle[], taken: Obstacle[]): Spot | null {
    const { width, height } = view;
    const w = button.offsetWidth;
    const h = button.offsetHeight;
    const across = side === "up" || side === "down";
    const fixed = side === "left" ? EDGE : side === "right" ? width - EDGE - w : side === "up" ? EDGE : height - EDGE - h;
    const lo = EDGE;
    const hi = Math.max(lo, (across ? width - w : height - h) - EDGE);
    const start = across ? hi : Math.min(hi, Math.max(lo, (height - h) / 2));
    // what reaches into this cue's strip along its edge: the nodes there, their labels, the
    // edge labels and group names, the cues placed already
    const strip: Box = across ? { x1: 0, x2: width, y1: fixed, y2: fixed + h } : { x1: fixed, x2: fixed + w, y1: 0, y2: height };
    const near: Obstacle[] = [];
    for (const b of nodes) {
      if (overlap(b, strip) <= 0) continue;
      near.push(b);
      const label = this.nodeLabelBox(b.index, view);
      if (label && overlap(label, strip) > 0) near.push(label);
    }
    for (const b of labels.concat(taken)) if (overlap(b, strip) > 0) near.push(b);
    let best: Spot | null = null;
    for (const at of candidates(start, lo, hi, across)) {
      const box: Box = across ? { x1: at, x2: at + w, y1: fixed, y2: fixed + h } : { x1: fixed, x2: fixed + w, y1: at, y2: at + h };
      let cover = 0;
      let text = 0;
      for (const b of near) {
        const px = overlap(b, box);
        cover += px * b.weight;
        if (b.weight > 1) text += px;
      }
      if (!best || cover < best.cover) best = { box, cover, text };
      if (cover === 0) break;
    }
    return best;
  }

  /** Node `i`'s label box in the pane's px, a little bigger than drawn (null: no label drawn). */
  private nodeLabelBox(i: number, view: Viewport): Obstacle | null {
    let box = this.labels[i];
    if (box === undefined) {
      const node = this.nodes[i];
      const b = node && !node.removed() ? node.boundingBox(LABEL_ONLY) : null;
      const p = node && !node.removed() ? node.position() : null;
      box = b && p && b.w > 0 && b.h > 0 ? { x1: b.x1 - p.x, x2: b.x2 - p.x, y1: b.y1 - p.y, y2: b.y2 - p.y } : null;
      this.labels[i] = box;
    }
    if (!box) return null;
    const { zoom, pan } = view;
    const x = this.centres[2 * i] * zoom + pan.x;
    const y = this.centres[2 * i + 1] * zoom + pan.y;
    return { x1: x + box.x1 * zoom - PAD, x2: x + box.x2 * zoom + PAD, y1: y + box.y1 * zoom - PAD, y2: y + box.y2 * zoom + PAD, weight: TEXT_WEIGHT };
  }

  /** The nodes' boxes in the pane's px, a little bigger than drawn (a cue touching a label reads as on it). */
  private nodeBoxes(view: Viewport): NodeBox[] {
    const { zoom, pan, width, height } = view;
    const c = this.centres;
    const half = this.halves;
    const out: NodeBox[] = [];
    for (let i = 0; i < c.length; i += 2) {
      const x = c[i] * zoom + pan.x;
      const y = c[i + 1] * zoom + pan.y;
      const hw = (half[i] ?? 0) * zoom + PAD;
      const hh = (half[i + 1] ?? 0) * zoom + PAD;
      if (x + hw < 0 || x - hw > width || y + hh < 0 || y - hh > height) continue;
      out.push({ x1: x - hw, x2: x + hw, y1: y - hh, y2: y + hh, weight: 1, index: i / 2 });
    }
    return out;
  }

  /**
   * The boxes of the edge labels and module groups' names shown, in the pane's px, a little
   * bigger than drawn: the nodes' boxes alone left a cue free to sit on one ("▴ 7 more" over
   * the `.grad` into data-edit's model.2.weight in presenter type; "3 more ▸" over the
   * training loop's "MLP" and "MLP.net" at 1280 x 720). An idle call's labels are not drawn.
   */
  private labelBoxes(): Obstacle[] {
    const cy = this.cy;
    if (!cy) return [];
    const only = LABEL_ONLY;
    // a group is a frame around its members: only its name is in the way (a few per graph)
    const groups = cy.nodes(":parent:visible");
    const edges = cy.edges().length > LABELLED_MAX_EDGES ? [] : cy.edges(":visible").filter((e) => !!e.data("label") && !e.hasClass("idle"));
    return [...groups, ...edges]
      .map((e) => e.renderedBoundingBox(only))
      .filter((b) => b.w > 0 && b.h > 0)
      .map((b) => ({ x1: b.x1 - PAD, x2: b.x2 + PAD, y1: b.y1 - PAD, y2: b.y2 + PAD, weight: TEXT_WEIGHT }));
  }

  private go(side: Side): void {
    const cy = this.cy;
    const view = this.viewport();
    if (!cy || !view) return;
    const by = panToward(side, this.centres, view, 24, this.halves);
    if (!by.x && !by.y) return;
    cy.stop(true);
    panView(cy, by);
    this.moved();
  }
}
