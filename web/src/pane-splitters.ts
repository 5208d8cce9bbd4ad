// Resizable panes. The gaps between the panes are dividers: drag one (or focus it and use
// the arrow keys) to give the graph a projector's room, or a long snippet more. Moving a
// divider changes only the panes on either side of it; the graph takes up whatever the
// others leave. Two layouts (layout.css) have dividers:
//
// - wide (over 1100 px), three columns: between the code and the graph, and between the
//   graph and the side panel (in the charts view, one between the code and the charts);
// - projector (760 to 1100 px: a 1024 x 768 classroom screen), the graph over the code
//   beside the side panel: between the left column and the side panel, and between the
//   graph and the code under it (the charts view keeps its fixed shape).
//
// Narrower (phones) the panes stack and nothing is resized. Each layout's sizes are
// remembered in this browser; a double-click (or Enter) on a divider puts its default back.
import { h, PANES_RESIZED, perFrame } from "./dom";
import { readSaved, writeSaved } from "./saved";

export type PaneLayout = "wide" | "projector";

/** The media queries of the layouts with dividers (as layout.css has them). */
const LAYOUT_QUERIES: Record<PaneLayout, string> = {
  wide: "(min-width: 1101px)",
  projector: "(min-width: 760px) and (max-width: 1100px)",
};

const KEYS: Record<PaneLayout, string> = { wide: "gradwalk-panes", projector: "gradwalk-panes-projector" };

/**
 * The smallest each pane can be made (px). Wide: widths. Projector: the side panel's width
 * and the left column's (`graph`), the code's height and the graph's above it (`graphHeight`).
 */
export const PANE_MIN = {
  wide: { code: 220, graph: 320, side: 280 },
  projector: { code: 90, graph: 320, graphHeight: 160, side: 260 },
} as const;

/** Arrow keys move a divider this far (px), with Shift further. */
const STEP = 16;
const BIG_STEP = 96;
const MAX_SAVED = 8000;

/**
 * The sizes (px) the user gave the panes; null keeps a pane's default share. `code` is the
 * code pane's width in the wide layout and its height in the projector layout; `side` is
 * the side panel's width in both.
 */
export interface PaneSizes {
  code: number | null;
  side: number | null;
}

type Edge = keyof PaneSizes;

/**
 * The wide layout's grid columns for `sizes`: with the graph (code, graph, side) and in
 * the charts view (code, charts). The defaults share the width 29 : 42 : 29; a chosen width
 * is the column's largest, down to its minimum when the window narrows.
 */
export function wideColumns(sizes: PaneSizes): { graph: string; charts: string } {
  const min = PANE_MIN.wide;
  const code = sizes.code === null ? "minmax(300px, 29fr)" : `minmax(${min.code}px, ${sizes.code}px)`;
  const side = sizes.side === null ? "minmax(320px, 29fr)" : `minmax(${min.side}px, ${sizes.side}px)`;
  const graphMin = sizes.code === null && sizes.side === null ? 360 : min.graph;
  return { graph: `${code} minmax(${graphMin}px, 42fr) ${side}`, charts: `${code} minmax(360px, 71fr)` };
}

/** The projector layout's columns (graph and code | side) and rows (graph | code) for `sizes`; null keeps the stylesheet's. */
export function projectorGrid(sizes: PaneSizes): { columns: string | null; rows: string | null } {
  const min = PANE_MIN.projector;
  return {
    columns: sizes.side === null ? null : `minmax(${min.graph}px, 1fr) minmax(${min.side}px, ${sizes.side}px)`,
    rows: sizes.code === null ? null : `minmax(${min.graphHeight}px, 1fr) minmax(${min.code}px, ${sizes.code}px)`,
  };
}

/** Sizes saved as JSON by an earlier page; anything unreadable is the default. */
export function parseSizes(text: string | null, layout: PaneLayout): PaneSizes {
  const sizes: PaneSizes = { code: null, side: null };
  if (!text) return sizes;
  let saved: unknown;
  try {
    saved = JSON.parse(text);
  } catch {
    return sizes;
  }
  if (typeof saved !== "object" || saved === null) return sizes;
  for (const edge of ["code", "side"] as const) {
    const v = (saved as Record<string, unknown>)[edge];
    if (typeof v === "number" && Number.isFinite(v) && v >= PANE_MIN[layout][edge] && v <= MAX_SAVED) sizes[edge] = Math.round(v);
  }
  return sizes;
}

/** The dividers of one workspace (`main`: `.gw-main`, holding the three panes). */
export class PaneSplitters {
  private readonly sizes: Record<PaneLayout, PaneSizes>;
  private readonly code: HTMLElement;
  private readonly graph: HTMLElement;
  private readonly side: HTMLElement;
  private readonly dividers: Record<Edge, HTMLElement>;
  private readonly queries = {
    wide: matchMedia(LAYOUT_QUERIES.wide),
    projector: matchMedia(LAYOUT_QUERIES.projector),
  };

  constructor(private readonly main: HTMLElement) {
    this.code = main.querySelector<HTMLElement>(".gw-pane-code")!;
    this.graph = main.querySelector<HTMLElement>(".gw-pane-graph")!;
    this.side = main.querySelector<HTMLElement>(".gw-pane-side")!;
    this.sizes = {
      wide: parseSizes(readSaved(KEYS.wide), "wide"),
      projector: parseSizes(readSaved(KEYS.projector), "projector"),
    };
    this.dividers = { code: this.divider("code"), side: this.divider("side") };
    // in the tab order between the panes they resize (placed over the gaps by `place`)
    this.code.after(this.dividers.code);
    this.side.before(this.dividers.side);
    this.apply();
    const place = perFrame(() => this.place());
    const observer = new ResizeObserver(place);
    for (const el of [main, this.code, this.graph, this.side]) observer.observe(el);
    for (const query of Object.values(this.queries)) query.addEventListener("change", place);
    this.place();
  }

  /** The layout with dividers the window shows now, if any. */
  layout(): PaneLayout | null {
    if (this.queries.wide.matches) return "wide";
    return this.queries.projector.matches ? "projector" : null;
  }

  private divider(edge: Edge): HTMLElement {
    const el = h("div", { class: "gw-divider", role: "separator", tabindex: "0", data: { gw: `divider-${edge}` } });
    el.addEventListener("pointerdown", (ev) => this.drag(edge, el, ev));
    el.addEventListener("dblclick", () => this.reset(edge));
    el.addEventListener("keydown", (ev) => this.onKey(edge, ev));
    return el;
  }

  private graphShown(): boolean {
    return this.graph.getBoundingClientRect().width > 0;
  }

  /** Whether divider `edge` runs across (between the graph and the code under it). */
  private across(edge: Edge): boolean {
    return edge === "code" && this.layout() === "projector";
  }

  /** Put each divider over its gap, or hide it where it has none. */
  private place(): void {
    const layout = this.layout();
    const shown = this.graphShown();
    const box = this.main.getBoundingClientRect();
    const code = this.code.getBoundingClientRect();
    const graph = this.graph.getBoundingClientRect();
    const side = this.side.getBoundingClientRect();
    const { code: codeDivider, side: sideDivider } = this.dividers;
    if (layout === "wide") {
      this.show(codeDivider, (code.right + (shown ? graph.left : side.left)) / 2 - box.left, null, code.width);
      this.show(sideDivider, shown ? (graph.right + side.left) / 2 - box.left : null, null, side.width);
    } else if (layout === "projector" && shown) {
      this.show(sideDivider, (graph.right + side.left) / 2 - box.left, null, side.width);
      this.show(codeDivider, (graph.bottom + code.top) / 2 - box.top, { left: graph.left - box.left, width: graph.width }, code.height);
    } else {
      codeDivider.hidden = sideDivider.hidden = true;
    }
  }

  /**
   * Show divider `el` centred on `at` (a left, or with `span` a top, in `main`'s box), or
   * hide it (`at` null); `size` is its pane's size now, for assistive technology.
   */
  private show(el: HTMLElement, at: number | null, span: { left: number; width: number } | null, size: number): void {
    el.hidden = at === null;
    if (at === null) return;
    const edge: Edge = el === this.dividers.code ? "code" : "side";
    const across = span !== null;
    el.setAttribute("aria-orientation", across ? "horizontal" : "vertical");
    if (across) {
      el.style.left = `${Math.round(span.left)}px`;
      el.style.width = `${Math.round(span.width)}px`;
      el.style.top = `${Math.round(at - el.offsetHeight / 2)}px`;
    } else {
      el.style.removeProperty("width");
      el.style.removeProperty("top");
      el.style.left = `${Math.round(at - el.offsetWidth / 2)}px`;
    }
    const what = edge === "side" ? "side panel" : "code pane";
    const dimension = across ? "high" : "wide";
    el.setAttribute("aria-label", `${across ? "Height" : "Width"} of the ${what}`);
    el.title = `Drag to resize (or ${across ? "↑ ↓" : "← →"}) · double-click: default size`;
    const [lo, hi] = this.range(edge);
    el.setAttribute("aria-valuenow", String(Math.round(size)));
    el.setAttribute("aria-valuemin", String(lo));
    el.setAttribute("aria-valuemax", String(Math.max(lo, hi)));
    el.setAttribute("aria-valuetext", `${what} ${Math.round(size)} px ${dimension}`);
  }

  /** The sizes pane `edge` can take now: its minimum, and what leaves the other panes theirs. */
  private range(edge: Edge): [number, number] {
    const layout = this.layout() ?? "wide";
    const style = getComputedStyle(this.main);
    if (this.across(edge)) {
      const inner = this.main.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom) - (parseFloat(style.rowGap) || 0);
      return [PANE_MIN.projector.code, Math.floor(inner - PANE_MIN.projector.graphHeight)];
    }
    const gap = parseFloat(style.columnGap) || 0;
    const columns = layout === "wide" && this.graphShown() ? 3 : 2;
    const inner = this.main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - gap * (columns - 1);
    if (layout === "projector") return [PANE_MIN.projector.side, Math.floor(inner - PANE_MIN.projector.graph)];
    if (columns === 2) return [PANE_MIN.wide.code, Math.floor(inner - 360)]; // the charts view: code and charts
    const other = edge === "code" ? this.side.getBoundingClientRect().width : this.code.getBoundingClientRect().width;
    return [PANE_MIN.wide[edge], Math.floor(inner - other - PANE_MIN.wide.graph)];
  }

  /** The size pane `edge` has now (a width, or the code's height in the projector layout). */
  private sizeNow(edge: Edge): number {
    const r = (edge === "code" ? this.code : this.side).getBoundingClientRect();
    return this.across(edge) ? r.height : r.width;
  }

  /**
   * Give pane `edge` `size` px (within its range). In the wide layout the pane on the
   * divider's other side keeps its width too, so only the graph (or the charts) gives or
   * takes the difference.
   */
  private resize(edge: Edge, size: number): void {
    const layout = this.layout();
    if (!layout) return;
    const sizes = this.sizes[layout];
    if (layout === "wide" && this.graphShown()) {
      const other: Edge = edge === "code" ? "side" : "code";
      sizes[other] = Math.round(this.sizeNow(other));
    }
    const [lo, hi] = this.range(edge);
    sizes[edge] = Math.round(Math.max(lo, Math.min(Math.max(lo, hi), size)));
    this.apply();
    this.place();
  }

  private apply(): void {
    const style = this.main.style;
    const set = (name: string, value: string | null) => (value === null ? style.removeProperty(name) : style.setProperty(name, value));
    const wide = this.sizes.wide;
    const columns = wide.code === null && wide.side === null ? null : wideColumns(wide);
    set("--gw-columns", columns?.graph ?? null);
    set("--gw-columns-charts", columns?.charts ?? null);
    const projector = projectorGrid(this.sizes.projector);
    set("--gw-projector-columns", projector.columns);
    set("--gw-projector-rows", projector.rows);
  }

  private save(): void {
    for (const layout of ["wide", "projector"] as const) {
      const { code, side } = this.sizes[layout];
      writeSaved(KEYS[layout], code === null && side === null ? null : JSON.stringify(this.sizes[layout]));
    }
  }

  private reset(edge: Edge): void {
    const layout = this.layout();
    if (!layout) return;
    this.sizes[layout][edge] = null;
    this.apply();
    this.save();
    this.place();
  }

  private drag(edge: Edge, el: HTMLElement, start: PointerEvent): void {
    if (start.button !== 0) return;
    start.preventDefault(); // no text selection while dragging
    el.setPointerCapture(start.pointerId);
    const across = this.across(edge);
    this.main.dataset.resizing = across ? "rows" : "columns";
    el.dataset.dragging = "";
    // the pane's edge keeps the distance from the pointer it had where the divider was grabbed
    const pane = edge === "code" ? this.code : this.side;
    const grows = edge === "code" && !across ? 1 : -1; // the code pane's right edge moves with the pointer; the others' near edge faces it
    const position = (ev: PointerEvent) => (across ? ev.clientY : ev.clientX);
    const sizeAt = (ev: PointerEvent) => {
      const r = pane.getBoundingClientRect();
      const far = across ? r.bottom : grows > 0 ? r.left : r.right;
      return grows * (position(ev) - far);
    };
    const offset = this.sizeNow(edge) - sizeAt(start);
    const move = (ev: PointerEvent) => this.resize(edge, sizeAt(ev) + offset);
    const end = () => {
      el.removeEventListener("pointermove", move);
      el.removeEventListener("pointerup", end);
      el.removeEventListener("pointercancel", end);
      delete this.main.dataset.resizing;
      delete el.dataset.dragging;
      this.save();
      document.dispatchEvent(new CustomEvent(PANES_RESIZED));
    };
    el.addEventListener("pointermove", move);
    el.addEventListener("pointerup", end);
    el.addEventListener("pointercancel", end);
  }

  /** Arrows move the divider (Shift: further), Home and End to either end, Enter resets. */
  private onKey(edge: Edge, ev: KeyboardEvent): void {
    const across = this.across(edge);
    const step = ev.shiftKey ? BIG_STEP : STEP;
    // +1: the key moves the divider right (down); how that changes the pane's size
    const grows = edge === "code" && !across ? 1 : -1;
    const [back, forth] = across ? ["ArrowUp", "ArrowDown"] : ["ArrowLeft", "ArrowRight"];
    const [lo, hi] = this.range(edge);
    let size: number | null = null;
    if (ev.key === back) size = this.sizeNow(edge) - step * grows;
    else if (ev.key === forth) size = this.sizeNow(edge) + step * grows;
    else if (ev.key === "Home") size = grows > 0 ? lo : hi;
    else if (ev.key === "End") size = grows > 0 ? hi : lo;
    else if (ev.key !== "Enter") return;
    // the stepper's ← → listen on the document: these keys are the divider's
    ev.preventDefault();
    ev.stopPropagation();
    if (size === null) this.reset(edge);
    else {
      this.resize(edge, size);
      this.save();
    }
  }
}
