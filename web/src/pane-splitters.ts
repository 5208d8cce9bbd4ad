// Resizable panes. The gaps between the code, the graph and the side panel are dividers:
// drag one (or focus it and use the arrow keys) to give the graph a projector's width, or
// a long snippet more room. Moving a divider changes only the two panes beside it; the
// graph takes up whatever the others leave. Only in the three-column layout (wider than
// 1100 px, layout.css): the narrower layouts keep their shapes. The widths are remembered
// in this browser; a double-click (or Enter) on a divider gives its pane back its default
// share of the width.
import { h, perFrame } from "./dom";
import { readSaved, writeSaved } from "./saved";

const KEY = "gradwalk-panes";
/** The layout (layout.css) that shows the panes side by side in three columns. */
export const WIDE_LAYOUT = "(min-width: 1101px)";
/** The narrowest a pane can be made (px); the defaults' minimums are in paneColumns. */
export const PANE_MIN = { code: 220, graph: 320, side: 280 } as const;
/** Arrow keys move a divider this far (px), with Shift further. */
const STEP = 16;
const BIG_STEP = 96;
const MAX_SAVED = 8000;

/** The width (px) the user gave the code pane and the side panel; null keeps the default share. */
export interface PaneWidths {
  code: number | null;
  side: number | null;
}

type Edge = keyof PaneWidths;

/**
 * The main grid's columns for `widths`: with the graph (code, graph, side) and in the
 * charts view (code, charts). The defaults share the width 29 : 42 : 29; a width the user
 * set is the column's largest, down to its minimum when the window narrows.
 */
export function paneColumns(widths: PaneWidths): { graph: string; charts: string } {
  const code = widths.code === null ? "minmax(300px, 29fr)" : `minmax(${PANE_MIN.code}px, ${widths.code}px)`;
  const side = widths.side === null ? "minmax(320px, 29fr)" : `minmax(${PANE_MIN.side}px, ${widths.side}px)`;
  const graphMin = widths.code === null && widths.side === null ? 360 : PANE_MIN.graph;
  return { graph: `${code} minmax(${graphMin}px, 42fr) ${side}`, charts: `${code} minmax(360px, 71fr)` };
}

/** Widths saved as JSON by an earlier page; anything unreadable is the default. */
export function parseWidths(text: string | null): PaneWidths {
  const widths: PaneWidths = { code: null, side: null };
  if (!text) return widths;
  let saved: unknown;
  try {
    saved = JSON.parse(text);
  } catch {
    return widths;
  }
  if (typeof saved !== "object" || saved === null) return widths;
  for (const edge of ["code", "side"] as const) {
    const v = (saved as Record<string, unknown>)[edge];
    if (typeof v === "number" && Number.isFinite(v) && v >= PANE_MIN[edge] && v <= MAX_SAVED) widths[edge] = Math.round(v);
  }
  return widths;
}

/** The dividers of one workspace (`main`: `.gw-main`, holding the three panes). */
export class PaneSplitters {
  private widths: PaneWidths;
  private readonly code: HTMLElement;
  private readonly graph: HTMLElement;
  private readonly side: HTMLElement;
  private readonly dividers: Record<Edge, HTMLElement>;
  private readonly wide = matchMedia(WIDE_LAYOUT);

  constructor(private readonly main: HTMLElement) {
    this.code = main.querySelector<HTMLElement>(".gw-pane-code")!;
    this.graph = main.querySelector<HTMLElement>(".gw-pane-graph")!;
    this.side = main.querySelector<HTMLElement>(".gw-pane-side")!;
    this.widths = parseWidths(readSaved(KEY));
    this.dividers = { code: this.divider("code"), side: this.divider("side") };
    main.append(this.dividers.code, this.dividers.side);
    this.apply();
    const place = perFrame(() => this.place());
    const observer = new ResizeObserver(place);
    for (const el of [main, this.code, this.graph, this.side]) observer.observe(el);
    this.wide.addEventListener("change", place);
    this.place();
  }

  /** The widths in use (read by tests). */
  get current(): PaneWidths {
    return { ...this.widths };
  }

  private divider(edge: Edge): HTMLElement {
    const el = h("div", {
      class: "gw-divider",
      role: "separator",
      tabindex: "0",
      "aria-orientation": "vertical",
      "aria-label": edge === "code" ? "Width of the code pane" : "Width of the side panel",
      title: "Drag to resize (or ← →) · double-click: default width",
      data: { gw: `divider-${edge}` },
    });
    el.addEventListener("pointerdown", (ev) => this.drag(edge, el, ev));
    el.addEventListener("dblclick", () => this.reset(edge));
    el.addEventListener("keydown", (ev) => this.onKey(edge, ev));
    return el;
  }

  private graphShown(): boolean {
    return this.graph.getBoundingClientRect().width > 0;
  }

  /** Put each divider over its gap, or hide it (not the three-column layout; no graph beside the side panel). */
  private place(): void {
    const wide = this.wide.matches;
    const box = this.main.getBoundingClientRect();
    const code = this.code.getBoundingClientRect();
    const side = this.side.getBoundingClientRect();
    const shown = this.graphShown();
    const graph = this.graph.getBoundingClientRect();
    this.show(this.dividers.code, wide, (code.right + (shown ? graph.left : side.left)) / 2 - box.left, code.width, "code");
    this.show(this.dividers.side, wide && shown, (graph.right + side.left) / 2 - box.left, side.width, "side");
  }

  private show(el: HTMLElement, on: boolean, centre: number, width: number, edge: Edge): void {
    el.hidden = !on;
    if (!on) return;
    el.style.left = `${Math.round(centre - el.offsetWidth / 2)}px`;
    const [lo, hi] = this.range(edge);
    el.setAttribute("aria-valuenow", String(Math.round(width)));
    el.setAttribute("aria-valuemin", String(lo));
    el.setAttribute("aria-valuemax", String(Math.max(lo, hi)));
    el.setAttribute("aria-valuetext", `${edge === "code" ? "code pane" : "side panel"} ${Math.round(width)} px wide`);
  }

  /** The widths pane `edge` can take now: its minimum, and what leaves the others theirs. */
  private range(edge: Edge): [number, number] {
    const style = getComputedStyle(this.main);
    const gap = parseFloat(style.columnGap) || 0;
    const shown = this.graphShown();
    const inner = this.main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - gap * (shown ? 2 : 1);
    if (!shown) return [PANE_MIN.code, Math.floor(inner - 360)]; // the charts view: code and charts
    const other = edge === "code" ? this.side.getBoundingClientRect().width : this.code.getBoundingClientRect().width;
    return [PANE_MIN[edge], Math.floor(inner - other - PANE_MIN.graph)];
  }

  /**
   * Give pane `edge` `width` px (within its range). The pane on the divider's other side
   * keeps its width too, so only the graph (or the charts) gives or takes the difference.
   */
  private setWidth(edge: Edge, width: number): void {
    if (this.graphShown()) {
      const other: Edge = edge === "code" ? "side" : "code";
      this.widths[other] = Math.round((other === "code" ? this.code : this.side).getBoundingClientRect().width);
    }
    const [lo, hi] = this.range(edge);
    this.widths[edge] = Math.round(Math.max(lo, Math.min(Math.max(lo, hi), width)));
    this.apply();
    this.place();
  }

  private apply(): void {
    const { code, side } = this.widths;
    if (code === null && side === null) {
      this.main.style.removeProperty("--gw-columns");
      this.main.style.removeProperty("--gw-columns-charts");
      return;
    }
    const columns = paneColumns(this.widths);
    this.main.style.setProperty("--gw-columns", columns.graph);
    this.main.style.setProperty("--gw-columns-charts", columns.charts);
  }

  private save(): void {
    const { code, side } = this.widths;
    writeSaved(KEY, code === null && side === null ? null : JSON.stringify(this.widths));
  }

  private reset(edge: Edge): void {
    this.widths[edge] = null;
    this.apply();
    this.save();
    this.place();
  }

  private drag(edge: Edge, el: HTMLElement, start: PointerEvent): void {
    if (start.button !== 0) return;
    start.preventDefault(); // no text selection while dragging
    el.setPointerCapture(start.pointerId);
    this.main.dataset.resizing = edge;
    // where on the divider it was grabbed: the pane's edge stays that far from the pointer
    const code = this.code.getBoundingClientRect();
    const side = this.side.getBoundingClientRect();
    const grab = edge === "code" ? start.clientX - code.right : side.left - start.clientX;
    const move = (ev: PointerEvent) => {
      const width = edge === "code" ? ev.clientX - grab - this.code.getBoundingClientRect().left : this.side.getBoundingClientRect().right - ev.clientX - grab;
      this.setWidth(edge, width);
    };
    const end = () => {
      el.removeEventListener("pointermove", move);
      el.removeEventListener("pointerup", end);
      el.removeEventListener("pointercancel", end);
      delete this.main.dataset.resizing;
      this.save();
    };
    el.addEventListener("pointermove", move);
    el.addEventListener("pointerup", end);
    el.addEventListener("pointercancel", end);
  }

  /** ← and → move the divider (Shift: further), Home and End to either end, Enter resets. */
  private onKey(edge: Edge, ev: KeyboardEvent): void {
    const pane = edge === "code" ? this.code : this.side;
    const now = pane.getBoundingClientRect().width;
    const step = ev.shiftKey ? BIG_STEP : STEP;
    // a divider moving right widens the code pane and narrows the side panel
    const towardsRight = edge === "code" ? 1 : -1;
    const [lo, hi] = this.range(edge);
    let width: number | null = null;
    if (ev.key === "ArrowLeft") width = now - step * towardsRight;
    else if (ev.key === "ArrowRight") width = now + step * towardsRight;
    else if (ev.key === "Home") width = edge === "code" ? lo : hi;
    else if (ev.key === "End") width = edge === "code" ? hi : lo;
    else if (ev.key !== "Enter") return;
    // the stepper's ← → listen on the document: these keys are the divider's
    ev.preventDefault();
    ev.stopPropagation();
    if (width === null) this.reset(edge);
    else {
      this.setWidth(edge, width);
      this.save();
    }
  }
}
