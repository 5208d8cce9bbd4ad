// The full app: the editor and run controls wired to the server, and the views (graph,
// tape, stepper, inspector, output, charts) sharing one TraceModel and one Store; pitfalls
// are marked in the editor and on the graph. The page's template provides the skeleton;
// every lookup is scoped to the app's root element.
import { Api, ApiError, type Bootstrap, type Example, type RunInfo, type RunLimits, RunStream } from "./api";
import { ChartsView } from "./charts";
import { $, isTyping, setTabCount } from "./dom";
import { Drafts } from "./drafts";
import { Editor } from "./editor";
import { ExamplesMenu } from "./examples-menu";
import { GraphView } from "./graph";
import { openingStep } from "./graph-calls";
import { bindHeaderMenu } from "./header-menu";
import { followHistory } from "./history-nav";
import { InspectorView } from "./inspector";
import { PendingCallNotice, stepPastEndNotice } from "./link-notices";
import { OutputView } from "./output";
import { PageTitle, runTitle } from "./page-title";
import { PaneSplitters } from "./pane-splitters";
import { PitfallMarks } from "./pitfalls";
import { explainRunFailure, RunControls } from "./run-controls";
import { sayStreamFailed } from "./run-lost";
import { bindShareButtons, copyText } from "./share";
import { ShortcutsDialog } from "./shortcuts";
import { sameWalk, walkTo } from "./step-position";
import { StepperView } from "./stepper";
import { currentLine, linksOfLine, Store, VIEWS, type ViewName, type ViewState } from "./store";
import { TapeView } from "./tape";
import { bindTabKeys, showView } from "./tabs";
import { bindThemeButtons } from "./theme";
import { bindOpenTrace } from "./trace-file";
import { TraceModel } from "./trace-model";
import type { GradwalkEvent, GradwalkTrace } from "./types/events";
import { CHART_CHOICE_KEYS, readUrl, type UrlState, UrlSync } from "./url-state";

/** The parts of the view state the address bar keeps (url-state.ts). */
const URL_KEYS: readonly (keyof ViewState)[] = ["view", "step", "op", "selection", "graphCall", ...CHART_CHOICE_KEYS];

const FALLBACK_SOURCE = `import torch

x = torch.tensor(2.5, requires_grad=True)
y = x**3 - 4*x
y.backward()
print(x.grad)
`;

/** Set by the modes that wrap the app (lessons, classroom rooms). */
export interface AppHooks {
  /** Create runs some other way than POST /api/runs (a room's viewer runs through the room). */
  createRun?: (source: string, device: string, limits?: RunLimits) => Promise<RunInfo>;
  /** Told whenever the shown run changes (a new run, a loaded one, a trace file: null). */
  onModel?: (runId: string | null, model: TraceModel) => void;
}

export class App {
  readonly store = new Store();
  readonly hooks: AppHooks = {};
  readonly api: Api;
  model = new TraceModel();
  runId: string | null = null;
  /** How many runs ▶ Run started on this page (a lesson's run, fetched meanwhile, is not shown over one). */
  runsStarted = 0;
  private readonly linkCall = new PendingCallNotice();
  /** The learner's unsaved edits, kept per run for reloads and Back/Forward (drafts.ts). */
  readonly drafts = new Drafts(() => this.runId ?? "");
  /** Counts the runs asked for: a stored run's trace that arrives after another run was asked for is dropped. */
  private runRequests = 0;
  readonly editor: Editor;
  readonly graph: GraphView;
  /** The dividers between the panes. */
  readonly panes: PaneSplitters;
  readonly shortcuts: ShortcutsDialog;
  readonly tape: TapeView;
  readonly stepper: StepperView;
  readonly inspector: InspectorView;
  readonly output: OutputView;
  readonly charts: ChartsView;
  readonly pitfalls: PitfallMarks;
  private stream: RunStream | null = null;
  private readonly url = new UrlSync();
  private pending: UrlState | null = null;
  /** The pending URL loads another run: what it does not name (op, pick, call) is cleared, not kept from the last run. */
  private pendingNewRun = false;
  /** When the run being followed was started from the stepper: the walk up to its step. */
  private stepAfterRun: string[] | null = null;
  /** Where runAndOpen() opens its run once it has finished (null: as stepAfterRun says). */
  private openAfterRun: { view: ViewName; step: number } | null = null;
  private unsubscribeModel: () => void = () => {};
  /** ▶ Run, Stop and the run's status (run-controls.ts). */
  private readonly controls: RunControls;
  /** The header's examples list (examples-menu.ts). */
  readonly examplesMenu: ExamplesMenu;
  private readonly deviceSelect: HTMLSelectElement;
  private readonly tabs: HTMLElement[];
  /** The tab's title: the run open's name (a lesson's, once the lessons are in, is told by the lessons). */
  readonly title = new PageTitle(() => (this.runId !== null || this.model.run ? (this.runTitle() ?? `run ${this.runId ?? ""}`.trim()) : null));
  /** The run's name (its embed code's `<iframe title>`, the tab's title), as the embed's own header reads it. */
  private readonly runTitle = () => runTitle(this.model, (source) => this.examplesMenu.titleOf(source));

  constructor(
    readonly root: HTMLElement,
    readonly boot: Bootstrap,
  ) {
    this.api = new Api(boot.api);
    const store = this.store;
    this.editor = new Editor($(root, "[data-gw=editor]"), {
      doc: "",
      onRun: () => void this.run(),
      onChange: (byUser) => (this.drafts.changed(this.editor.source, byUser), this.examplesMenu.codeChanged(this.editor.source, byUser)),
      onHoverLine: (line) => store.set({ hover: line === null ? null : linksOfLine(this.model, line) }),
    });
    this.output = new OutputView($(root, "[data-gw=output]"), this.model, store);
    // an iteration or a step recorded metrics-only: run the code again with it in full
    const recordInFull = (step: number) => void this.run({ detail_every: step });
    this.output.recordInFull = recordInFull;
    this.graph = new GraphView($(root, "[data-gw=graph]"), this.model, store);
    this.tape = new TapeView($(root, "[data-gw=tape]"), this.model, store);
    this.stepper = new StepperView($(root, "[data-gw=stepper]"), this.model, store);
    this.inspector = new InspectorView($(root, "[data-gw=inspector]"), this.model, store);
    // a run compared on the charts: the run just replaced is kept (offered below), any other is fetched
    this.charts = new ChartsView($(root, "[data-gw=charts]"), this.model, store, (id) => this.api.trace(id));
    this.charts.steps.recordInFull = recordInFull;
    this.pitfalls = new PitfallMarks(this.model, this.editor.view, this.graph);

    this.controls = new RunControls(root, () => void this.run(), () => this.stop());
    this.examplesMenu = new ExamplesMenu($(root, "[data-gw=examples]"), (source) => {
      this.drafts.ran(source); // an example chosen over the learner's edits: theirs go
      this.editor.source = source;
      this.editor.setErrors([]);
      this.editor.focus();
    });
    this.deviceSelect = $(root, "[data-gw=device]");
    $(root, "[data-gw=device-field]").hidden = !boot.cuda;
    bindOpenTrace(root.querySelector<HTMLInputElement>("[data-gw=open-trace]"), (trace) => this.loadTrace(trace), (m) => this.output.say(m, "error"));
    root.querySelector("[data-gw=copy-link]")?.addEventListener("click", (ev) => void this.copyLink(ev.currentTarget as HTMLButtonElement));
    bindShareButtons(root, boot.api, () => ({ runId: this.runId, state: this.store.state, finished: this.model.isFinished, title: this.runTitle() }), (m) => this.output.say(m));
    bindThemeButtons(root.querySelector("[data-gw=theme]"), root.querySelector("[data-gw=presenter]"));
    bindHeaderMenu(root.querySelector(".gw-header"));
    this.panes = new PaneSplitters($(root, ".gw-main"));
    this.shortcuts = new ShortcutsDialog(root);
    root.querySelector("[data-gw=shortcuts]")?.addEventListener("click", () => this.shortcuts.open());

    this.tabs = [...root.querySelectorAll<HTMLElement>("[role=tab][data-view]")];
    for (const tab of this.tabs) {
      tab.addEventListener("click", () => this.openView(tab.dataset.view as ViewName));
    }
    const tablist = this.tabs[0]?.closest<HTMLElement>("[role=tablist]");
    if (tablist) bindTabKeys(tablist, (tab) => this.openView(tab.dataset.view as ViewName));
    document.addEventListener("keydown", (ev) => {
      if (isTyping(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (ev.key === "?") this.shortcuts.open();
      const n = Number(ev.key);
      if (n >= 1 && n <= VIEWS.length) this.openView(VIEWS[n - 1]);
    });

    store.subscribe((state, changed) => this.onStore(state, changed));
    followHistory(this.url, (wanted) => this.applyUrl(wanted, true), () => this.runId);
    this.controls.setStatus("idle");
    this.onStore(store.state, new Set(["view"]));
    this.bindModel();
  }

  /** Load the examples, then whatever the URL points at. */
  async start(): Promise<void> {
    const wanted = readUrl();
    let examples: Example[] = [];
    try {
      examples = await this.api.examples();
    } catch (err) {
      this.output.say(`Could not load the examples: ${(err as Error).message}`, "error");
    }
    this.examplesMenu.fill(examples);
    await this.applyUrl(wanted, true);
    // no run shown (none asked for, or one this server lacks): the starter example, as on a fresh page
    if (this.runId === null && !this.editor.source) this.editor.source = examples[0]?.source ?? FALLBACK_SOURCE;
    if (this.runId === null) this.drafts.restore(this.editor, this.output);
  }

  // --- runs ----------------------------------------------------------------------------------

  /** Why ▶ Run would not start a run now (a room's viewer who may not run code), or null. */
  get runRefused(): string | null {
    return this.controls.blocked;
  }

  get running(): boolean {
    return this.stream !== null && !this.model.isFinished;
  }

  /** Run the editor's code; `limits` for this run only (the server bounds them). */
  async run(limits?: RunLimits): Promise<void> {
    if (this.controls.blocked !== null && !this.running) {
      this.output.say(this.controls.blocked); // Ctrl+Enter on a button that is off says why
      return;
    }
    if (this.running || this.controls.runButton.disabled) return;
    const source = this.editor.source;
    this.editor.setErrors([]);
    this.controls.setStatus("starting");
    this.output.unsay(); // "Could not reach the server" and the like are over
    this.controls.runButton.disabled = true;
    try {
      const device = this.boot.cuda ? this.deviceSelect.value : "cpu";
      const info = await (this.hooks.createRun ?? ((s, d, l) => this.api.createRun(s, d, l)))(source, device, limits);
      this.drafts.ran(source); // the run is the code's saved state now
      this.follow(info.id, source, info.ws_url);
    } catch (err) {
      this.controls.setStatus(this.model.finished?.status ?? "idle"); // the run on screen is still the one shown
      explainRunFailure(err, this.api, (text) => this.output.say(text, "error"), () => void this.run(limits));
    }
  }

  /** Show a run from its first event, following it live. */
  private follow(id: string, source: string, wsUrl?: string): void {
    this.runRequests++; // a stored run still loading is not shown over this one
    this.runsStarted++;
    const [before, beforeId] = [this.model, this.runId];
    const model = new TraceModel();
    model.source = source;
    this.setModel(model, id);
    // the run replaced is the one the charts compare with ("compare with the run before")
    this.charts.baseline.offer(beforeId, before);
    // A run watched on the charts stays there: they fill in as it trains. One run again from
    // the stepper streams on the tape and is back at the stepper once it has finished.
    const { view: was, step } = this.store.state;
    this.stepAfterRun = was === "stepper" ? walkTo(before, step ?? 0) : null;
    const view = was === "charts" ? "charts" : "tape";
    this.store.set({ view, step: null, op: null, selection: null, hover: null, graphCall: null });
    this.startStream(id, wsUrl);
  }

  private startStream(id: string, wsUrl?: string): void {
    this.stream?.close();
    const model = this.model;
    this.controls.setStatus("running");
    this.stream = new RunStream(
      this.api,
      id,
      {
        onEvents: (events) => model.ingest(events),
        lastSeq: () => model.lastSeq,
        onEnd: (reason, message) => {
          if (model !== this.model) return;
          this.stream = null;
          // the server restarted while the run went: it says how the run ended, and the page shows it so
          if (reason === "failed") this.controls.setStatus(sayStreamFailed(model, message, this.output) ?? model.finished?.status ?? "idle");
        },
      },
      wsUrl,
    );
  }

  private closeStream(): void {
    this.stream?.close();
    this.stream = null;
  }

  stop(): void {
    if (this.stream) this.stream.cancel();
    else if (this.runId && !this.model.isFinished) void this.api.cancel(this.runId).catch(() => undefined);
  }

  /** Open a stored run by id: its trace so far, then the live rest if it is still running; its draft put back with `keepDraft` (a reload, Back/Forward). */
  async load(id: string, keepDraft = false): Promise<void> {
    const ticket = ++this.runRequests;
    this.controls.setStatus("starting");
    let trace: GradwalkTrace;
    try {
      trace = await this.api.trace(id);
    } catch (err) {
      if (ticket !== this.runRequests) return;
      this.controls.setStatus(this.model.finished?.status ?? (this.stream ? "running" : "idle")); // the run shown stays
      this.output.say(err instanceof ApiError && err.status === 404 ? `No run ${id} on this server.` : `Could not load run ${id}: ${(err as Error).message}`, "error");
      return;
    }
    // another run was asked for while this one's trace came (a student pressing Next ▶ on
    // the lesson card twice): that one is shown, not this one over it
    if (ticket !== this.runRequests) return;
    const model = TraceModel.from(trace.events, trace.source);
    this.editor.source = trace.source;
    this.drafts.base = trace.source;
    this.examplesMenu.showSourceOf(trace.source);
    // a run still going that Back left goes on on the server, unfollowed (■ Stop had cancelled it)
    if (model.isFinished) this.closeStream();
    this.setModel(model, id);
    if (!model.isFinished) this.startStream(id);
    if (keepDraft) this.drafts.restore(this.editor, this.output);
  }

  /** Show a whole trace (a file, an export, the benchmark) with no server run behind it. */
  loadTrace(trace: { source?: string; events: GradwalkEvent[] }): TraceModel {
    this.runRequests++;
    this.closeStream();
    const [before, beforeId] = [this.model, this.runId];
    const model = TraceModel.from(trace.events, trace.source);
    if (model.source) {
      this.editor.source = model.source;
      this.examplesMenu.showSourceOf(model.source);
    }
    this.setModel(model, null);
    if (model.run && !model.isFinished) {
      this.output.say("This trace ends before its run finished (it has no run_finished event): it shows the run as far as it was recorded.", "error");
    }
    // as after a new run, the run replaced is the one the charts compare with
    this.charts.baseline.offer(beforeId, before);
    this.store.set({ step: null, op: null, selection: null, hover: null, graphCall: null });
    return model;
  }

  private setModel(model: TraceModel, runId: string | null): void {
    this.model = model;
    this.runId = runId;
    this.linkCall.want(null); // a link's call is its own run's (applyPending sets it after)
    this.stepAfterRun = null; // follow() sets it again for the run it follows
    this.openAfterRun = null;
    this.graph.setModel(model);
    this.tape.setModel(model);
    this.stepper.setModel(model);
    this.inspector.setModel(model);
    this.output.setModel(model);
    this.charts.setModel(model);
    this.pitfalls.setModel(model);
    this.bindModel();
    this.onModelEvents();
    this.url.write(runId, this.headingTo());
    this.hooks.onModel?.(runId, model);
  }

  private bindModel(): void {
    this.unsubscribeModel();
    this.unsubscribeModel = this.model.subscribe(() => this.onModelEvents());
  }

  private onModelEvents(): void {
    const m = this.model;
    if (m.isFinished) {
      this.controls.setStatus(m.finished!.status);
      this.editor.setErrors(m.errorLines());
    } else if (m.run) this.controls.setStatus(this.stream ? "running" : "cut-short"); // a file's trace that ends early has no stream to wait for
    setTabCount(this.tabs.find((t) => t.dataset.view === "stepper"), m.timeline.length, ["step", "steps"]);
    setTabCount(this.tabs.find((t) => t.dataset.view === "charts"), m.optimizerSteps.length, ["optimizer step", "optimizer steps"]);
    if (this.pending) void this.applyPending();
    if (this.stepAfterRun !== null && m.isFinished) this.backToStepper(this.stepAfterRun);
    if (this.openAfterRun !== null && m.isFinished) this.openFinished(this.openAfterRun);
    this.checkCall();
    this.title.refresh();
    // the step's line in this run: a lesson opened at the step the last one was on left the
    // last one's line marked (the store's step had not changed)
    this.editor.setCurrent(currentLine(m, this.store.state));
  }

  /**
   * A run started from the stepper has finished: open the stepper, unless the view was
   * changed meanwhile or there is no walk. It opens at the step it was at when the walk up to
   * there is the same one (the snippet run again with a number changed), else at the first.
   */
  private backToStepper(walk: string[]): void {
    this.stepAfterRun = null;
    const steps = this.model.timeline.length;
    if (this.store.state.view !== "tape" || !steps) return;
    const same = walk.length > 0 && walk.length <= steps && sameWalk(walkTo(this.model, walk.length - 1), walk);
    this.store.set({ view: "stepper", step: same ? walk.length - 1 : 0 });
  }

  /**
   * Run the editor's code, and once the run has finished open `view` at `step` (the run's
   * last step where it has fewer): a lesson's Try it lands where the lesson's words look,
   * where a run from the stepper reopens at its step only when the walk up to it is the same.
   */
  async runAndOpen(view: ViewName, step: number): Promise<void> {
    await this.run();
    if (!this.running) return; // it did not start, or was over at once: nothing to wait for
    this.stepAfterRun = null;
    this.openAfterRun = { view, step };
  }

  private openFinished(where: { view: ViewName; step: number }): void {
    this.openAfterRun = null;
    const steps = this.model.timeline.length;
    if (where.view === "stepper" && !steps) return; // no walk to open (an error before backward)
    this.store.set({ view: where.view, step: steps ? Math.min(where.step, steps - 1) : null });
  }

  /**
   * Turn ▶ Run off for a reason the page shows (`reason`, said again when Ctrl+Enter is
   * pressed), or back on with `null`. The server still decides: this only spares a click it
   * would refuse.
   */
  blockRuns(reason: string | null): void {
    this.controls.block(reason);
  }

  // --- views and the URL ------------------------------------------------------------------

  openView(view: ViewName): void {
    const patch: Partial<ViewState> = { view };
    if (view === "stepper" && this.store.state.step === null && this.model.timeline.length) patch.step = openingStep(this.model, this.store.state.graphCall);
    this.store.set(patch);
  }

  private onStore(state: ViewState, changed: ReadonlySet<keyof ViewState>): void {
    if (changed.has("view")) {
      // The charts take the graph's place: it comes back at its new size, fitted (a step
      // opened from a chart started panning the hidden graph: stop that and show all of it).
      if (this.root.dataset.view === "charts" && state.view !== "charts") {
        requestAnimationFrame(() => {
          this.graph.core.stop(true);
          this.graph.core.resize();
          this.graph.fit(false);
        });
      }
      showView(this.tabs, this.root.querySelectorAll<HTMLElement>("[data-panel]"), state.view);
      this.root.dataset.view = state.view;
    }
    if (changed.has("hover")) this.editor.setLinked(state.hover?.lines ?? []);
    if (changed.has("view") || changed.has("step") || changed.has("op")) this.editor.setCurrent(currentLine(this.model, state));
    if (URL_KEYS.some((k) => changed.has(k))) this.url.write(this.runId, state);
  }

  /**
   * The state the view is on its way to: the store's, with the URL's view and step still
   * waiting for their run laid over it. The address bar shows it as soon as the run does, so
   * a reload or a copied link never holds the run without the step it opens at.
   */
  private headingTo(): ViewState {
    const state = this.store.state;
    const want = this.pending;
    if (!want || want.run !== this.runId) return state;
    return {
      ...state,
      view: want.view ?? state.view,
      step: want.step ?? state.step,
      op: want.op ?? state.op,
      selection: want.selection ?? state.selection,
    };
  }

  /** Show what `wanted` points at: load its run (unless shown), then its view and step once they exist. */
  async applyUrl(wanted: UrlState, keepDraft = false): Promise<void> {
    // the charts' choices need no run: a link's apply at once
    const choices: Partial<ViewState> = {};
    if (wanted.yscale) choices.yscale = wanted.yscale;
    if (typeof wanted.perParam === "boolean") choices.perParam = wanted.perParam;
    if (wanted.compare !== undefined) choices.compare = wanted.compare;
    if (wanted.hide) choices.hide = wanted.hide;
    this.store.set(choices);
    this.pending = wanted;
    this.pendingNewRun = !!wanted.run && wanted.run !== this.runId;
    if (this.pendingNewRun) await this.load(wanted.run!, keepDraft);
    await this.applyPending();
  }

  /** Apply the URL's view, step, op and selection once the model has what they point at (a stepper `call=3` without a step: that call's first). */
  private async applyPending(): Promise<void> {
    const want = this.pending;
    // a step is a step of its own run: never applied to the run shown while it loads
    if (!want || (want.run && want.run !== this.runId)) return;
    const m = this.model;
    const stepReady = want.step === null || want.step < m.timeline.length || m.isFinished;
    if (!stepReady) return;
    this.pending = null;
    const patch: Partial<ViewState> = {};
    if (want.view) patch.view = want.view;
    if (want.step !== null && m.timeline.length) patch.step = Math.min(want.step, m.timeline.length - 1);
    // a link past the run's end opens its last step, and says so (a mistyped or stale link)
    const pastEnd = want.step === null ? null : stepPastEndNotice(want.step, m.timeline.length);
    if (pastEnd) this.output.say(pastEnd);
    // another run: the last one's tape position, pick and call go (a tape row clicked in one
    // lesson left the next one's graph empty at "op 2 of 10", in a room for the whole class)
    const fresh = this.pendingNewRun;
    if (want.op !== null || fresh) patch.op = want.op;
    if (want.selection || fresh) patch.selection = want.selection;
    if (want.call !== null || fresh) patch.graphCall = want.call;
    this.linkCall.want(want.call);
    if (want.call !== null && want.step === null && (want.view ?? this.store.state.view) === "stepper" && m.timeline.length) patch.step = openingStep(m, want.call);
    this.store.set(patch);
    this.checkCall();
  }

  /** A link's `call` the run did not record in full (the graph draws its default): say so once the run has finished. */
  private checkCall(): void {
    const missing = this.linkCall.take(this.model);
    if (missing) this.output.say(missing);
  }

  private async copyLink(button: HTMLButtonElement): Promise<void> {
    await copyText(button, location.href, "Link copied: it opens this run at this view and step.", "Copy this link", (m) => this.output.say(m));
  }
}
