// Pitfalls in the UI: each `pitfall` event at its line in the editor (a gutter marker, the
// line lit, and its title under the line, opening to the explanation and the fix; hovering
// the line shows them too), as a card in the output panel, and on the graph, where the
// tensors and nodes it names (or, when it names none, the nodes its line built) get a ring.
import { type Extension, RangeSetBuilder, StateEffect, StateField } from "@codemirror/state";
import { Decoration, type DecorationSet, EditorView, gutter, GutterMarker, hoverTooltip, WidgetType } from "@codemirror/view";
import type { Core } from "cytoscape";
import "./styles/pitfalls.css";
import { blockNoteFrame } from "./block-notes";
import { h } from "./dom";
import type { Links, Store } from "./store";
import type { TraceModel } from "./trace-model";
import type { PitfallFound } from "./types/events";

export interface PitfallMark {
  line: number;
  kind: string;
  title: string;
  message: string;
  fix: string;
}

/** The graph view as far as pitfalls need it (the app's and the viewer's GraphView). */
export interface PitfallGraph {
  readonly core: Core;
  whenLaidOut(): Promise<unknown>;
}

// --- the editor -------------------------------------------------------------------------

const setPitfalls = StateEffect.define<PitfallMark[]>();

function explanation(marks: readonly PitfallMark[], open: boolean, view: EditorView | null): HTMLElement {
  return h(
    "div",
    { class: "cm-gw-pitfalls" },
    marks.map((m) => {
      const details = h(
        "details",
        { class: "cm-gw-pitfall", data: { kind: m.kind, line: m.line }, open },
        h("summary", {}, h("span", { class: "cm-gw-pitfall-icon", "aria-hidden": "true", text: "⚠" }), h("strong", { text: m.title }), h("span", { class: "cm-gw-pitfall-more", text: "why, and the fix" })),
        h("p", { class: "cm-gw-pitfall-message", text: m.message }),
        h("p", { class: "cm-gw-pitfall-fix" }, h("strong", { text: "Fix: " }), m.fix),
      );
      // An opened explanation changes the line's height: let the editor measure again.
      if (view) details.addEventListener("toggle", () => view.requestMeasure());
      return details;
    }),
  );
}

class PitfallWidget extends WidgetType {
  constructor(
    readonly line: number,
    readonly marks: readonly PitfallMark[],
  ) {
    super();
  }
  eq(other: PitfallWidget): boolean {
    return other.line === this.line && other.marks.map((m) => m.title).join("\n") === this.marks.map((m) => m.title).join("\n");
  }
  toDOM(view: EditorView): HTMLElement {
    const el = explanation(this.marks, false, view);
    el.classList.add("cm-gw-pitfall-widget");
    el.dataset.line = String(this.line);
    el.setAttribute("role", "note");
    el.setAttribute("aria-label", `Pitfall at line ${this.line}`);
    return el;
  }
}

class PitfallMarker extends GutterMarker {
  /** `titles` null: the gutter's invisible spacer, which only gives it its width. */
  constructor(readonly titles: string | null) {
    super();
  }
  eq(other: PitfallMarker): boolean {
    return other.titles === this.titles;
  }
  toDOM(): Node {
    if (this.titles === null) return h("span", { class: "cm-gw-pitfall-spacer", "aria-hidden": "true", text: "⚠" });
    return h("span", { class: "cm-gw-pitfall-marker", title: `${this.titles}\n(click for the explanation and the fix)`, text: "⚠" });
  }
}

interface PitfallState {
  marks: PitfallMark[];
  deco: DecorationSet;
  gutter: ReturnType<RangeSetBuilder<GutterMarker>["finish"]>;
}

function byLine(marks: readonly PitfallMark[]): Map<number, PitfallMark[]> {
  const out = new Map<number, PitfallMark[]>();
  for (const m of marks) out.set(m.line, [...(out.get(m.line) ?? []), m]);
  return out;
}

function build(doc: EditorView["state"]["doc"], marks: PitfallMark[]): PitfallState {
  const deco = new RangeSetBuilder<Decoration>();
  const markers = new RangeSetBuilder<GutterMarker>();
  const lines = byLine(marks.filter((m) => m.line >= 1 && m.line <= doc.lines));
  for (const line of [...lines.keys()].sort((a, b) => a - b)) {
    const info = doc.line(line);
    const here = lines.get(line)!;
    deco.add(info.from, info.from, Decoration.line({ class: "cm-gw-pitfall-line", attributes: { "data-pitfall": here.map((m) => m.kind).join(" ") } }));
    deco.add(info.to, info.to, Decoration.widget({ widget: new PitfallWidget(line, here), block: true, side: 2 }));
    markers.add(info.from, info.from, new PitfallMarker(here.map((m) => m.title).join("\n")));
  }
  return { marks, deco: deco.finish(), gutter: markers.finish() };
}

const pitfallField = StateField.define<PitfallState>({
  create: (state) => build(state.doc, []),
  update(value, tr) {
    let marks = value.marks;
    for (const effect of tr.effects) if (effect.is(setPitfalls)) marks = effect.value;
    // Pitfalls belong to the code that ran: editing the text clears them, as it clears errors.
    if (tr.docChanged && marks.length) marks = [];
    if (marks === value.marks && !tr.docChanged) return value;
    return build(tr.state.doc, marks);
  },
  provide: (f) => EditorView.decorations.from(f, (v) => v.deco),
});

const pitfallTheme = EditorView.theme({
  ".cm-gw-pitfall-line": { backgroundColor: "var(--warn-soft)", boxShadow: "inset 3px 0 0 var(--link)" },
  ".cm-gw-pitfall-gutter .cm-gutterElement": { padding: "0 2px 0 4px", cursor: "pointer" },
  ".cm-gw-pitfall-marker": { color: "var(--link)", fontWeight: "700" },
  ".cm-gw-pitfall-widget": {
    fontFamily: "var(--sans)",
    fontSize: "0.9em",
    color: "var(--fg)",
    backgroundColor: "var(--warn-soft)",
    ...blockNoteFrame("var(--link)", 3),
    whiteSpace: "normal",
  },
  ".cm-gw-pitfall summary": { cursor: "pointer", display: "block", listStyle: "none" },
  ".cm-gw-pitfall summary::-webkit-details-marker": { display: "none" },
  ".cm-gw-pitfall-icon": { color: "var(--link)", fontWeight: "700", marginRight: "6px" },
  ".cm-gw-pitfall-more": { color: "var(--muted)", fontSize: "0.9em", textDecoration: "underline dotted", marginLeft: "8px", whiteSpace: "nowrap" },
  ".cm-gw-pitfall[open] .cm-gw-pitfall-more": { display: "none" },
  ".cm-gw-pitfall p": { margin: "4px 0" },
  ".cm-gw-pitfall-fix": { color: "var(--fg)" },
  ".cm-tooltip-hover": { backgroundColor: "var(--panel)", border: "1px solid var(--link)", borderRadius: "6px" },
  ".cm-gw-pitfall-tip": {
    maxWidth: "52ch",
    fontFamily: "var(--sans)",
    fontSize: "0.88rem",
    padding: "6px 10px",
    color: "var(--fg)",
    whiteSpace: "normal",
  },
  ".cm-gw-pitfall-tip summary": { listStyle: "none" },
  ".cm-gw-pitfall-tip .cm-gw-pitfall-more": { display: "none" },
});

function toggleLine(view: EditorView, from: number): boolean {
  const line = view.state.doc.lineAt(from).number;
  const widget = view.contentDOM.querySelector<HTMLDetailsElement>(`.cm-gw-pitfall-widget[data-line="${line}"] details`);
  if (!widget) return false;
  widget.open = !widget.open;
  return true;
}

/** The editor extension: pitfall marks in their own gutter, lit lines, explanations under them. */
export function pitfallExtension(): Extension {
  return [
    pitfallField,
    pitfallTheme,
    gutter({
      class: "cm-gw-pitfall-gutter",
      markers: (v) => v.state.field(pitfallField).gutter,
      initialSpacer: () => new PitfallMarker(null),
      domEventHandlers: { click: (view, block) => toggleLine(view, block.from) },
    }),
    hoverTooltip((view, pos) => {
      const line = view.state.doc.lineAt(pos);
      const marks = view.state.field(pitfallField).marks.filter((m) => m.line === line.number);
      if (!marks.length) return null;
      return {
        pos: line.from,
        end: line.to,
        above: true,
        create: () => {
          const dom = explanation(marks, true, null);
          dom.classList.add("cm-gw-pitfall-tip");
          return { dom };
        },
      };
    }),
  ];
}

export function pitfallMarks(model: TraceModel): PitfallMark[] {
  return model.pitfalls.filter((p) => p.line !== null).map((p) => ({ line: p.line as number, kind: p.kind, title: p.title, message: p.message, fix: p.fix }));
}

// --- the graph --------------------------------------------------------------------------

/** The grad_fn nodes a pitfall is about: the ones it names, else those its line built. */
export function pitfallNodes(model: TraceModel, ev: PitfallFound): number[] {
  const out = new Set<number>(ev.nodes);
  for (const t of ev.tensors) {
    const fn = model.gradFnOfTensor(t);
    const acc = model.accumulatorOf(t);
    if (fn !== undefined) out.add(fn);
    if (acc !== undefined) out.add(acc);
  }
  if (!out.size && !ev.tensors.length && ev.line !== null) for (const n of model.nodesOnLine(ev.line)) out.add(n);
  return [...out];
}

export function pitfallLinks(model: TraceModel, ev: PitfallFound): Links {
  return { lines: ev.line === null ? [] : [ev.line], ops: [], nodes: pitfallNodes(model, ev) };
}

/** Element ids on the graph (nodes n<id>, leaves t<id>) of every pitfall of `model`. */
export function pitfallElementIds(model: TraceModel): string[] {
  const ids = new Set<string>();
  for (const ev of model.pitfalls) {
    for (const n of pitfallNodes(model, ev)) ids.add(`n${n}`);
    for (const t of ev.tensors) ids.add(`t${t}`);
  }
  return [...ids];
}

const styled = new WeakSet<object>();

/** Ring the pitfalls' nodes on the graph; kept up to date across re-layouts and restyles. */
export function paintGraph(cy: Core, model: TraceModel): void {
  const style = cy.style() as unknown as { selector(s: string): { style(css: Record<string, unknown>): unknown }; update(): void };
  if (!styled.has(style)) {
    styled.add(style);
    const color = getComputedStyle(document.documentElement).getPropertyValue("--link").trim() || "#b7791f";
    style.selector(".gw-pitfall").style({ "underlay-color": color, "underlay-padding": 7, "underlay-opacity": 0.38, "underlay-shape": "round-rectangle" });
    style.update();
  }
  const ids = pitfallElementIds(model);
  cy.batch(() => {
    cy.elements(".gw-pitfall").removeClass("gw-pitfall");
    for (const id of ids) cy.getElementById(id).addClass("gw-pitfall");
  });
}

// --- the output panel -------------------------------------------------------------------

/**
 * A pitfall as a card: its title and line, the explanation and the fix; hovering it lights
 * its line and nodes. `more` goes at its end (the app's way to record a metrics-only
 * iteration in full).
 */
export function pitfallCard(model: TraceModel, ev: PitfallFound, store: Store, more: HTMLElement | null = null): HTMLElement {
  const line = ev.line
    ? h("button", { type: "button", class: "gw-line-link", text: `line ${ev.line}`, on: { click: () => store.set({ hover: pitfallLinks(model, ev) }) } })
    : null;
  const onGraph = pitfallNodes(model, ev).length;
  return h(
    "div",
    {
      class: "gw-notice gw-notice-pitfall",
      role: "note",
      data: { kind: ev.kind, line: ev.line ?? "" },
      on: { mouseenter: () => store.set({ hover: pitfallLinks(model, ev) }), mouseleave: () => store.set({ hover: null }) },
    },
    h("div", { class: "gw-pitfall-head" }, h("span", { class: "gw-pitfall-icon", "aria-hidden": "true", text: "⚠" }), h("strong", { text: ev.title }), line ? [" · ", line] : null),
    h("div", { class: "gw-pitfall-message", text: ev.message }),
    h("div", { class: "gw-pitfall-fix" }, h("strong", { text: "Fix: " }), ev.fix),
    onGraph ? h("div", { class: "gw-pitfall-graph", text: `ringed on the graph: ${onGraph} node${onGraph === 1 ? "" : "s"}` }) : null,
    more,
  );
}

/**
 * The pitfalls that name grad_fn node `node` (non-finite-gradient names the node a NaN came
 * out of), for the stepper's card at that node: each title, opening to its explanation and fix.
 */
export function nodePitfallNotes(model: TraceModel, node: number): HTMLElement[] {
  return pitfallsOfNode(model, node).map((p) =>
    h(
      "details",
      { class: "gw-note gw-note-pitfall", data: { kind: p.kind } },
      h("summary", {}, h("span", { class: "gw-pitfall-icon", "aria-hidden": "true", text: "⚠" }), h("strong", { text: p.title })),
      h("p", { class: "gw-pitfall-message", text: p.message }),
      h("p", { class: "gw-pitfall-fix" }, h("strong", { text: "Fix: " }), p.fix),
    ),
  );
}

/** The pitfalls that name grad_fn node `node` among their `nodes`. */
export function pitfallsOfNode(model: TraceModel, node: number): PitfallFound[] {
  return model.pitfalls.filter((p) => p.nodes.includes(node));
}

/** A ⚠ for a walk's item at node `node` when a pitfall names it (its titles as the tooltip); null otherwise. */
export function nodePitfallMark(model: TraceModel, node: number): HTMLElement | null {
  const titles = pitfallsOfNode(model, node).map((p) => p.title);
  if (!titles.length) return null;
  return h("span", { class: "gw-walk-pitfall", title: titles.join("\n"), "aria-label": `pitfall: ${titles.join("; ")}`, text: "⚠" });
}

/** Mark pitfall lines in a read-only code listing (rows carrying `data-line`). */
export function markCode(root: HTMLElement, marks: readonly PitfallMark[]): void {
  for (const el of root.querySelectorAll<HTMLElement>(".gw-code-pitfall")) {
    el.classList.remove("gw-code-pitfall");
    el.removeAttribute("title");
  }
  for (const [line, here] of byLine(marks)) {
    const el = root.querySelector<HTMLElement>(`[data-line="${line}"]`);
    if (!el) continue;
    el.classList.add("gw-code-pitfall");
    el.title = here.map((m) => `⚠ ${m.title}`).join("\n");
  }
}

// --- wiring -----------------------------------------------------------------------------

/**
 * Keep one model's pitfalls shown in an editor (when there is one) and on a graph. Call
 * `setModel` when the shown run changes.
 */
export class PitfallMarks {
  private unsubscribe: () => void = () => {};
  private shown = -1;

  constructor(
    private model: TraceModel,
    private readonly editor: EditorView | null,
    private readonly graph: PitfallGraph | null,
    /** A read-only code view (the viewer's): its `[data-line]` rows get marked instead. */
    private readonly code: HTMLElement | null = null,
  ) {
    editor?.dispatch({ effects: StateEffect.appendConfig.of(pitfallExtension()) });
    if (graph) {
      const next = (): void =>
        void graph.whenLaidOut().then(() => {
          paintGraph(graph.core, this.model);
          next();
        });
      next();
    }
    this.setModel(model);
  }

  setModel(model: TraceModel): void {
    this.unsubscribe();
    this.model = model;
    this.shown = -1;
    this.update();
    this.unsubscribe = model.subscribe(() => this.update());
  }

  private update(): void {
    const n = this.model.pitfalls.length;
    if (n === this.shown) return;
    this.shown = n;
    const marks = pitfallMarks(this.model);
    this.editor?.dispatch({ effects: setPitfalls.of(marks) });
    if (this.graph) paintGraph(this.graph.core, this.model);
    if (this.code) markCode(this.code, marks);
  }
}
