// The read-only viewer: the graph, backward stepper, tape, inspector, code and output of one
// trace on one root element, with no editor and no server. Embeds (/embed/ID), self-contained
// exports and the notebook display all mount this; the app's views render it unchanged.
//
// Layout: an optional bar (title, tabs, theme), then the graph beside the open panel (below
// it when the root is narrow). The "graph" tab shows the graph alone.
import type { NodeCollection } from "cytoscape";
import type { FetchRun } from "./chart-baseline";
import { CodeView } from "./code-view";
import type { YScale } from "./chart-scales";
import { ChartsView } from "./charts";
import { h, isTyping, revealWithin, setTabCount } from "./dom";
import { GraphView } from "./graph";
import { openingStep } from "./graph-calls";
import { leastPan, panView } from "./graph-viewport";
import { InspectorView } from "./inspector";
import { PendingCallNotice, stepPastEndNotice } from "./link-notices";
import { OutputView } from "./output";
import { PitfallMarks } from "./pitfalls";
import { StepperView } from "./stepper";
import { type GraphCall, type Selection, Store, stepperEntry, type ViewName, type ViewState } from "./store";
import { TapeView } from "./tape";
import { bindTabKeys, selectTab } from "./tabs";
import { currentTheme, setTheme } from "./theme";
import { TraceModel, traceTitle } from "./trace-model";
import type { GradwalkEvent } from "./types/events";
import { chartChoicesChanged, writeChartChoices, writeSelection } from "./url-state";

export type ViewerTab = "graph" | "stepper" | "tape" | "inspector" | "code" | "charts";
export const VIEWER_TABS: readonly ViewerTab[] = ["graph", "stepper", "tape", "inspector", "code", "charts"];

/** The page's h1 for a run with no title (no first comment, no file name). */
const UNTITLED = "gradwalk run";
const TAB_LABELS: Record<ViewerTab, string> = {
  graph: "Graph",
  stepper: "Backward",
  tape: "Tape",
  inspector: "Inspect",
  code: "Code",
  charts: "Charts",
};

/** Below this width (px) the panel goes under the graph instead of beside it. */
const NARROW = 760;

export interface ViewerOptions {
  /** The tab to open; null picks the stepper when the trace called backward(), else the tape. */
  view: ViewerTab | null;
  /** The stepper position to open at (0-based, as in the app's URLs); null for none. */
  step: number | null;
  /** Show the bar, the graph's toolbar and the stepper's buttons. */
  controls: boolean;
  /** null keeps the page's theme (the system's). */
  theme: "light" | "dark" | null;
  title: string | null;
  /** Where "Open in gradwalk" points (embeds on a server); null hides the link. */
  appUrl: string | null;
  /** The charts' y axes; null: auto. */
  yscale: YScale | null;
  /** Whether the charts draw norms per parameter; null: all together. */
  perParam: boolean | null;
  /** The run drawn dashed under this one on the charts (its events come from the page's `fetchRun`); null: none. */
  compare: string | null;
  /** The ids of the charts not shown (loss, grad, update, lr, memory, metric:NAME); null: none. */
  hide: readonly string[] | null;
  /** The backward call whose graph is drawn (its index, 0-based; "all": every call's; null: the run's default). */
  call: GraphCall;
  /** The node or tensor picked, as a click picks it: the inspector shows it, the graph rings it; null: none. */
  selection: Selection | null;
}

export const DEFAULT_OPTIONS: ViewerOptions = {
  view: null,
  step: null,
  controls: true,
  theme: null,
  title: null,
  appUrl: null,
  yscale: null,
  perParam: null,
  compare: null,
  hide: null,
  call: null,
  selection: null,
};

export interface TraceData {
  source?: string;
  events: GradwalkEvent[];
}

export class Viewer {
  readonly store = new Store();
  model: TraceModel;
  readonly options: ViewerOptions;
  readonly graph: GraphView;
  readonly stepper: StepperView;
  readonly tape: TapeView;
  readonly inspector: InspectorView;
  readonly code: CodeView;
  readonly output: OutputView;
  readonly charts: ChartsView;
  readonly pitfalls: PitfallMarks;
  private tab: ViewerTab = "graph";
  private readonly tabs = new Map<ViewerTab, HTMLButtonElement>();
  private readonly panels = new Map<ViewerTab, HTMLElement>();
  private readonly side: HTMLElement;
  private readonly steps: HTMLElement;
  private readonly stepText: HTMLElement;
  private readonly stepButtons: HTMLButtonElement[];
  private openLink: HTMLAnchorElement | null = null;
  private readonly notice: HTMLElement;
  private readonly noticeText: HTMLElement;
  private pendingStep: number | null;
  private readonly linkCall = new PendingCallNotice();
  private unsubscribe: () => void = () => {};

  constructor(
    readonly root: HTMLElement,
    trace: TraceData | TraceModel,
    options: Partial<ViewerOptions> = {},
    /** Where the run `options.compare` names comes from (a server's API, a trace in the page). */
    fetchRun: FetchRun | null = null,
  ) {
    this.options = { ...DEFAULT_OPTIONS, ...options };
    if (this.options.theme) setTheme(this.options.theme, false);
    this.model = trace instanceof TraceModel ? trace : TraceModel.from(trace.events, trace.source);
    root.classList.add("gw-viewer");
    root.dataset.controls = this.options.controls ? "on" : "off";
    // The graph's canvas takes no focus: a click anywhere focuses the viewer (and its frame,
    // in an embed), so the arrow keys step from then on.
    root.tabIndex = -1;
    root.addEventListener("pointerdown", () => {
      const active = document.activeElement;
      if (!active || active === document.body || !root.contains(active)) root.focus({ preventScroll: true });
    });

    // Headings for screen readers: the run's title is the page's h1 (in the bar, or hidden
    // when the bar is), each view an h2, the cards and charts inside them h3.
    const heading = (level: "h1" | "h2", text: string) => h(level, { class: "gw-visually-hidden", text });
    const panel = (tab: ViewerTab, ...children: HTMLElement[]) => {
      const el = h("div", { class: "gw-viewer-panel", role: "tabpanel", id: `gw-viewer-panel-${tab}`, "aria-label": TAB_LABELS[tab], data: { panel: tab }, hidden: true }, heading("h2", TAB_LABELS[tab]), ...children);
      this.panels.set(tab, el);
      return el;
    };
    const slot = () => h("div", { class: "gw-viewer-slot" });
    const graphEl = slot();
    const stepperEl = slot();
    const tapeEl = slot();
    const inspectorEl = slot();
    const codeEl = h("div", { class: "gw-viewer-code" });
    const outputEl = h("div", { class: "gw-viewer-output" });
    const chartsEl = h("div", { class: "gw-viewer-charts" });
    this.side = h(
      "section",
      { class: "gw-viewer-side", "aria-label": "Views" },
      panel("stepper", stepperEl),
      panel("tape", tapeEl),
      panel("inspector", inspectorEl),
      panel("code", codeEl, h("h2", { class: "gw-viewer-heading", text: "Output" }), outputEl),
      panel("charts", chartsEl),
    );
    // "line 4" (a step card's, the inspector's) lights its line in the code, which here is a
    // tab of its own: open it (the click lit a line no one could see, and seemed to do nothing)
    this.side.addEventListener("click", (ev) => {
      if (this.tab === "code" || !(ev.target instanceof Element) || !ev.target.closest(".gw-line-link")) return;
      this.show("code");
      const [scroller, lit] = [codeEl.querySelector<HTMLElement>(".gw-code-scroll"), codeEl.querySelector<HTMLElement>(".gw-code-line.linked")];
      if (scroller && lit) revealWithin(scroller, lit);
    });
    // Under the graph alone: step the backward walk without opening the stepper.
    // (the keys work on the graph alone too: onGraphKey, then the stepper's)
    const stepButton = (label: string, title: string, key: "ArrowLeft" | "ArrowRight", delta: number) =>
      h("button", { type: "button", class: "gw-btn gw-step-btn", title: `${title} (${key === "ArrowLeft" ? "←" : "→"})`, "aria-label": title, "aria-keyshortcuts": key, text: label, on: { click: () => this.goTo((this.store.state.step ?? -1) + delta) } });
    this.stepButtons = [stepButton("◀", "Step back", "ArrowLeft", -1), stepButton("▶", "Step forward", "ArrowRight", 1)];
    this.stepText = h("span", { class: "gw-viewer-step-text", "aria-live": "polite" });
    this.steps = h("div", { class: "gw-viewer-steps", hidden: true }, this.stepButtons[0], this.stepText, this.stepButtons[1]);
    // What the link asked for and this run lacks (a step past its end): said above the graph,
    // the nearest it has shown. A course author sees the link is wrong; a reader can close it.
    this.noticeText = h("span", { class: "gw-viewer-notice-text" });
    const dismiss = h("button", { type: "button", class: "gw-viewer-notice-close", "aria-label": "Dismiss this notice", title: "Dismiss", text: "×" });
    this.notice = h("div", { class: "gw-viewer-notice", role: "status", hidden: true }, h("span", { class: "gw-viewer-notice-mark", "aria-hidden": "true", text: "⚠" }), this.noticeText, dismiss);
    dismiss.addEventListener("click", () => {
      this.notice.hidden = true;
      this.root.focus({ preventScroll: true });
    });
    const bar = this.options.controls ? this.bar() : null;
    const body = h(
      "main",
      { class: "gw-viewer-body" },
      bar ? null : heading("h1", this.title() || UNTITLED),
      h("section", { class: "gw-viewer-graph", "aria-label": "grad_fn graph" }, heading("h2", TAB_LABELS.graph), this.notice, graphEl, this.steps),
      this.side,
    );
    root.replaceChildren(...(bar ? [bar] : []), body);

    const store = this.store;
    store.set({ yscale: this.options.yscale ?? "auto", perParam: this.options.perParam ?? false, compare: this.options.compare, hide: this.options.hide ?? [], graphCall: this.options.call, selection: this.options.selection });
    this.graph = new GraphView(graphEl, this.model, store);
    this.stepper = new StepperView(stepperEl, this.model, store);
    this.tape = new TapeView(tapeEl, this.model, store);
    this.inspector = new InspectorView(inspectorEl, this.model, store);
    this.code = new CodeView(codeEl, this.model, store);
    this.output = new OutputView(outputEl, this.model, store);
    this.charts = new ChartsView(chartsEl, this.model, store, fetchRun);
    this.pitfalls = new PitfallMarks(this.model, null, this.graph, codeEl);
    store.subscribe((state, changed) => this.onStore(state, changed));
    // after the stepper's own keys (registered above), which act once a step is open
    document.addEventListener("keydown", (ev) => this.onGraphKey(ev));

    this.pendingStep = this.options.step;
    this.linkCall.want(this.options.call);
    this.bindModel();
    this.show(this.options.view ?? (this.model.timeline.length || this.options.step !== null ? "stepper" : "tape"));
    this.applyPendingStep();
    this.checkCall();
    this.watchSize(graphEl);
    this.keepCodeLineInView(codeEl);
    this.showCurrentNodeAfterEachLayout();
  }

  /** The open tab. */
  get view(): ViewerTab {
    return this.tab;
  }

  /** Show another trace in the same views. */
  load(trace: TraceData | TraceModel): void {
    this.model = trace instanceof TraceModel ? trace : TraceModel.from(trace.events, trace.source);
    for (const v of [this.graph, this.stepper, this.tape, this.inspector, this.code, this.output, this.charts, this.pitfalls]) v.setModel(this.model);
    this.store.set({ step: null, op: null, selection: null, hover: null });
    this.bindModel();
  }

  /** Open a tab. The stepper opens at its first step (of the call a link chose to draw); the graph alone keeps the step it shows. */
  show(tab: ViewerTab): void {
    const patch: Partial<ViewState> = {};
    if (tab === "stepper" || tab === "tape" || tab === "inspector" || tab === "charts") patch.view = tab as ViewName;
    if (tab === "stepper" && this.store.state.step === null && this.model.timeline.length) patch.step = openingStep(this.model, this.store.state.graphCall);
    this.tab = tab;
    this.store.set(patch);
    this.render();
  }

  /** Move the stepper to timeline position `step` (clamped), keeping the open tab. */
  goTo(step: number): void {
    const n = this.model.timeline.length;
    if (!n) {
      this.pendingStep = step;
      return;
    }
    this.store.set({ view: "stepper", step: Math.max(0, Math.min(n - 1, step)) });
  }

  /**
   * The graph alone before any step is open (a graph-only export or embed): ← → Home End
   * open the backward walk, as its ▶ button does. The stepper's keys (stepper.ts) only act
   * once a step is open, so without this the keys did nothing, and without controls (a
   * "picture of one step", stepped with the keyboard) nothing else could step it. Keys go
   * to this viewer only while the page or this viewer has focus.
   */
  private onGraphKey(ev: KeyboardEvent): void {
    if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey || isTyping(ev)) return;
    if (this.tab !== "graph" || this.store.state.view === "stepper") return;
    const active = document.activeElement;
    if (active && active !== document.body && !this.root.contains(active)) return;
    const n = this.model.timeline.length;
    const to: Record<string, number> = { ArrowRight: 0, Home: 0, End: n - 1 };
    if (!n || !(ev.key in to)) return;
    ev.preventDefault();
    this.goTo(to[ev.key]);
  }

  private bar(): HTMLElement {
    const list = h("div", { class: "gw-tabs gw-viewer-tabs", role: "tablist", "aria-label": "Views" });
    for (const tab of VIEWER_TABS) {
      const b = h("button", { type: "button", role: "tab", "aria-selected": "false", "aria-controls": tab === "graph" ? undefined : `gw-viewer-panel-${tab}`, data: { view: tab }, text: TAB_LABELS[tab] });
      b.addEventListener("click", () => this.show(tab));
      this.tabs.set(tab, b);
      list.append(b);
    }
    bindTabKeys(list, (b) => this.show(b.dataset.view as ViewerTab));
    const theme = h("button", { type: "button", class: "gw-btn gw-viewer-theme", "aria-pressed": String(currentTheme() === "dark"), "aria-label": "Dark theme", title: "Dark theme", text: "◐" });
    theme.addEventListener("click", () => {
      setTheme(currentTheme() === "dark" ? "light" : "dark", false);
      theme.setAttribute("aria-pressed", String(currentTheme() === "dark"));
    });
    const title = this.title();
    const brand = ["grad", h("span", { class: "gw-brand-walk", text: "walk" })];
    // On a server, the name is the way into the full app, at the same view and step.
    const open = this.options.appUrl
      ? h("a", { class: "gw-brand gw-viewer-brand gw-viewer-open", href: this.options.appUrl, target: "_blank", rel: "noopener", title: "Open this run in gradwalk" }, brand, h("span", { class: "gw-viewer-arrow", "aria-hidden": "true", text: " ↗" }))
      : null;
    this.openLink = open;
    return h(
      "header",
      { class: "gw-viewer-bar" },
      open ?? h("span", { class: "gw-brand gw-viewer-brand" }, brand),
      h("h1", { class: title ? "gw-viewer-title" : "gw-visually-hidden", title: title || undefined, text: title || UNTITLED }),
      list,
      h("span", { class: "gw-viewer-tools" }, theme),
    );
  }

  /** The run's title: the embedder's, else the trace's own (may be empty). */
  private title(): string {
    return this.options.title ?? traceTitle(this.model);
  }

  private bindModel(): void {
    this.unsubscribe();
    this.unsubscribe = this.model.subscribe(() => {
      this.applyPendingStep();
      this.checkCall();
      this.renderCounts();
      this.renderSteps();
    });
    this.renderCounts();
  }

  /**
   * Apply the step asked for once the trace has it (a live embed gets its steps later). The
   * tape, the inspector and the charts stay open, with the stepper at that step behind their
   * tab (the app's embed code carries the step whatever the view: `?view=charts&step=3`
   * opened the stepper); the graph alone and the code show the step themselves.
   */
  private applyPendingStep(): void {
    const want = this.pendingStep;
    if (want === null) return;
    const n = this.model.timeline.length;
    if (want >= n && !this.model.isFinished) return;
    this.pendingStep = null;
    const pastEnd = stepPastEndNotice(want, n);
    if (pastEnd) this.say(pastEnd);
    if (!n) return;
    if (this.tab === "tape" || this.tab === "inspector" || this.tab === "charts") this.store.set({ step: Math.min(want, n - 1) });
    else this.goTo(want);
  }

  /** A link's `call` the run did not record in full (the graph draws the run's default): say so, once the run has finished. */
  private checkCall(): void {
    const missing = this.linkCall.take(this.model);
    if (missing) this.say(missing);
  }

  /** Show `text` in the notice above the graph (after anything it says already). */
  private say(text: string): void {
    this.noticeText.textContent = this.notice.hidden || !this.noticeText.textContent ? text : `${this.noticeText.textContent} ${text}`;
    this.notice.title = this.noticeText.textContent;
    this.notice.hidden = false;
  }

  private onStore(state: ViewState, changed: ReadonlySet<keyof ViewState>): void {
    if (changed.has("step") || changed.has("view")) {
      this.renderSteps();
      this.showCurrentNode();
    }
    if (changed.has("step") || changed.has("view") || changed.has("selection") || chartChoicesChanged(changed)) this.renderOpenLink(state);
    if (!changed.has("view")) return;
    // A view opened from inside (a node clicked opens the inspector) opens its tab; the
    // graph alone and the code stay open while the stepper moves.
    if ((this.tab === "graph" || this.tab === "code") && state.view === "stepper") return;
    if (this.tab === state.view) return;
    this.tab = state.view;
    this.render();
  }

  private render(): void {
    this.root.dataset.view = this.tab;
    selectTab(this.tabs.values(), (b) => b.dataset.view === this.tab);
    for (const [tab, el] of this.panels) el.hidden = tab !== this.tab;
    this.side.hidden = this.tab === "graph";
    this.renderSteps();
  }

  private renderSteps(): void {
    const m = this.model;
    const n = m.timeline.length;
    this.steps.hidden = this.tab !== "graph" || n === 0 || !this.options.controls;
    if (this.steps.hidden) return;
    const state = this.store.state;
    const step = state.view === "stepper" && state.step !== null ? Math.min(state.step, n - 1) : null;
    const entry = step === null ? null : m.timeline[step];
    let what = "";
    if (entry?.exec) what = m.node(entry.exec.node)?.name ?? "";
    else if (entry) what = "end of backward";
    this.stepText.textContent = step === null ? `backward: ${n} steps` : `step ${step + 1} of ${n}${what ? ` · ${what}` : ""}`;
    this.stepButtons[0].disabled = step === null || step === 0;
    this.stepButtons[1].disabled = step !== null && step >= n - 1;
  }

  /** "Open in gradwalk" opens the app on the same view and step, with the charts' choices. */
  private renderOpenLink(state: ViewState): void {
    if (!this.openLink || !this.options.appUrl) return;
    const url = new URL(this.options.appUrl, location.href);
    url.searchParams.set("view", state.view);
    if (state.step !== null) url.searchParams.set("step", String(state.step));
    else url.searchParams.delete("step");
    writeSelection(url.searchParams, state.selection);
    writeChartChoices(url.searchParams, state); // appUrl is the run's bare link: nothing to replace
    this.openLink.href = url.href;
  }

  private renderCounts(): void {
    setTabCount(this.tabs.get("stepper"), this.model.timeline.length, ["step", "steps"]);
    setTabCount(this.tabs.get("code"), this.model.errors.length + this.model.pitfalls.length, ["error or pitfall", "errors and pitfalls"]);
  }

  /** After every layout (the graph's own fit keeps it readable), bring the step's node into view. */
  private showCurrentNodeAfterEachLayout(): void {
    const next = () =>
      void this.graph.whenLaidOut().then(() => {
        this.showCurrentNode();
        next();
      });
    next();
  }

  /** What the open step is about: the node it runs, or the leaves once backward has ended. */
  private focusNodes(): NodeCollection {
    const cy = this.graph.core;
    const current = cy.nodes(".current");
    if (current.nonempty()) return current;
    const state = this.store.state;
    const entry = stepperEntry(this.model, state);
    return entry?.kind === "end" ? cy.nodes("[kind = 'leaf'], [kind = 'param']") : cy.collection();
  }

  /**
   * Pan what the step is about into view when it is outside it, the least distance: centring
   * the leaves at the end of a call, in a short frame, left the graph's top cut off above
   * and the frame's lower half empty.
   */
  private showCurrentNode(): void {
    const cy = this.graph.core;
    // Before the layout, nodes sit at the origin: wait for it (showCurrentNodeAfterEachLayout calls again).
    if (this.graph.busy || this.graph.lastLayout === null) return;
    const focus = this.focusNodes();
    if (focus.empty() || !cy.width()) return;
    const { dx, dy } = leastPan(focus.renderedBoundingBox(), cy, 12);
    if (!dx && !dy) return;
    cy.stop();
    panView(cy, { x: dx, y: dy });
  }

  /**
   * Bring the step's line back into the code listing's sight when the listing changes size.
   * The listing reveals it when the step changes, but the pane settles after that (the
   * output fills, the graph takes its rows, the frame is resized): at 720 x 420, step 4 of
   * small_net lit line 14 below the four lines left in sight.
   */
  private keepCodeLineInView(codeEl: HTMLElement): void {
    const scroller = codeEl.querySelector<HTMLElement>(".gw-code-scroll");
    if (!scroller || typeof ResizeObserver === "undefined") return;
    new ResizeObserver(() => {
      const line = scroller.querySelector<HTMLElement>(".gw-code-line.current");
      if (line && scroller.clientHeight > 0) revealWithin(scroller, line);
    }).observe(scroller);
  }

  /** Narrow roots stack the panel under the graph; Cytoscape learns of every size change. */
  private watchSize(graphEl: HTMLElement): void {
    const apply = () => {
      this.root.dataset.layout = this.root.clientWidth < NARROW ? "narrow" : "wide";
    };
    apply();
    if (typeof ResizeObserver === "undefined") return;
    let last = "";
    // The canvas, not the graph's root: the freed-graph note takes room from it alone.
    const canvas = graphEl.querySelector<HTMLElement>(".gw-graph-canvas") ?? graphEl;
    const observer = new ResizeObserver(() => {
      apply();
      const size = `${canvas.clientWidth}x${canvas.clientHeight}`;
      if (size === last) return;
      last = size;
      this.graph.core.resize();
      if (this.graph.busy) return;
      this.graph.fit(false);
      this.showCurrentNode();
    });
    observer.observe(this.root);
    observer.observe(canvas);
  }
}
