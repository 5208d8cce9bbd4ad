// The grad_fn graph view: Cytoscape.js drawing what graph-build.ts derives from the model,
// laid out in layers from the loss down to the leaves, growing live, replayed by the tape
// scrubber and lit up node by node by the backward stepper.
//
// Level of detail: small graphs get ELK's layered layout (in a worker); big ones get
// Cytoscape's breadth-first layout, module groups folded, edge labels dropped, and labels
// hidden when zoomed out (min-zoomed-font-size in graph-style.ts); past DRAW_MAX nodes, only
// the part nearest the output is drawn until the user asks for all (graph-window.ts).
// graph-sync.ts hands the built elements to Cytoscape, graph-layout.ts places them,
// graph-schedule.ts times rebuilds (graph-pacing.ts paces them while a run streams),
// graph-elements.ts finds the element showing a node or a selection, graph-keys.ts walks
// the graph from the keyboard, graph-toolbar.ts builds the toolbar, graph-offscreen.ts
// the cues at the pane's edges, graph-legend.ts the legend and graph-banner.ts the note at
// a call's end.
import cytoscape, { type Core, type NodeSingular } from "cytoscape";
import { h, PANES_RESIZED, perFrame } from "./dom";
import { GraphBanner } from "./graph-banner";
import { buildGraph, type GEdge, type GNode } from "./graph-build";
import { CallPicker } from "./graph-calls";
import { elementOfNode, elementOfSelection, lookedAt, type Shown, stepperElement } from "./graph-elements";
import { GraphKeyboard } from "./graph-keys";
import { placeEdgeLabels } from "./graph-labels";
import { type LayoutInfo, placeElements, spreadPlaced } from "./graph-layout";
import { graphLegend, kindsShown, showLegendFor } from "./graph-legend";
import { foldToFit } from "./graph-lod";
import { OffscreenCues } from "./graph-offscreen";
import { BIG, type Rebuild } from "./graph-pacing";
import { hoverOf, tapOf } from "./graph-pointer";
import { RebuildScheduler } from "./graph-schedule";
import { bannerText, emptyGraphText, StepPainter } from "./graph-steps";
import { bindNodeTips, nodeTip } from "./graph-tips";
import { allowCytoscapeUnderCsp, graphStyle } from "./graph-style";
import { syncElements } from "./graph-sync";
import { graphToolbar } from "./graph-toolbar";
import { fitGraph, PRESENTER_LABEL_PX, revealElement, zoomAboutCentre } from "./graph-viewport";
import { type Ids, PartDrawn } from "./graph-window";
import { ELK_MAX_NODES, warmElk } from "./layout";
import { type Store, stepperEntry, type ViewState } from "./store";
import { presenterOn } from "./theme";
import type { StepEntry, TraceModel } from "./trace-model";

/** Above this many grad_fn nodes, fold module groups until the graph fits (compound nodes are costly to draw). */
const FOLD_ABOVE = ELK_MAX_NODES;
/** Above this many grad_fn nodes, drop per-node second lines and edge labels. */
const COMPACT_ABOVE = 1500;
/**
 * A graph of more laid-out nodes than this is drawn in part unless the user asks for all of
 * it: the part nearest its outputs (graph-window.ts). Drawing 2,500 nodes holds the page for
 * 4 s on a 2-core laptop, 12,500 for 17 s (a runaway loop's 27,000 for 20-40 s).
 */
const DRAW_MAX = 3000;

export class GraphView {
  private cy!: Core;
  private big = false;
  private readonly canvas: HTMLElement;
  /** The note at a call's end (graph-banner.ts). */
  private readonly banner = new GraphBanner();
  /** Says what the nodes' looks mean: the graph's kinds, or a backward step's states. */
  private readonly legend: HTMLElement;
  private readonly empty: HTMLElement;
  /** What the empty graph says before any run, when not "Press ▶ Run" (a classroom's student: setBeforeRunText). */
  private beforeRun: string | null = null;
  private readonly info: HTMLElement;
  private readonly savedToggle: HTMLInputElement;
  private showSaved = true;
  private savedTouched = false;
  private collapsed = new Set<string>();
  private collapseTouched = false;
  private elements = new Map<string, GNode | GEdge>();
  /** When the graph rebuilds (graph-schedule.ts): `rebuild` runs between its begin and end. */
  private readonly scheduler = new RebuildScheduler({
    finished: () => this.model.isFinished,
    nodeCount: () => this.model.nodes.size,
    rebuild: (paced) => this.rebuild(paced),
    holdUntilRunEnds: () => (this.info.textContent = `${this.model.nodes.size} nodes so far · drawn when the run ends`),
  });
  /** What of a graph too big to draw whole (DRAW_MAX) is drawn. */
  private readonly part = new PartDrawn(DRAW_MAX, () => this.schedule(0));
  private readonly drawAllButton: HTMLButtonElement;
  private userMoved = false;
  private laidOut = false;
  /** Whether the last fit was for the stepper (its node kept readable), so a change refits. */
  private fittedForStepper = false;
  private refitQueued = false;
  /** The type scale the nodes were last placed at (the presenter size makes nodes bigger). */
  private placedAtScale = 0;
  private linked: string[] = [];
  /** A tap in the graph is setting the store: the selection it makes is not revealed (it is under the pointer). */
  private tapping = false;
  private readonly keys: GraphKeyboard;
  private readonly painter: StepPainter;
  /** The "Graph of" list: every backward call's graph, or one call's. */
  private readonly calls: CallPicker;
  /** The "3 more ▸" cues where the graph goes on past the pane's edges (graph-offscreen.ts). */
  private readonly cues = new OffscreenCues(() => (this.userMoved = true));
  /** Slide edge labels off nodes and each other (graph-labels.ts), a frame after they change. */
  private readonly placeLabels = perFrame(() => this.big || placeEdgeLabels(this.cy));
  lastLayout: LayoutInfo | null = null;
  /** The last rebuilds, for tests: when each began, how long it took, and whether it was paced. */
  get rebuilds(): readonly Rebuild[] {
    return this.scheduler.log;
  }

  constructor(
    readonly root: HTMLElement,
    private model: TraceModel,
    readonly store: Store,
  ) {
    const view = this;
    this.painter = new StepPainter({
      get cy() {
        return view.cy;
      },
      get model() {
        return view.model;
      },
      get big() {
        return view.big;
      },
      elementOfNode: (id) => elementOfNode(this.shown(), id),
    });
    root.classList.add("gw-graph");
    this.calls = new CallPicker(() => this.model, store, () => {
      this.userMoved = false; // another call's graph: fit it
      this.schedule(0);
    });
    const toolbar = graphToolbar({
      fit: () => this.fit(true, false),
      zoomBy: (factor) => this.zoomBy(factor),
      showSaved: (shown) => {
        this.showSaved = shown;
        this.savedTouched = true;
        this.schedule(0);
      },
      foldAll: () => this.setCollapsed(new Set(this.model.modulePaths)),
      unfoldAll: () => this.setCollapsed(new Set()),
      drawAll: () => {
        this.part.all = true;
        this.userMoved = false;
        this.schedule(0);
      },
    }, this.calls.element);
    ({ savedToggle: this.savedToggle, info: this.info, drawAllButton: this.drawAllButton } = toolbar);
    this.canvas = h("div", {
      class: "gw-graph-canvas",
      tabindex: "0",
      role: "application",
      "aria-roledescription": "graph",
      "aria-label": "grad_fn graph",
      title: "Arrow keys move between nodes, Enter opens one, + and − zoom, 0 fits",
    });
    const announcer = h("div", { class: "gw-visually-hidden", "aria-live": "polite", "data-gw": "graph-announcer" });
    this.keys = new GraphKeyboard(this.canvas, announcer, {
      get cy() {
        return view.cy;
      },
      store,
      tap: (el) => this.tapNode(el),
      zoomBy: (factor) => this.zoomBy(factor),
      fit: () => this.fit(true, false),
      reveal: (id) => this.reveal(id),
      drawnInPart: () => this.part.cut,
    });
    this.empty = h("div", { class: "gw-graph-empty", text: emptyGraphText(this.model) });
    this.legend = graphLegend();
    root.append(toolbar.element, h("div", { class: "gw-graph-stage" }, h("div", { class: "gw-graph-view" }, this.canvas, this.cues.element), this.banner.element, this.empty), this.legend, announcer);
    this.createCy(false);
    store.subscribe((state, changed) => this.onStore(state, changed));
    document.addEventListener("gw-theme", () => this.restyle());
    // Cytoscape only notices window resizes; panes also change size (presenter type, layout,
    // a divider dragged). A big graph takes tens of ms to draw at a new size: while a
    // divider is dragged (an ancestor marked data-resizing) it keeps its size, and takes the
    // new one when the drag ends (PANES_RESIZED).
    const resized = () => {
      this.cy.resize();
      if (this.laidOut && !this.userMoved) this.fit(false);
    };
    new ResizeObserver(() => {
      if (!(this.big && this.canvas.closest("[data-resizing]"))) resized();
    }).observe(this.canvas);
    document.addEventListener(PANES_RESIZED, () => {
      if (this.big) resized();
    });
    this.canvas.addEventListener("wheel", () => (this.userMoved = true), { passive: true });
    this.canvas.addEventListener("pointerdown", () => (this.userMoved = true));
    model.subscribe(() => this.schedule());
    this.schedule(0);
    // Loading ELK's worker takes a second: do it while the user reads the code.
    window.setTimeout(warmElk, 300);
  }

  /** Say `text` in the empty graph before any run, instead of "Press ▶ Run" (null: that again). */
  setBeforeRunText(text: string | null): void {
    this.beforeRun = text;
    if (!this.model.run) this.empty.textContent = emptyGraphText(this.model, text);
  }

  /** Show another run's model. */
  setModel(model: TraceModel): void {
    this.model = model;
    this.collapsed = new Set();
    this.collapseTouched = false;
    this.savedTouched = false;
    this.laidOut = false;
    this.userMoved = false;
    this.painter.reset();
    this.elements.clear();
    this.scheduler.reset();
    this.part.reset();
    this.createCy(false);
    // until the first layout lands: a stored run's graph is on its way, not waiting for ▶ Run
    this.root.classList.remove("gw-graph-has-nodes");
    this.empty.textContent = model.nodes.size > 0 ? "Drawing the graph…" : emptyGraphText(model, this.beforeRun);
    model.subscribe(() => this.schedule());
    this.schedule(0);
  }

  /** Resolve after the next layout has been applied. */
  whenLaidOut(): Promise<LayoutInfo> {
    return this.scheduler.whenLaidOut();
  }

  get core(): Core {
    return this.cy;
  }

  private createCy(big: boolean): void {
    allowCytoscapeUnderCsp();
    this.cy?.destroy();
    this.big = big;
    this.cy = cytoscape({
      container: this.canvas,
      elements: [],
      style: graphStyle(this.root, big),
      minZoom: 0.01,
      maxZoom: 4,
      boxSelectionEnabled: false,
      // a drag pans, wherever it starts (its nodes are pannable: graph-sync.ts): grabbed, a
      // node (or a module's box, which covers most of a network's graph) moved off its edges'
      // labels and the cues' count, and a phone's swipe to pan broke the layout until a reload
      autoungrabify: true,
      selectionType: "single",
      textureOnViewport: big,
      hideEdgesOnViewport: big,
      pixelRatio: big ? 1 : "auto",
    });
    this.elements.clear();
    this.painter.reset();
    this.keys?.reset();
    const cy = this.cy;
    this.cues.attach(cy);
    cy.on("mouseover", "node", (ev) => this.hoverNode(ev.target as NodeSingular));
    cy.on("mouseout", "node", () => this.store.set({ hover: null }));
    bindNodeTips(cy, this.canvas, (d) => nodeTip(this.model, d, stepperEntry(this.model, this.store.state)));
    cy.on("tap", "node", (ev) => this.tapNode(ev.target as NodeSingular));
    cy.on("tap", (ev) => {
      if (ev.target === cy) this.store.set({ selection: null });
    });
  }

  private restyle(): void {
    this.cy.style(graphStyle(this.root, this.big));
    // The presenter size changes node sizes: lay out again.
    this.schedule(0);
  }

  // --- building and layout ----------------------------------------------------------------

  /** Rebuild and re-layout soon (graph-schedule.ts: 0 when the user asked or the run finished). */
  schedule(delay = 80): void {
    this.scheduler.schedule(delay);
  }

  /** Whether a rebuild or layout is pending or running. */
  get busy(): boolean {
    return this.scheduler.busy;
  }

  private autoLevelOfDetail(): void {
    const n = this.model.nodes.size;
    if (!this.savedTouched) {
      // Saved tensors teach well on lesson-sized graphs and clutter bigger ones.
      this.showSaved = n <= 10;
      this.savedToggle.checked = this.showSaved;
    }
    if (!this.collapseTouched) this.collapsed = n > FOLD_ABOVE ? foldToFit(this.model, FOLD_ABOVE) : new Set();
    this.root.classList.toggle("gw-has-modules", this.model.modulePaths.size > 0);
  }

  private setCollapsed(paths: Set<string>): void {
    this.collapsed = paths;
    this.collapseTouched = true;
    this.userMoved = false;
    this.schedule(0);
  }

  private toggleGroup(path: string): void {
    const next = new Set(this.collapsed);
    if (next.has(path)) next.delete(path);
    else next.add(path);
    this.collapsed = next;
    this.collapseTouched = true;
    this.schedule(0);
  }

  private async rebuild(paced: boolean): Promise<void> {
    const run = this.scheduler.begin(paced);
    try {
      this.autoLevelOfDetail();
      const fontScale = Number(getComputedStyle(this.root).getPropertyValue("--graph-font-scale")) || 1;
      this.calls.refresh();
      const hidden = this.calls.hiddenNodes();
      const whole = buildGraph(this.model, { showSaved: this.showSaved, collapsed: this.collapsed, compactAbove: COMPACT_ABOVE, fontScale, hidden });
      const built = this.part.take(whole);
      const layoutNodes = built.nodes.filter((n) => n.kind !== "group").length;
      const big = layoutNodes > BIG;
      if (big !== this.big) this.createCy(big);
      // New sizes, new gaps: NOTE [Bigger type, same gaps] in graph-layout.ts.
      if (this.placedAtScale && fontScale !== this.placedAtScale) {
        spreadPlaced(this.cy, fontScale / this.placedAtScale);
        // and its edges wait for the new places (nodes of a new size can still touch meanwhile)
        this.cy.edges().addClass("unplaced");
      }
      // New elements, or node sizes changed by the presenter type: place them all again.
      const structural = syncElements(this.cy, this.elements, built, (id) => this.painter.forget(id)) || fontScale !== this.placedAtScale;
      if (!this.root.classList.toggle("gw-graph-has-nodes", built.nodes.length > 0)) this.empty.textContent = emptyGraphText(this.model, this.beforeRun);
      let layout: LayoutInfo["layout"] = this.lastLayout?.layout ?? "elk";
      if (structural) {
        const cy = this.cy;
        layout = await placeElements(cy, built.nodes, built.edges, layoutNodes, this.laidOut && layoutNodes <= 200);
        // Another run (setModel) replaced the graph during the layout: drop this one, the
        // rebuild it queued draws the new run.
        if (cy !== this.cy) return;
        this.cy.elements(".unplaced").removeClass("unplaced");
        this.placedAtScale = fontScale;
      }
      this.painter.index(built.nodes, built.edges);
      this.cues.refresh();
      this.applyState(this.store.state);
      this.applyLinks(this.store.state);
      this.applySelection(this.store.state);
      if (structural && (!this.laidOut || !this.userMoved)) this.fit(false);
      const focus = this.part.toReveal(this.elements);
      if (focus) this.reveal(focus, false);
      this.laidOut = true;
      const now = performance.now();
      const info: LayoutInfo = { at: now, ms: now - run.started, nodes: built.nodes.length, edges: built.edges.length, layout };
      this.lastLayout = info;
      const count = built.cut ? `${built.shownGradNodes} of ${built.gradNodes} nodes` : `${built.gradNodes} node${built.gradNodes === 1 ? "" : "s"}`;
      this.info.textContent = `${count}${this.collapsed.size ? ` · ${this.collapsed.size} folded` : ""}`;
      const around = this.part.aroundFocus ? "around the node you are looking at (the stepper's, the selection, the tape's op)" : "nearest its output, where backward starts";
      this.info.title = built.cut ? `A graph this big is drawn in part: the nodes ${around}.` : "";
      this.drawAllButton.hidden = !built.cut;
      this.canvas.setAttribute("aria-label", `grad_fn graph with ${count}${built.cut ? " drawn" : ""}; arrow keys move between nodes, Enter opens one`);
      this.keys.forgetRemoved();
      this.scheduler.laidOut(info);
    } finally {
      this.scheduler.end(run);
    }
  }

  /**
   * Fit the graph in view (graph-viewport.ts): at most life-size; when `readable`, a graph
   * the stepper walks (or any lesson-sized one) too tall to read whole is shown from its top
   * at a zoom where labels show, the stepper's node in view. The Fit button shows it all.
   */
  fit(animate: boolean, readable = true): void {
    const focus = readable ? stepperElement(this.shown(), this.store.state) : null;
    const labelPx = presenterOn() ? PRESENTER_LABEL_PX : null;
    fitGraph(this.cy, { animate, big: this.big, readable, focus, covers: this.cues.covers(), labelPx });
    this.fittedForStepper = focus !== null;
    this.userMoved = false;
  }

  private zoomBy(factor: number): void {
    zoomAboutCentre(this.cy, factor);
    this.userMoved = true;
  }

  /** Bring element `id` into view when it is not wholly in it (`byUser`: the user moved there). */
  private reveal(id: string, byUser = true): void {
    const el = this.cy.getElementById(id);
    if (el.nonempty() && revealElement(this.cy, el, this.big, this.cues.covers()) && byUser) this.userMoved = true;
  }

  // --- state: scrubber, stepper, links, selection -------------------------------------------

  private onStore(state: ViewState, changed: ReadonlySet<keyof ViewState>): void {
    if (changed.has("view") || changed.has("step") || changed.has("op")) this.applyState(state);
    // The stepper keeps its graph readable (see fit): opening or leaving it refits a view
    // the user has not moved.
    if (!this.refitQueued && this.needsStepperRefit()) {
      // After the next frame: measuring the graph right after its labels changed (the stepper
      // adds each leaf's .grad line) keeps their old size, and the labels are drawn clipped.
      this.refitQueued = true;
      requestAnimationFrame(() => {
        this.refitQueued = false;
        if (this.needsStepperRefit()) this.fit(false);
      });
    }
    if (changed.has("hover")) this.applyLinks(state);
    if (changed.has("selection")) this.applySelection(state);
  }

  private applyState(state: ViewState): void {
    const entry = stepperEntry(this.model, state);
    const { changed } = this.painter.paint(entry, entry ? null : state.op);
    this.placeLabels();
    this.banner.show(bannerText(this.model, entry));
    showLegendFor(this.legend, entry ? this.painter.looksShown() : null, kindsShown(this.cy));
    if (entry && changed) this.follow(entry);
    this.keepInPart();
  }

  private needsStepperRefit(): boolean {
    return this.laidOut && !this.userMoved && !this.busy && (stepperElement(this.shown(), this.store.state) !== null) !== this.fittedForStepper;
  }

  /** Bring the stepper's node into view when it is outside (big graphs are not all visible). */
  private follow(entry: StepEntry): void {
    const nodeId = entry.exec?.node;
    if (nodeId === undefined) return;
    const id = elementOfNode(this.shown(), nodeId);
    if (id) this.reveal(id, false);
  }

  /** Where graph-elements.ts looks: among `elements` (default: those drawn now). */
  private shown(elements: Ids = this.elements): Shown {
    return { model: this.model, collapsed: this.collapsed, elements };
  }

  /** Keep what the user looks at in a graph drawn in part (PartDrawn). */
  private keepInPart(): void {
    if (this.part.cut || this.part.aroundFocus) this.part.follow(lookedAt(this.shown(this.part.whole), this.store.state), this.elements);
  }

  private applyLinks(state: ViewState): void {
    const cy = this.cy;
    const ids: string[] = [];
    for (const n of state.hover?.nodes ?? []) {
      const node = this.model.node(n);
      const id = elementOfNode(this.shown(), n);
      if (id) ids.push(id);
      if (node?.name === "AccumulateGrad" && node.tensor !== null) ids.push(`t${node.tensor}`);
    }
    cy.batch(() => {
      for (const id of this.linked) cy.getElementById(id).removeClass("linked");
      for (const id of ids) cy.getElementById(id).addClass("linked");
    });
    this.linked = ids;
  }

  private applySelection(state: ViewState): void {
    const cy = this.cy;
    const sel = state.selection;
    const id = sel ? elementOfSelection(this.shown(), sel) : null;
    this.keepInPart();
    cy.batch(() => {
      cy.$(":selected").unselect();
      if (id) cy.getElementById(id).select();
    });
    // picked elsewhere (the inspector's next_functions, the tape, a link): bring it into view,
    // clear of the "N more" cues; one clicked in the graph stays where the pointer is
    if (id && !this.tapping) this.reveal(id, false);
  }

  private hoverNode(el: NodeSingular): void {
    const hover = hoverOf(this.model, el.data() as GNode, (path) => this.painter.membersOf(path));
    if (hover) this.store.set({ hover });
  }

  private tapNode(el: NodeSingular): void {
    const d = el.data() as GNode;
    if ((d.kind === "group" || d.kind === "collapsed") && d.path) this.toggleGroup(d.path);
    else {
      const patch = tapOf(this.model, this.store.state, d);
      this.tapping = true;
      try {
        if (patch) this.store.set(patch);
      } finally {
        this.tapping = false;
      }
    }
  }
}
