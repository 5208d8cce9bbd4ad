// Classroom live mode on the room page (/room/CODE). The tab holding the room's key
// presents: its code, runs, view and step go to the room as they change, in large type for
// the projector. Every other tab is a viewer: it follows the presenter (code, run, view,
// step, lesson) until the viewer does something of their own (types, steps, opens another
// view, runs code), then explores freely until "Follow presenter" snaps it back.
import { StateEffect, Transaction } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import type { App } from "./app";
import { $, isTyping } from "./dom";
import type { LessonsGallery } from "./lessons";
import {
  presenterKeys,
  RoomApi,
  type RoomFrame,
  type RoomInfo,
  RoomSocket,
  type RoomState,
  roomSocketUrl,
  type SocketStatus,
  type StateFrame,
} from "./room-client";
import { VIEWS, type ViewName, type ViewState } from "./store";
import { presenterOn, setPresenter } from "./theme";
import { callIndex, callNumber, chartChoicesChanged, chartChoiceWords, parseChartChoices, selectionOf, selectionText, urlFor } from "./url-state";

// The server takes frames up to 64 KiB; a larger change (a long source) goes over HTTP.
const FRAME_LIMIT = 60_000;
const PUSH_DELAY_MS = 30;
const TYPING_DELAY_MS = 250;
// A presenter's page that reloads is back within a second or two: say it is away only after this.
const PRESENTER_AWAY_DELAY_MS = 3000;

const VIEW_LABELS: Record<string, string> = { tape: "the tape", stepper: "the backward stepper", inspector: "the inspector", charts: "the charts" };

/** Call `fn(byUser)` after every change of the editor's text. */
function onEditorChange(app: App, fn: (byUser: boolean) => void): void {
  const listener = EditorView.updateListener.of((update) => {
    if (update.docChanged) fn(update.transactions.some((tr) => tr.annotation(Transaction.userEvent) !== undefined));
  });
  app.editor.view.dispatch({ effects: StateEffect.appendConfig.of(listener) });
}

function knownView(view: string): ViewName | null {
  return VIEWS.includes(view as ViewName) ? (view as ViewName) : null;
}

export class RoomMode {
  readonly role: "presenter" | "viewer";
  readonly key: string | null;
  /** The room's state as last heard (viewers) or restored (presenter). */
  latest: RoomState | null = null;
  version = 0;
  following = true;
  private readonly rooms: RoomApi;
  private readonly bar: HTMLElement;
  private readonly conn: HTMLElement;
  private socket: RoomSocket | null = null;
  private ready = false;
  private pending: Partial<RoomState> = {};
  private pushTimer = 0;
  private typingTimer = 0;
  private applying = false;
  private again = false;
  /** The state being applied now (a viewer's store may briefly show it after a newer one arrived). */
  private target: RoomState | null = null;
  /** Set while show() itself changes the store: those changes are the presenter's, not the viewer's. */
  private showing = false;
  /** Whether the presenter's page has been gone long enough to say so (viewers). */
  presenterAway = false;
  private awayTimer = 0;

  constructor(
    private readonly app: App,
    readonly info: RoomInfo,
    private readonly lessons: LessonsGallery,
  ) {
    this.rooms = new RoomApi(app.api);
    this.key = presenterKeys.get(info.code);
    this.role = this.key ? "presenter" : "viewer";
    this.bar = $(app.root, "[data-gw=room-bar]");
    this.conn = $(this.bar, "[data-gw=room-conn]");
    this.bar.dataset.role = this.role;
    app.root.dataset.roomRole = this.role;
    app.root.classList.add("gw-has-bars");
    if (this.role === "presenter") this.setUpPresenter();
    else this.setUpViewer();
  }

  /** Connect to the room (once the app has loaded). */
  connect(): void {
    const role = this.role;
    this.socket = new RoomSocket(() => roomSocketUrl(this.info, role, this.key, this.app.api.token), {
      onFrame: (frame) => this.onFrame(frame),
      onStatus: (status, reason) => this.onStatus(status, reason),
    });
  }

  private onStatus(status: SocketStatus, reason?: string): void {
    this.bar.dataset.conn = status;
    const labels: Record<SocketStatus, string> = { connecting: "connecting…", live: "● live", reconnecting: "reconnecting…", ended: "room ended" };
    this.conn.textContent = labels[status];
    this.conn.title = reason ?? "";
    if (status === "ended") this.ended(reason ?? "the room is closed");
    // a new connection takes the presenter to be there until the server says otherwise
    if (status === "live") this.onPresenter(true);
  }

  /** A viewer hears whether the presenter is connected; a short absence (a reload) goes unsaid. */
  private onPresenter(here: boolean): void {
    if (this.role !== "viewer") return;
    clearTimeout(this.awayTimer);
    if (!here) {
      this.awayTimer = window.setTimeout(() => {
        this.presenterAway = true;
        this.renderViewerBar();
      }, PRESENTER_AWAY_DELAY_MS);
    } else if (this.presenterAway) {
      this.presenterAway = false;
      this.renderViewerBar();
    }
  }

  /** The room is gone: keep the workspace as it is, say so, and offer the app on its own. */
  private ended(reason: string): void {
    this.following = false;
    clearTimeout(this.awayTimer);
    this.app.hooks.createRun = undefined;
    this.app.hooks.onModel = undefined;
    this.app.blockRuns(null); // the app is theirs now
    this.app.graph.setBeforeRunText(null); // the app is theirs now: ▶ Run runs their code
    if (this.role === "presenter") presenterKeys.forget(this.info.code);
    for (const side of this.bar.querySelectorAll<HTMLElement>(".gw-room-side")) side.hidden = side.dataset.gw !== "room-ended";
    const why = reason.charAt(0).toUpperCase() + reason.slice(1);
    $(this.bar, "[data-gw=room-ended-why]").textContent = `${why}. What you see stays here.`;
    // "Open gradwalk on your own" takes the run, view and step on screen along, not a blank app
    const own = this.bar.querySelector<HTMLAnchorElement>("[data-gw=room-ended] a");
    const ownUrl = () => (this.app.runId ? urlFor(this.app.runId, this.app.store.state, "/") : "/");
    if (own) {
      own.href = ownUrl();
      own.addEventListener("click", () => (own.href = ownUrl()));
    }
    this.bar.dataset.following = "ended";
  }

  private onFrame(frame: RoomFrame): void {
    if (frame.type === "state") this.onState(frame);
    else if (frame.type === "presence" && "presenter" in frame) this.onPresenter(frame.presenter);
    else if (frame.type === "presence") {
      const n = frame.viewers;
      $(this.bar, "[data-gw=room-viewers]").textContent = `${n} viewer${n === 1 ? "" : "s"}`;
    } else if (frame.type === "ack") this.version = frame.version;
  }

  private onState(frame: StateFrame): void {
    const source = frame.state.source ?? this.latest?.source ?? "";
    this.latest = { ...frame.state, source };
    this.version = frame.version;
    if (this.role === "presenter") {
      // The first state restores a reloaded page; after a reconnect, ours is the truth.
      if (this.ready) this.push(this.ownState());
      else void this.restore();
      return;
    }
    this.renderViewerBar();
    if (this.following) void this.applyLatest();
  }

  // --- presenter ----------------------------------------------------------------------------

  private setUpPresenter(): void {
    // Presenter type is on in a room unless the teacher turned it off there: a reload keeps
    // their choice (it was forced on again at every reload).
    const typeKey = `gradwalk-room-type-${this.info.code}`;
    setPresenter(sessionRead(typeKey) !== "off", false);
    document.addEventListener("gw-theme", () => sessionWrite(typeKey, presenterOn() ? "on" : "off"));
    this.lessons.collapsed = true; // the class reads the lesson on their own screens
    $(this.bar, "[data-gw=room-presenter]").hidden = false;
    const allow = $<HTMLInputElement>(this.bar, "[data-gw=room-allow]");
    allow.addEventListener("change", () => this.push({ allow_viewer_runs: allow.checked }));
    $(this.bar, "[data-gw=room-copy]").addEventListener("click", (ev) => void this.copyLink(ev.currentTarget as HTMLButtonElement));
    $(this.bar, "[data-gw=room-end]").addEventListener("click", () => void this.endRoom());
    const app = this.app;
    app.hooks.createRun = (source, device, limits) => this.rooms.run(this.info.code, this.key, source, device, limits);
    app.hooks.onModel = (runId, model) => this.push({ run_id: runId, source: model.source || app.editor.source });
    app.store.subscribe((state, changed) => {
      if (changed.has("view") || changed.has("step") || changed.has("op")) this.push({ view: state.view, step: state.step, op: state.op });
      if (chartChoicesChanged(changed)) this.push(chartChoiceWords(state));
      if (changed.has("graphCall")) this.push({ call: callNumber(state.graphCall) });
      if (changed.has("selection")) this.push({ sel: selectionText(state.selection) });
    });
    onEditorChange(app, () => {
      clearTimeout(this.typingTimer);
      this.typingTimer = window.setTimeout(() => this.push({ source: app.editor.source }), TYPING_DELAY_MS);
    });
    this.lessons.onChange = (lesson) => this.push({ lesson: lesson?.id ?? null });
  }

  /** What this presenter shows now, as a room state. */
  private ownState(): RoomState {
    const s = this.app.store.state;
    return {
      source: this.app.editor.source,
      run_id: this.app.runId,
      view: s.view,
      step: s.step,
      op: s.op,
      allow_viewer_runs: $<HTMLInputElement>(this.bar, "[data-gw=room-allow]").checked,
      lesson: this.lessons.current?.id ?? null,
      call: callNumber(s.graphCall),
      sel: selectionText(s.selection),
      ...chartChoiceWords(s),
    };
  }

  private async restore(): Promise<void> {
    const state = this.latest!;
    $<HTMLInputElement>(this.bar, "[data-gw=room-allow]").checked = state.allow_viewer_runs;
    const fresh = !state.source && !state.run_id;
    if (!fresh) await this.show(state);
    this.ready = true;
    if (fresh) this.push(this.ownState());
  }

  /** Queue a change for the room; changes made within a few ms go out as one frame. */
  push(patch: Partial<RoomState>): void {
    if (this.role !== "presenter" || !this.ready) return;
    Object.assign(this.pending, patch);
    if (!this.pushTimer) this.pushTimer = window.setTimeout(() => this.flush(), PUSH_DELAY_MS);
  }

  private flush(): void {
    this.pushTimer = 0;
    const patch = this.pending;
    this.pending = {};
    if (!Object.keys(patch).length) return;
    const frame = { type: "state", state: patch };
    if (JSON.stringify(frame).length > FRAME_LIMIT) {
      this.rooms.patch(this.info.code, this.key!, patch).catch((err: Error) => this.app.output.say(`Could not update the room: ${err.message}`, "error"));
    } else if (!this.socket?.send(frame)) {
      // Not connected: on reconnect the whole state goes out again (see onState).
    }
  }

  private async copyLink(button: HTMLButtonElement): Promise<void> {
    const url = new URL(`/room/${this.info.code}`, location.href).href;
    try {
      await navigator.clipboard.writeText(url);
      button.dataset.done = "copied";
    } catch {
      window.prompt("Copy this link for your viewers", url);
    }
    window.setTimeout(() => delete button.dataset.done, 1500);
  }

  private async endRoom(): Promise<void> {
    if (!window.confirm("End the room for everyone? Viewers keep what they see but stop following.")) return;
    try {
      await this.rooms.end(this.info.code, this.key!);
    } catch (err) {
      this.app.output.say(`Could not end the room: ${(err as Error).message}`, "error");
      return;
    }
    presenterKeys.forget(this.info.code);
    this.socket?.close();
    this.lessons.keepWith(this.app.runId); // the card stays with the run the page reloads at
    // back to the app at the view and step the class was looking at
    location.assign(this.app.runId ? urlFor(this.app.runId, this.app.store.state, "/") : "/");
  }

  // --- viewer -------------------------------------------------------------------------------

  private setUpViewer(): void {
    $(this.bar, "[data-gw=room-viewer]").hidden = false;
    const app = this.app;
    $(this.bar, "[data-gw=room-follow]").addEventListener("click", () => this.setFollowing(!this.following));
    document.addEventListener("keydown", (ev) => {
      // F as the shortcuts list writes it, or f
      if (ev.key.toLowerCase() === "f" && !isTyping(ev) && !ev.ctrlKey && !ev.metaKey && !ev.altKey) this.setFollowing(true);
    });
    app.hooks.createRun = async (source, device, limits) => {
      const run = await this.rooms.run(this.info.code, null, source, device, limits);
      this.setFollowing(false); // the viewer's own run replaces the presenter's on their screen
      return run;
    };
    app.store.subscribe((state, changed) => {
      if (this.following && !this.showing && this.latest && (changed.has("view") || changed.has("step") || changed.has("op")) && this.wandered(state)) this.setFollowing(false);
    });
    onEditorChange(app, (byUser) => {
      if (byUser && this.following) this.setFollowing(false);
    });
    // The presenter's run is theirs to stop: a viewer's Stop was refused without a word (or,
    // on a server without a token, stopped the run for the whole class). Caught before the
    // button's own handler; a viewer's own run stops as usual.
    app.root.addEventListener(
      "click",
      (ev) => {
        const stop = (ev.target as Element | null)?.closest("[data-gw=stop]");
        if (!stop || !app.runId || app.runId !== this.latest?.run_id) return;
        ev.stopPropagation();
        ev.preventDefault();
        app.output.say("Only the presenter can stop the presenter's run; it goes on for the class.");
      },
      { capture: true },
    );
  }

  /**
   * Say whether the viewer's own action moved them away from the presenter: a view, step or
   * op that is neither the latest state's nor the one being applied (which may lag by one).
   */
  private wandered(state: ViewState): boolean {
    return [this.latest, this.target].every((target) => target === null || this.differs(state, target));
  }

  private differs(state: ViewState, target: RoomState): boolean {
    const view = knownView(target.view);
    if (view !== null && state.view !== view) return true;
    if (state.step !== target.step && (target.step === null || target.step < this.app.model.timeline.length)) return true;
    return state.op !== target.op;
  }

  setFollowing(on: boolean): void {
    if (this.role !== "viewer" || on === this.following) return;
    this.following = on;
    this.renderViewerBar();
    if (on && this.latest) void this.applyLatest();
  }

  /** Apply the latest state; states that arrive meanwhile are applied next (only the newest). */
  private async applyLatest(): Promise<void> {
    if (this.applying) {
      this.again = true;
      return;
    }
    this.applying = true;
    try {
      do {
        this.again = false;
        await this.show(this.latest!);
      } while (this.again && this.following);
    } finally {
      this.applying = false;
    }
  }

  /** Make the workspace show `state`: its run, view and step, the presenter's code, the lesson. */
  private async show(state: RoomState): Promise<void> {
    const app = this.app;
    this.target = state;
    const view = knownView(state.view);
    // Clear a step or op the state has none of first: a new run's view must not arrive with
    // the old run's step, which would read as the viewer stepping off on their own.
    const clearFirst: Partial<ViewState> = {};
    if (state.step === null && app.store.state.step !== null) clearFirst.step = null;
    if (state.op === null && app.store.state.op !== null) clearFirst.op = null;
    if (Object.keys(clearFirst).length && (this.role === "presenter" || this.following)) {
      this.showing = true;
      try {
        app.store.set(clearFirst);
      } finally {
        this.showing = false;
      }
    }
    if (state.run_id) await app.applyUrl({ run: state.run_id, view, step: state.step, op: state.op, selection: null, call: null });
    else if (view) app.store.set({ view });
    if (this.role === "viewer" && !this.following) return;
    const clear: Partial<ViewState> = {};
    if (state.step === null) clear.step = null;
    if (state.op === null) clear.op = null;
    // the node or tensor the presenter picked: the inspector and the graph's ring show it
    if (state.sel !== undefined) clear.selection = selectionOf(state.sel);
    app.store.set(clear);
    // the presenter's y scale, norms, compared run and hidden charts, as a link would carry them
    const { yscale, perParam, compare, hide } = parseChartChoices(state.yscale, state.norms, state.compare, state.hide);
    app.store.set({ yscale: yscale ?? "auto", perParam: perParam ?? false, compare, hide: hide ?? [] });
    // the graph of the presenter's backward call (graph-calls.ts)
    app.store.set({ graphCall: callIndex(state.call) });
    if (app.editor.source !== state.source) app.editor.source = state.source;
    if (state.lesson) await this.lessons.load();
    this.lessons.show(state.lesson);
  }

  private renderViewerBar(): void {
    if (this.role !== "viewer") return;
    const state = this.latest;
    const button = $(this.bar, "[data-gw=room-follow]");
    button.setAttribute("aria-pressed", String(this.following));
    button.classList.toggle("gw-btn-primary", !this.following);
    button.textContent = this.following ? "✓ Following" : "Follow presenter";
    button.title = this.following ? "You follow the presenter; step or edit to explore on your own" : "Snap back to the presenter's code, run and step (F)";
    this.bar.dataset.following = String(this.following);
    let where = "Following the presenter";
    this.bar.dataset.presenter = this.presenterAway ? "away" : "here";
    if (this.presenterAway) {
      where = "The presenter is away · what you see stays until they are back";
    } else if (!this.following) {
      where = "Exploring on your own";
      if (state) {
        const at = state.view === "stepper" && state.step !== null ? `backward step ${state.step + 1}` : (VIEW_LABELS[state.view] ?? state.view);
        where += ` · the presenter is on ${at}`;
      }
    }
    $(this.bar, "[data-gw=room-where]").textContent = where;
    const runs = $(this.bar, "[data-gw=room-runs]");
    const allowed = !!state?.allow_viewer_runs;
    runs.textContent = allowed ? "You may run your own code" : "Only the presenter runs code";
    runs.dataset.allowed = String(allowed);
    this.app.blockRuns(allowed ? null : "Only the presenter runs code in this room: they can tick “Viewers may run code” to let you run your own.");
    // before the first run a student's empty graph said "Press ▶ Run", which the room refuses
    this.app.graph.setBeforeRunText(
      allowed ? "The graph appears here when the presenter runs the code, or press ▶ Run to run your own." : "The graph appears here when the presenter runs the code.",
    );
  }
}

/** A value kept for this tab (sessionStorage); null where storage is off. */
function sessionRead(key: string): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

function sessionWrite(key: string, value: string): void {
  try {
    sessionStorage.setItem(key, value);
  } catch {
    // storage off: the choice lasts for this page
  }
}
