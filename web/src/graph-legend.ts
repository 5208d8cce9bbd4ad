// The legend under the graph: what each kind of node on screen looks like, or, while the
// stepper shows a backward step, what the walk's looks mean. graph.ts keeps it in step with
// what is drawn (kindsShown) and with the stepper (showLegendFor).
import type { Core } from "cytoscape";
import { h } from "./dom";

/**
 * The legend under the graph: what each kind of node looks like; while the stepper shows a
 * backward step, what the walk's looks mean instead (the walk recolours nodes, and its
 * dashed "still to run" border read as the "plain input" entry), and the saved tensors'
 * dotted look, which the walk leaves as it is. Switch with {@link showLegendFor}.
 */
export function graphLegend(): HTMLElement {
  // each entry has a short form too, shown where the legend must keep to one line (a
  // projector's short screen, layout.css), with the whole text as its tooltip
  const item = (part: "graph" | "walk", kind: string, text: string, short = text) =>
    h(
      "li",
      { title: text, class: `gw-legend-${part}`, "data-kind": kind },
      h("span", { class: `gw-swatch gw-swatch-${kind}`, "aria-hidden": "true" }),
      h("span", { class: "gw-legend-text" }, text),
      h("span", { class: "gw-legend-short" }, short),
    );
  return h(
    "ul",
    { class: "gw-legend", "aria-label": "Legend", "data-mode": "graph" },
    item("graph", "op", "op (grad_fn)", "op"),
    item("graph", "acc", "AccumulateGrad"),
    item("graph", "leaf", "leaf, requires grad", "leaf"),
    item("graph", "param", "parameter"),
    item("graph", "input", "plain input", "input"),
    item("graph", "saved", "saved for backward", "saved"),
    item("walk", "current", "running now", "running"),
    item("walk", "done", "ran", "ran"),
    item("walk", "pending", "still to run", "to run"),
    item("walk", "idle", "not in this backward call", "not in it"),
    item("walk", "freed", "freed: its saved tensors are gone", "freed"),
  );
}

/**
 * The kinds of node `cy` shows now (`op`, `acc`, `leaf`, `param`, `input`, `saved`), each
 * once: the graph's legend lists these and no others (a scalar snippet has no parameter or
 * plain input, and saved tensors hidden by the toolbar's switch leave no "saved" to explain).
 * A leaf saved for backward is drawn as itself with a dotted edge in the saved colour: that
 * edge counts as "saved" too. Nodes the scrubber has not reached yet are not on screen.
 */
export function kindsShown(cy: Core): Set<string> {
  const kinds = new Set<string>();
  cy.nodes().forEach((n) => {
    if (!n.hasClass("future") && !n.isParent()) kinds.add(String(n.data("kind")));
  });
  cy.edges("[kind = 'saved']").forEach((e) => {
    if (!e.source().hasClass("future") && !e.target().hasClass("future")) kinds.add("saved");
  });
  return kinds;
}

/**
 * Show the legend of the graph's structure (`walkLooks` null) or of a backward step: then
 * only the entries for the looks in `walkLooks`, those some node has at that step (the end
 * of a call has nothing "running now" or "still to run"). Of the graph's own entries only
 * those for the kinds in `kinds` ({@link kindsShown}) show, in either mode.
 */
export function showLegendFor(legend: HTMLElement, walkLooks: ReadonlySet<string> | null, kinds: ReadonlySet<string>): void {
  // the walk entries' data-kind are graph-steps.ts's step classes (StepPainter.looksShown)
  legend.dataset.mode = walkLooks ? "walk" : "graph";
  for (const li of legend.querySelectorAll<HTMLElement>("li.gw-legend-walk")) {
    const kind = li.dataset.kind ?? "";
    li.hidden = !(walkLooks?.has(kind) || (kind === "idle" && walkLooks?.has("unreached")));
  }
  for (const li of legend.querySelectorAll<HTMLElement>("li.gw-legend-graph")) li.hidden = !kinds.has(li.dataset.kind ?? "");
  // The faded look: where only plain inputs have it (an MLP's x and y, in a run of one
  // backward()), no other call is there for them to be in: the entry says the walk never
  // reaches them, not "not in this backward call".
  const idle = legend.querySelector<HTMLElement>("li[data-kind=idle]");
  if (idle) {
    const [text, short] = walkLooks && !walkLooks.has("idle") && walkLooks.has("unreached") ? IDLE_TEXTS.unreached : IDLE_TEXTS.otherCall;
    idle.title = text;
    const [long, brief] = [idle.querySelector(".gw-legend-text"), idle.querySelector(".gw-legend-short")];
    if (long && long.textContent !== text) long.textContent = text;
    if (brief && brief.textContent !== short) brief.textContent = short;
  }
  // with nothing to explain (no run yet) the legend's line goes too
  legend.hidden = ![...legend.children].some((li) => !(li as HTMLElement).hidden);
}

/** The faded look's legend entry (whole, short): with another call's nodes faded, with only plain inputs. */
const IDLE_TEXTS = {
  otherCall: ["not in this backward call", "not in it"],
  unreached: ["not reached by backward()", "not reached"],
} as const;
