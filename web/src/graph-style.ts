// The graph's look, as a Cytoscape stylesheet built from the page's CSS custom properties,
// so the light and dark themes (and the presenter size) restyle the canvas too (the legend
// that explains it is graph-legend.ts); and what lets Cytoscape style itself under the page's CSP.
import type { StylesheetJson } from "cytoscape";

function vars(el: Element): (name: string) => string {
  const cs = getComputedStyle(el);
  return (name) => cs.getPropertyValue(`--${name}`).trim() || "#888";
}

/** The stylesheet; `big` graphs drop what costs most to draw (transitions, curved edges, label boxes). */
export function graphStyle(root: Element, big = false): StylesheetJson {
  const v = vars(root);
  const font = v("sans");
  const mono = v("mono");
  const scale = Number(getComputedStyle(root).getPropertyValue("--graph-font-scale")) || 1;
  const fs = (px: number) => Math.round(px * scale);
  // presenter type (a bigger scale): no node's label smaller than an op's, AccumulateGrad's
  // and a saved tensor's included (their boxes are sized for it: graph-build.ts)
  const nodeFs = (px: number) => fs(scale > 1 ? Math.max(px, 12) : px);
  const sheet: StylesheetJson = [
    {
      selector: "node",
      style: {
        label: "data(label)",
        "text-wrap": "wrap",
        "text-valign": "center",
        "text-halign": "center",
        "font-family": mono,
        "font-size": fs(12),
        "line-height": 1.35,
        color: v("fg"),
        width: "data(width)",
        height: "data(height)",
        shape: "round-rectangle",
        "background-color": v("g-op-bg"),
        "border-width": 1.5,
        "border-color": v("g-op-border"),
        "min-zoomed-font-size": 7,
        "transition-property": "background-color, border-color, border-width, opacity",
        "transition-duration": 180,
      },
    },
    { selector: "node[kind = 'op']", style: { "font-weight": 600 } },
    {
      selector: "node[kind = 'acc']",
      style: {
        shape: "cut-rectangle",
        "background-color": v("g-acc-bg"),
        "border-color": v("g-acc-border"),
        color: v("g-acc-fg"),
        "font-size": nodeFs(11),
      },
    },
    {
      selector: "node[kind = 'leaf']",
      style: {
        shape: "ellipse",
        "background-color": v("g-leaf-bg"),
        "border-color": v("g-leaf-border"),
        "border-width": 2,
        "font-weight": 700,
        "font-size": fs(13),
      },
    },
    {
      selector: "node[kind = 'param']",
      style: {
        shape: "round-hexagon",
        "background-color": v("g-param-bg"),
        "border-color": v("g-param-border"),
        "border-width": 2,
        "font-weight": 700,
      },
    },
    {
      selector: "node[kind = 'input']",
      style: {
        shape: "rectangle",
        "background-color": v("g-input-bg"),
        "border-color": v("g-input-border"),
        "border-style": "dashed",
        color: v("muted"),
      },
    },
    {
      selector: "node[kind = 'saved']",
      style: {
        shape: "tag",
        "background-color": v("g-saved-bg"),
        "border-color": v("g-saved-border"),
        "border-style": "dotted",
        "font-size": nodeFs(11),
        color: v("muted"),
      },
    },
    {
      selector: ":parent",
      style: {
        shape: "roundrectangle",
        label: "data(label)",
        "text-valign": "top",
        "text-halign": "center",
        "text-margin-y": -10,
        "font-family": font,
        "font-size": fs(12),
        "font-weight": 600,
        color: v("g-group-fg"),
        "background-color": v("g-group-bg"),
        "background-opacity": 1,
        "border-color": v("g-group-border"),
        "border-width": 1,
        "border-style": "dashed",
        padding: "14px",
      },
    },
    {
      selector: "node[kind = 'collapsed']",
      style: {
        shape: "round-rectangle",
        "background-color": v("g-group-bg"),
        "border-color": v("g-group-border"),
        "border-width": 2,
        "border-style": "double",
        "font-family": font,
        color: v("g-group-fg"),
      },
    },
    {
      selector: "edge",
      style: {
        width: 1.6,
        "curve-style": "bezier",
        "line-color": v("g-edge"),
        "target-arrow-color": v("g-edge"),
        "target-arrow-shape": "triangle",
        "arrow-scale": 0.9,
        label: "data(label)",
        "font-family": mono,
        "font-size": fs(11),
        color: v("muted"),
        "text-background-color": v("bg"),
        "text-background-opacity": 0.92,
        "text-background-padding": "2px",
        "text-background-shape": "roundrectangle",
        "min-zoomed-font-size": 8,
        "transition-property": "line-color, width",
        "transition-duration": 180,
      },
    },
    { selector: "edge[kind = 'acc']", style: { "line-style": "solid", "target-arrow-shape": "none", width: 1.2 } },
    {
      selector: "edge[kind = 'saved']",
      style: {
        "line-style": "dashed",
        "line-dash-pattern": [4, 4],
        "line-color": v("g-saved-border"),
        "target-arrow-shape": "none",
        width: 1.2,
        opacity: 0.75,
        "font-size": fs(10),
        "font-style": "italic",
      },
    },
    // Forward scrubber: ops after the scrubber are not built yet.
    { selector: ".future", style: { display: "none" } },
    // Added, and not placed yet: NOTE [Nothing drawn before it is placed] in graph-sync.ts.
    { selector: ".unplaced", style: { display: "none" } },
    // Backward stepper.
    { selector: ".idle", style: { opacity: 0.35 } },
    // transparent, not removed: the graph keeps its size, so the view does not move
    { selector: "edge.idle", style: { "text-opacity": 0, "text-background-opacity": 0 } },
    { selector: "node.pending", style: { "border-style": "dashed" } },
    {
      selector: "node.done",
      style: { "background-color": v("g-done-bg"), "border-color": v("g-done-border") },
    },
    {
      selector: "node.current",
      style: {
        "border-width": 4,
        "border-color": v("accent"),
        "background-color": v("g-current-bg"),
        "underlay-color": v("accent"),
        "underlay-opacity": 0.18,
        "underlay-padding": 8,
      },
    },
    // freed (its saved tensors released): a faded body and a dashed rim, but text in the muted
    // colour at full strength. The whole node at 55% left its words at 3.0:1 (AccumulateGrad,
    // light) and 2.0:1 (dark), too faint from the back of a room; muted on the faded body is
    // over 4.5:1 (WCAG AA) in both themes.
    {
      selector: "node.freed",
      style: { "border-style": "dashed", "background-opacity": 0.55, "border-opacity": 0.55, color: v("muted") },
    },
    {
      selector: "edge.flowed",
      style: { "line-color": v("g-grad"), "target-arrow-color": v("g-grad"), width: 2.2, color: v("g-grad-fg"), "font-weight": 700 },
    },
    {
      selector: "edge.flowing",
      style: { "line-color": v("accent"), "target-arrow-color": v("accent"), width: 3.5, color: v("accent-fg-strong"), "font-weight": 700, "font-size": fs(13) },
    },
    // Links (hover elsewhere) and selection.
    {
      selector: "node.linked",
      style: { "underlay-color": v("link"), "underlay-opacity": 0.35, "underlay-padding": 7, "border-color": v("link"), "border-width": 3 },
    },
    { selector: "node:selected", style: { "border-color": v("select"), "border-width": 4 } },
    // The node keyboard navigation is on (graph-keys.ts): a ring in the page's focus colour.
    {
      selector: "node.keyfocus",
      style: { "outline-color": v("focus"), "outline-width": 3, "outline-offset": 3, "outline-opacity": 1 },
    },
    { selector: "edge:selected", style: { "line-color": v("select"), "target-arrow-color": v("select") } },
    // an edge whose straight line would cross a node bends around it (graph-routes.ts)
    {
      selector: "edge[routeW]",
      style: {
        "curve-style": "round-segments",
        "edge-distances": "node-position",
        "segment-weights": "data(routeW)",
        "segment-distances": "data(routeD)",
        "segment-radii": [14],
      },
    },
  ];
  if (big) {
    sheet.push(
      { selector: "node", style: { "transition-duration": 0, "transition-property": "none" } },
      { selector: "edge", style: { "curve-style": "straight", "text-background-opacity": 0, "transition-duration": 0, "transition-property": "none" } },
    );
  }
  return sheet;
}

/**
 * Cytoscape injects a one-rule <style> into <head> unless an element with its id exists;
 * the page's CSP blocks inline styles, so mark it present (app.css carries the rule).
 */
export function allowCytoscapeUnderCsp(): void {
  const id = "__________cytoscape_stylesheet";
  if (document.getElementById(id)) return;
  const marker = document.createElement("meta");
  marker.id = id;
  document.head.append(marker);
}
