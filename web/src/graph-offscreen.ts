// Cues at the graph pane's edges where the graph goes on past them ("3 more ▸"). A
// lesson-sized graph too big to read whole opens at a zoom where its labels show, its top
// first (graph-viewport.ts), and what lay past the pane's edge was easy to miss: control_flow
// with its saved tensors opened with h's leaf in view and w's, and the graph the `if` left
// dangling, cut off on the right with nothing saying so. Each cue counts the nodes that way;
// clicking it pans there. The Fit button still shows everything.
import type { Core } from "cytoscape";
import { h, perFrame } from "./dom";
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

/** How many node centres lie past each edge of the pane (a node past a corner counts on both sides). */
export function countBeyond(centres: Centres, view: Viewport): Record<Side, number> {
  const counts: Record<Side, number> = { left: 0, right: 0, up: 0, down: 0 };
  const { zoom, pan, width, height } = view;
  for (let i = 0; i < centres.length; i += 2) {
    const x = centres[i] * zoom + pan.x;
    const y = centres[i + 1] * zoom + pan.y;
    if (x < 0) counts.left++;
    else if (x > width) counts.right++;
    if (y < 0) counts.up++;
    else if (y > height) counts.down++;
  }
  return counts;
}

/**
 * The pan (rendered px) a cue on `side` makes: far enough that the farthest node that way
 * comes `margin` px inside the pane, but at most 80% of the pane, so that a fifth of what
 * was in view stays in view and the eye can follow where the graph went.
 */
export function panToward(side: Side, centres: Centres, view: Viewport, margin = 60): { x: number; y: number } {
  const across = side === "left" || side === "right";
  const { zoom, pan, width, height } = view;
  const size = across ? width : height;
  const offset = across ? pan.x : pan.y;
  const start = towardsStart(side);
  let far = start ? Infinity : -Infinity;
  for (let i = across ? 0 : 1; i < centres.length; i += 2) {
    const at = centres[i] * zoom + offset;
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

/** The four cues of one graph pane, kept up to date as the view moves. */
export class OffscreenCues {
  readonly element: HTMLElement;
  private readonly buttons = new Map<Side, HTMLButtonElement>();
  private centres: Centres = new Float64Array(0);
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
    cy.on("viewport resize", this.update);
    this.update();
  }

  /** Read the nodes' places again: call after a layout, or after nodes were shown or hidden. */
  refresh(): void {
    const cy = this.cy;
    if (!cy) return;
    // group boxes are drawn around their members, which count; a folded group is one node
    const nodes = cy.nodes(":visible").filter((n) => n.isChildless());
    const centres = new Float64Array(nodes.length * 2);
    nodes.forEach((n, i) => {
      const p = n.position();
      centres[2 * i] = p.x;
      centres[2 * i + 1] = p.y;
    });
    this.centres = centres;
    this.update();
  }

  private viewport(): Viewport | null {
    const cy = this.cy;
    if (!cy || cy.destroyed()) return null;
    return { zoom: cy.zoom(), pan: cy.pan(), width: cy.width(), height: cy.height() };
  }

  private show(): void {
    const view = this.viewport();
    const counts = view ? countBeyond(this.centres, view) : { left: 0, right: 0, up: 0, down: 0 };
    for (const side of SIDES) {
      const button = this.buttons.get(side) as HTMLButtonElement;
      const n = counts[side];
      button.hidden = n === 0;
      if (!n) continue;
      const what = `${n} more node${n === 1 ? "" : "s"} ${WHERE[side]}`;
      button.textContent = towardsStart(side) ? `${ARROWS[side]} ${n} more` : `${n} more ${ARROWS[side]}`;
      button.title = `${what}: click to pan there (Fit shows the whole graph)`;
      button.setAttribute("aria-label", `${what}: pan there`);
    }
  }

  private go(side: Side): void {
    const cy = this.cy;
    const view = this.viewport();
    if (!cy || !view) return;
    const by = panToward(side, this.centres, view);
    if (!by.x && !by.y) return;
    cy.stop(true);
    panView(cy, by);
    this.moved();
  }
}
