// The graph pane's toolbar: Fit, zoom, the saved-tensors switch, module folding, the
// backward call drawn (graph-calls.ts), the node count and "Draw all". It holds no state of its own; graph.ts is told of each click.
import { h } from "./dom";

/** What the toolbar's controls do (graph.ts). */
export interface ToolbarActions {
  fit(): void;
  zoomBy(factor: number): void;
  /** The saved-tensors switch changed to `shown`. */
  showSaved(shown: boolean): void;
  foldAll(): void;
  unfoldAll(): void;
  drawAll(): void;
}

/** The toolbar, and the parts of it graph.ts updates as graphs come and go. */
export interface GraphToolbar {
  element: HTMLElement;
  /** The switch for saved tensors (its checked state follows the graph's size until touched). */
  savedToggle: HTMLInputElement;
  /** "9 nodes", "3,000 of 12,500 nodes · 2 folded". */
  info: HTMLElement;
  /** Shown while a graph too big to draw is drawn in part. */
  drawAllButton: HTMLButtonElement;
}

/** `callPicker`: the "Graph of" list (graph-calls.ts), placed before the node count. */
export function graphToolbar(actions: ToolbarActions, callPicker: HTMLElement): GraphToolbar {
  const savedToggle = h("input", { type: "checkbox", checked: true, "aria-label": "Show saved tensors" });
  savedToggle.addEventListener("change", () => actions.showSaved(savedToggle.checked));
  const button = (label: string, title: string, action: () => void, cls = "") =>
    h("button", { type: "button", class: `gw-tool ${cls}`, title, "aria-label": title, text: label, on: { click: action } });
  const info = h("span", { class: "gw-graph-info", "aria-live": "polite" });
  const drawAllButton = button("Draw all", "Draw every node (a graph this big holds the page for seconds)", () => actions.drawAll(), "gw-draw-all");
  drawAllButton.hidden = true;
  const element = h(
    "div",
    { class: "gw-graph-toolbar", role: "toolbar", "aria-label": "Graph" },
    button("Fit", "Fit the graph to the view", () => actions.fit()),
    button("−", "Zoom out", () => actions.zoomBy(1 / 1.25)),
    button("+", "Zoom in", () => actions.zoomBy(1.25)),
    h("label", { class: "gw-check", title: "Show what each node saved for backward" }, savedToggle, " saved"),
    button("Fold modules", "Fold modules: collapse every module group", () => actions.foldAll(), "gw-modules"),
    button("Unfold", "Unfold modules: expand every module group", () => actions.unfoldAll(), "gw-modules"),
    callPicker,
    info,
    drawAllButton,
  );
  showsWholeEnough(info);
  return { element, savedToggle, info, drawAllButton };
}

/**
 * Hide the node count (data-sliver) while less than half of it shows: presenter type's
 * one-row toolbar squeezes it first (layout.css), and beside the "Graph of" list at 1280 px
 * its 5 px read "1.". An ellipsis after half of it still says what it is.
 */
function showsWholeEnough(info: HTMLElement): void {
  const check = () => {
    const sliver = info.clientWidth > 0 && info.scrollWidth > 2 * info.clientWidth;
    if (sliver !== info.hasAttribute("data-sliver")) info.toggleAttribute("data-sliver", sliver);
  };
  if (typeof ResizeObserver !== "undefined") new ResizeObserver(check).observe(info);
  if (typeof MutationObserver !== "undefined") new MutationObserver(check).observe(info, { childList: true, characterData: true, subtree: true });
}
