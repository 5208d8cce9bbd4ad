// Keyboard navigation of the graph canvas: which node an arrow key moves to and what a
// screen reader hears about it (pure functions over positions and graph data, unit-tested
// without a browser), and GraphKeyboard, which wires them to the canvas for graph.ts.
import type { Core, NodeSingular } from "cytoscape";
import type { GNode } from "./graph-build";
import type { Store } from "./store";

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

/** What the graph's step classes (graph-steps.ts) mean, in the legend's words. */
const STEP_WORDS: readonly [string, string][] = [
  ["current", "running now"],
  ["done", "ran"],
  ["pending", "still to run"],
  ["idle", "not in this backward call"],
  ["freed", "freed: its saved tensors are gone"],
  ["future", "not made yet at this op"],
];

/**
 * What a screen reader says when keyboard focus lands on `node`; `classes`: its element's
 * classes, whose step looks (running now, ran, still to run, …) it says as the legend does.
 */
export function describeNode(node: GNode, classes: readonly string[] = []): string {
  const label = node.label.replace(/\s*\n\s*/g, ", ");
  const kind = KIND_WORDS[node.kind];
  if (node.kind === "collapsed") return `${label}: ${kind}, ${node.count ?? 0} nodes; Enter unfolds it`;
  if (node.kind === "group") return `${label}: ${kind}; Enter folds it`;
  const looks = STEP_WORDS.filter(([cls]) => classes.includes(cls)).map(([, words]) => words);
  return `${label}: ${kind}${looks.length ? `; ${looks.join(", ")}` : ""}`;
}

/** What GraphKeyboard needs from the graph view. */
export interface KeyboardHost {
  /** The current Cytoscape instance (a view makes a new one for big graphs). */
  readonly cy: Core;
  readonly store: Store;
  /** Do what a click on `el` does. */
  tap(el: NodeSingular): void;
  zoomBy(factor: number): void;
  fit(): void;
  /** Pan element `id` into view. */
  reveal(id: string): void;
  /** Whether only part of the graph is drawn (graph-window.ts). */
  drawnInPart(): boolean;
}

/** What a screen reader hears when no node lies in direction `dir`; `inPart`: the graph is drawn in part. */
export function noNodeText(dir: Direction, inPart: boolean): string {
  const where = dir === "down" ? "below" : dir === "up" ? "above" : `to the ${dir}`;
  const rest = inPart ? " Only part of this graph is drawn: Draw all shows the rest, or pick a node in the tape." : "";
  return `No node ${where}.${rest}`;
}

/**
 * Keys on the focused canvas: arrows move between the nodes drawn, Enter or Space does what
 * a click does, Escape clears the selection, + and − zoom, 0 fits. Handled keys stop there,
 * so the stepper's own arrow keys do not also move the step. The node the keys are on has a
 * ring (the `keyfocus` class) while the canvas has focus, and `announcer` names it.
 */
export class GraphKeyboard {
  private focus: string | null = null;

  constructor(
    canvas: HTMLElement,
    private readonly announcer: HTMLElement,
    private readonly host: KeyboardHost,
  ) {
    canvas.addEventListener("keydown", (ev) => this.onKey(ev));
    // the ring shows where the keys are only while they are (the position is kept)
    canvas.addEventListener("blur", () => this.ring(false));
    canvas.addEventListener("focus", () => this.ring(true));
  }

  /** Forget the position (the view made a new Cytoscape instance). */
  reset(): void {
    this.focus = null;
  }

  /** Forget the position if its element left the graph (after a rebuild). */
  forgetRemoved(): void {
    if (this.focus && !this.host.cy.getElementById(this.focus).nonempty()) this.focus = null;
  }

  private ring(on: boolean): void {
    if (this.focus) this.host.cy.getElementById(this.focus).toggleClass("keyfocus", on);
  }

  private onKey(ev: KeyboardEvent): void {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const host = this.host;
    const dir = ARROWS[ev.key];
    if (dir) this.move(dir);
    else if (ev.key === "Enter" || ev.key === " ") {
      const el = this.focus ? host.cy.getElementById(this.focus) : null;
      if (el?.nonempty()) host.tap(el as unknown as NodeSingular);
    } else if (ev.key === "Escape") {
      this.setFocus(null);
      host.store.set({ selection: null });
    } else if (ev.key === "+" || ev.key === "=") host.zoomBy(1.25);
    else if (ev.key === "-" || ev.key === "−") host.zoomBy(1 / 1.25);
    else if (ev.key === "0") host.fit();
    else return;
    ev.preventDefault();
    ev.stopPropagation();
  }

  private move(dir: Direction): void {
    const cy = this.host.cy;
    // every visible node but module frames
    const nodes: Placed[] = cy.nodes(":visible:childless").map((n: NodeSingular) => ({ id: n.id(), ...n.position() }));
    const selected = cy.$("node:selected");
    const current = this.focus ?? (selected.nonempty() ? selected.first().id() : null);
    const from = current ? nodes.find((n) => n.id === current) : undefined;
    const next = from ? nextInDirection(from, nodes, dir) : startNode(nodes);
    if (next) this.setFocus(next);
    else if (from) this.announcer.textContent = noNodeText(dir, this.host.drawnInPart());
  }

  private setFocus(id: string | null): void {
    const { cy, store } = this.host;
    this.ring(false);
    this.focus = id;
    if (!id) return;
    this.ring(true);
    const el = cy.getElementById(id);
    const d = el.data() as GNode;
    this.announcer.textContent = describeNode(d, el.classes());
    // the inspector follows the keyboard, as it follows clicks (without switching views)
    if (d.node !== undefined) store.set({ selection: { kind: "node", id: d.node } });
    else if (d.tensor !== undefined) store.set({ selection: { kind: "tensor", id: d.tensor } });
    this.host.reveal(id);
  }
}
