// The backward stepper: walk each backward() call node by node in the engine's real order,
// with the local rule written out with real numbers, accumulations into .grad, and a note
// when the graph is freed. First / prev / next / last / play, a slider, and keys (stepper-keys.ts).
import { fill, h, markCut, perFrame, revealWithin } from "./dom";
import { howItEnded } from "./graph-steps";
import { backwardCallText, callLabels, gradOf, nodeLabel, tensorExpr } from "./naming";
import { nodePitfallMark, nodePitfallNotes } from "./pitfalls";
import { explain } from "./rules";
import { positionWords, StepPosition } from "./step-position";
import { bindStepperKeys } from "./stepper-keys";
import { linksOfNode, type Store, type ViewState } from "./store";
import { bindTabKeys, selectTab } from "./tabs";
import type { StepEntry, TraceModel } from "./trace-model";
import { fmtValueRows } from "./values";
import { accumulationText } from "./walk-notes";
import { watchWalkRoom } from "./walk-room";

/** How far the walk's list fades where it is cut off (stepper.css): its current item is kept clear of it. */
const FADE_PX = 20;

const SPEEDS = [0.5, 1, 2, 4];
/** Walks longer than this show a window of WALK_WINDOW entries around the step. */
const WALK_ALL = 400;
const WALK_WINDOW = 200;
const WALK_MARGIN = 20;
/**
 * The numbers table writes a gradient of up to this many elements out whole (a [12] or a
 * [4×4] that a course prints), not as its norm; the card's rule lines stay short.
 */
const TABLE_WHOLE = 64;
/** The numbers table keeps a value this long or shorter beside its name (about two lines there). */
const BESIDE_MAX = 48;
/** Names given to the numbers table's matrix headers so far (their ids are unique on the page). */
let numbersNames = 0;

export class StepperView {
  /** The row of backward calls: a caption (the calls' shared text, if any) and their tabs. */
  private readonly callsRow: HTMLElement;
  private readonly callsCaption: HTMLElement;
  private readonly calls: HTMLElement;
  private readonly slider: HTMLInputElement;
  private readonly position: HTMLElement;
  private readonly spoken: HTMLElement;
  private readonly place: StepPosition;
  private readonly card: HTMLElement;
  private readonly walk: HTMLOListElement;
  private readonly walkScroll: HTMLElement;
  private readonly playButton: HTMLButtonElement;
  private readonly speed: HTMLSelectElement;
  private readonly buttons: HTMLButtonElement[];
  private playing = 0;
  private unsubscribe: () => void = () => {};
  private renderedCall = -1;
  /** The entries of the shown call that are in the list (all, or a window around the step). */
  private window = { lo: 0, hi: 0 };
  private walkItems: HTMLElement[] = [];
  private marked: number | null = null;

  constructor(
    readonly root: HTMLElement,
    private model: TraceModel,
    private readonly store: Store,
    options: { keyboard?: boolean } = {},
  ) {
    root.classList.add("gw-stepper");
    const btn = (label: string, title: string, key: string, action: () => void) =>
      h("button", { type: "button", class: "gw-btn gw-step-btn", title: `${title} (${key})`, "aria-label": title, text: label, on: { click: action } });
    this.playButton = btn("▶ Play", "Play the backward walk", "P", () => this.togglePlay());
    this.playButton.classList.add("gw-play");
    this.buttons = [
      btn("« First", "First step", "Home", () => this.go(0)),
      btn("◀ Prev", "Prev step", "←", () => this.go(this.step - 1)),
      this.playButton,
      btn("Next ▶", "Next step", "→", () => this.go(this.step + 1)),
      btn("Last »", "Last step", "End", () => this.go(this.model.timeline.length - 1)),
    ];
    this.speed = h(
      "select",
      { class: "gw-select", "aria-label": "Playback speed", title: "Playback speed" },
      SPEEDS.map((s) => h("option", { value: s, text: `${s}×`, selected: s === 1 })),
    );
    this.speed.addEventListener("change", () => this.onSpeed());
    this.slider = h("input", { type: "range", min: 0, max: 0, value: 0, class: "gw-slider", "aria-label": "Backward step" });
    this.slider.addEventListener("input", () => this.go(Number(this.slider.value)));
    this.position = h("span", { class: "gw-position" });
    // what a screen reader hears at each step: where it is and which node ran, in one line
    // (the card, rules and matrices included, ran to 1,500 characters a step)
    this.spoken = h("span", { class: "gw-visually-hidden", "aria-live": "polite", data: { gw: "step-announcer" } });
    this.place = new StepPosition(this.position);
    this.calls = h("div", { class: "gw-call-tabs", role: "tablist", "aria-label": "Backward calls" });
    bindTabKeys(this.calls, (tab) => tab.click());
    this.callsCaption = h("span", { class: "gw-calls-caption" });
    this.callsRow = h("div", { class: "gw-calls" }, this.callsCaption, this.calls);
    this.card = h("div", { class: "gw-step-card" });
    this.walk = h("ol", { class: "gw-walk", "aria-label": "Nodes in the order the engine ran them" });
    this.walkScroll = h("div", { class: "gw-walk-scroll" }, this.walk);
    root.append(
      this.callsRow,
      // the buttons and the slider share one row where the pane is wide enough (an embed)
      h(
        "div",
        { class: "gw-step-bar" },
        h("div", { class: "gw-step-controls" }, ...this.buttons),
        h("div", { class: "gw-scrubber" }, this.slider, this.position, this.speed, this.spoken),
      ),
      // The card stays in view; the walk (thousands of nodes on a big graph) scrolls on its own.
      h("div", { class: "gw-step-body" }, this.card),
      // the rule between them: outside both, as their faded edges would fade it too
      h("div", { class: "gw-walk-rule", "aria-hidden": "true" }),
      this.walkScroll,
    );
    for (const scroller of [root.querySelector<HTMLElement>(".gw-step-body"), this.walkScroll]) if (scroller) markCut(scroller);
    watchWalkRoom(root, this.walkScroll, () => this.scrollToMarked());
    store.subscribe((state, changed) => this.onStore(state, changed));
    if (options.keyboard !== false) {
      bindStepperKeys({
        shown: () => this.store.state.view === "stepper",
        stepBy: (by) => this.go(this.step + by),
        first: () => this.go(0),
        last: () => this.go(this.model.timeline.length - 1),
        togglePlay: () => this.togglePlay(),
      });
    }
    this.setModel(model);
  }

  setModel(model: TraceModel): void {
    this.unsubscribe();
    this.stop();
    this.model = model;
    this.renderedCall = -1;
    this.unsubscribe = model.subscribe((batch) => {
      // run_finished: a run with no walk says how it ended (it kept "appears here once the
      // code calls backward()" after a run that never would, the tab open as it ran)
      if (batch.some((e) => e.type === "node_executed" || e.type === "backward_finished" || e.type === "grad_accumulated" || e.type === "run_finished")) this.render();
      // a pitfall about a node comes right after the node ran: mark its item and card now
      const named = batch.flatMap((e) => (e.type === "pitfall" ? e.nodes : []));
      if (named.length) this.markPitfalls(named);
    });
    this.render();
  }

  private get step(): number {
    return this.store.state.step ?? 0;
  }

  /** Move to timeline position `i` (clamped) and open the stepper. */
  go(i: number): void {
    const n = this.model.timeline.length;
    if (!n) return;
    const step = Math.max(0, Math.min(n - 1, i));
    this.store.set({ step, view: "stepper" });
  }

  private togglePlay(): void {
    if (this.playing) {
      this.stop();
      return;
    }
    if (this.step >= this.model.timeline.length - 1) this.go(0);
    // ❚❚, not ⏸ (U+23F8): a font without emoji (Debian's Chromium) drew ⏸ as an empty box
    this.playButton.textContent = "❚❚ Pause";
    this.playButton.setAttribute("aria-label", "Pause");
    this.scheduleTick();
  }

  /** The next step of Play, one step's time (900 ms at 1×) from now at the chosen speed. */
  private scheduleTick(): void {
    clearTimeout(this.playing);
    this.playing = window.setTimeout(() => {
      if (this.step >= this.model.timeline.length - 1) {
        this.stop();
        return;
      }
      this.go(this.step + 1);
      this.scheduleTick();
    }, 900 / Number(this.speed.value));
  }

  /** A new speed while playing takes effect now, not after the step timed at the old one (1.8 s at 0.5×). */
  private onSpeed(): void {
    if (this.playing) this.scheduleTick();
  }

  private stop(): void {
    clearTimeout(this.playing);
    this.playing = 0;
    this.playButton.textContent = "▶ Play";
    this.playButton.setAttribute("aria-label", "Play the backward walk");
  }

  private onStore(state: ViewState, changed: ReadonlySet<keyof ViewState>): void {
    if (changed.has("step") || changed.has("view")) this.render();
    if (changed.has("view") && state.view !== "stepper") this.stop();
  }

  private render(): void {
    const m = this.model;
    const n = m.timeline.length;
    this.root.classList.toggle("gw-has-steps", n > 0);
    for (const b of this.buttons) b.disabled = n === 0;
    this.slider.disabled = n === 0;
    this.slider.max = String(Math.max(0, n - 1));
    if (!n) {
      this.place.show(null);
      this.spoken.textContent = "";
      this.slider.removeAttribute("aria-valuetext");
      fill(this.card, h("p", { class: "gw-empty", text: noWalkText(m) }));
      this.calls.replaceChildren();
      this.callsRow.hidden = true;
      this.walk.replaceChildren();
      return;
    }
    const step = Math.min(this.step, n - 1);
    const entry = m.timeline[step];
    this.slider.value = String(step);
    const call = m.backward(entry.backward)!;
    const within = call.entries.indexOf(entry);
    const several = m.backwards.length > 1;
    const place = { step: step + 1, steps: n, call: several ? { number: call.index + 1, within: within + 1, steps: call.entries.length } : null };
    this.place.show(place);
    const words = positionWords(place).full;
    this.slider.setAttribute("aria-valuetext", words);
    const line = entry.exec ? this.model.nodeLine(entry.exec.node) : null;
    const what = entry.exec ? `${nodeLabel(m, entry.exec.node)}${line ? `, line ${line}` : ""}` : "end of backward";
    this.spoken.textContent = `${words}: ${what}`;
    this.renderCalls(entry);
    this.renderCard(entry);
    this.renderWalk(entry);
  }

  /**
   * One row of tabs, one per backward call. A training loop's calls all read the same
   * (`loss.backward() · line 9`): that text is written once before them and the tabs say
   * `#1 #2 #3`; calls that differ are told apart by their own text. The row scrolls sideways
   * rather than wrap (three wrapped rows took 120 px of a projector's side pane).
   */
  private renderCalls(entry: StepEntry): void {
    const m = this.model;
    const texts = m.backwards.map((call) => `${backwardCallText(m, call.index)}${call.start.line ? ` · line ${call.start.line}` : ""}`);
    const shared = texts.length > 1 && texts.every((t) => t === texts[0]);
    // numbered as the run numbers them: a long run records calls 1, 2, 3 and 100 in full
    const numbers = m.backwards.map((call) => `#${call.index + 1}`);
    const labels = shared ? numbers : callLabels(texts);
    this.callsCaption.textContent = shared ? texts[0] : "";
    this.callsCaption.hidden = !shared;
    let selectedTab: HTMLElement | null = null;
    const hadFocus = this.calls.contains(document.activeElement);
    this.calls.replaceChildren(
      ...m.backwards.map((call, i) => {
        const selected = call.index === entry.backward;
        const b = h("button", {
          type: "button",
          role: "tab",
          class: `gw-call${selected ? " selected" : ""}`,
          "aria-label": shared ? `${numbers[i]} ${texts[i]}` : undefined,
          text: labels[i],
          title: `backward call ${call.index + 1}${call.start.retain_graph ? " (retain_graph=True)" : ""}`,
        });
        b.addEventListener("click", () => {
          const first = call.entries[0];
          if (first) this.go(first.index);
        });
        if (selected) selectedTab = b;
        return b;
      }),
    );
    // one stop in the Tab order, the call shown (its tabs' arrow keys: bindTabKeys)
    selectTab(this.calls.querySelectorAll<HTMLElement>("[role=tab]"), (tab) => tab === selectedTab);
    this.callsRow.hidden = m.backwards.length < 2;
    if (selectedTab) revealWithin(this.calls, selectedTab, "x");
    if (hadFocus) (selectedTab as HTMLElement | null)?.focus(); // drawn anew: the focus stays on the call's tab
  }

  private renderCard(entry: StepEntry): void {
    const m = this.model;
    if (entry.kind === "end") {
      const f = entry.finished!;
      const call = m.backward(entry.backward)!;
      const leaves = call.entries.flatMap((e) => e.accs);
      fill(this.card, 
        h("h3", { class: "gw-step-title", text: `${backwardCallText(m, entry.backward)} ${f.ok ? "finished" : "failed"}` }),
        h("p", { class: "gw-step-summary", text: `${f.nodes_executed} node${f.nodes_executed === 1 ? "" : "s"} ran.` }),
        f.ok
          ? h(
              "p",
              { class: `gw-note ${f.graph_freed ? "gw-note-freed" : ""}`, data: { freed: String(f.graph_freed) } },
              f.graph_freed && call.entries.every((e) => !e.exec || m.node(e.exec.node)?.name === "AccumulateGrad")
                ? "backward() on a leaf runs its AccumulateGrad alone: there was no graph to walk or free."
                : f.graph_freed
                ? "The graph was freed: the tensors its nodes saved are released. Calling backward() through it again raises an error unless the first call passed retain_graph=True."
                : `The graph was kept (${call.start.create_graph ? "create_graph=True" : "retain_graph=True"}): backward() can walk it again, ${
                    call.start.api === "autograd.grad" ? "and autograd.grad leaves every .grad as it was." : "and .grad will accumulate."
                  }`,
            )
          : h("p", { class: "gw-note gw-note-error", text: m.errors[0] ? `${m.errors[0].exc_type}: ${m.errors[0].message}` : "backward() raised an error." }),
        leaves.length ? h("div", { class: "gw-rules" }, leaves.map((a) => h("div", { class: "gw-acc", text: accumulationText(m, a) }))) : null,
      );
      return;
    }
    const exec = entry.exec!;
    const node = m.node(exec.node);
    const ex = explain(m, entry);
    const line = m.nodeLine(exec.node);
    const title = h("h3", { class: "gw-step-title" }, h("span", { class: "gw-node-name", text: node ? nodeLabel(m, node.id) : `node ${exec.node}` }));
    if (line) {
      const link = h("button", { type: "button", class: "gw-line-link", text: `line ${line}`, title: "Show the line in the code" });
      link.addEventListener("click", () => this.store.set({ hover: linksOfNode(m, exec.node) }));
      title.append(" ", link);
    }
    fill(this.card, 
      title,
      ex ? h("p", { class: "gw-step-summary", text: ex.summary }) : null,
      ex ? h("div", { class: "gw-incoming", text: ex.incoming }) : null,
      h(
        "div",
        { class: "gw-rules" },
        (ex?.lines ?? []).map((l) => h("div", { class: "gw-rule", data: { slot: l.slot ?? "" }, text: l.text })),
        (ex?.accumulations ?? []).map((t) => h("div", { class: "gw-acc", text: t })),
      ),
      nodePitfallNotes(m, exec.node),
      this.numbersTable(entry),
    );
  }

  /** grad in / grad out, as the engine reported them. */
  private numbersTable(entry: StepEntry): HTMLElement | null {
    const exec = entry.exec;
    const node = this.model.node(exec?.node);
    if (!exec || !node || node.name === "AccumulateGrad") return null;
    // autograd.grad returns the leaves' gradients: nothing goes into their .grad
    const returned = this.model.backward(entry.backward)?.start.api === "autograd.grad";
    const toLeaf = (t: number | null) => (returned ? `∂/∂${tensorExpr(this.model, t)} (returned)` : gradOf(this.model, t));
    const rows = exec.grad_out.flatMap((v, slot) => {
      const edge = node.edges[slot];
      const target = edge?.node != null ? this.model.node(edge.node) : undefined;
      const to = target ? (target.name === "AccumulateGrad" ? toLeaf(target.tensor) : target.name) : "(no grad needed)";
      return numbersRows(`out ${slot} → ${to}`, fmtValueRows(v, TABLE_WHOLE));
    });
    return h(
      "table",
      { class: "gw-numbers" },
      h("caption", { text: "What the engine passed" }),
      h("tbody", {}, numbersRows("grad in", exec.grad_in.map((v) => fmtValueRows(v, TABLE_WHOLE)).join(", ")), rows),
    );
  }

  private renderWalk(entry: StepEntry): void {
    const call = this.model.backward(entry.backward)!;
    const n = call.entries.length;
    const now = entry.index - call.entries[0].index;
    if (this.renderedCall !== call.index) {
      this.renderedCall = call.index;
      this.window = { lo: 0, hi: 0 };
      this.walk.replaceChildren();
      this.walkItems = [];
      this.marked = null;
    }
    if (n <= WALK_ALL) {
      // A live run adds entries: append them.
      if (this.window.hi < n) {
        this.appendItems(call.entries.slice(this.window.hi));
        this.window.hi = n;
      }
    } else if (now < this.window.lo || now >= this.window.hi || (now < this.window.lo + WALK_MARGIN && this.window.lo > 0) || (now >= this.window.hi - WALK_MARGIN && this.window.hi < n)) {
      // Thousands of entries cost every frame a long restyle: show a window around the step.
      const lo = Math.max(0, Math.min(now - WALK_WINDOW / 2, n - WALK_WINDOW));
      this.window = { lo, hi: Math.min(n, lo + WALK_WINDOW) };
      this.walk.replaceChildren();
      this.walkItems = [];
      this.marked = null;
      if (lo > 0) this.walk.append(h("li", { class: "gw-walk-more", text: `… ${lo} earlier` }));
      this.appendItems(call.entries.slice(lo, this.window.hi));
      if (this.window.hi < n) this.walk.append(h("li", { class: "gw-walk-more", data: { later: n - this.window.hi }, text: `… ${n - this.window.hi} more` }));
    }
    // Move the marks from the last position to this one, touching only the items between.
    const at = now - this.window.lo;
    const before = this.marked ?? -1;
    for (let i = Math.max(0, Math.min(before, at)); i <= Math.max(before, at) && i < this.walkItems.length; i++) {
      this.walkItems[i].classList.toggle("done", i < at);
    }
    if (this.marked !== null) {
      const old = this.walkItems[this.marked];
      old?.classList.remove("current");
      old?.removeAttribute("aria-current");
    }
    const item = this.walkItems[at];
    item?.classList.add("current");
    item?.setAttribute("aria-current", "step");
    this.marked = at;
    this.scrollToMarked();
  }

  private appendItems(entries: StepEntry[]): void {
    const items = entries.map((e) => this.walkItem(e));
    this.walkItems.push(...items.map((li) => li.firstElementChild as HTMLElement));
    // before the "… N more" that closes a window, never after the "… N earlier" that opens it
    const more = this.walk.querySelector(".gw-walk-more[data-later]:last-child");
    if (more) more.before(...items);
    else this.walk.append(...items);
  }

  /** Scroll the walk to the current item, once per frame (it forces a layout). */
  private readonly scrollToMarked = perFrame(() => {
    const item = this.marked === null ? undefined : this.walkItems[this.marked];
    if (!item || this.root.offsetParent === null) return;
    // clear of the faded edges (markCut), where more of the list is cut off
    const r = item.getBoundingClientRect();
    revealWithin(this.walkScroll, { top: r.top - FADE_PX, bottom: r.bottom + FADE_PX });
  });

  /** Put the ⚠ on the walk's items at `nodes` (named by a pitfall that came after them), and show the card again. */
  private markPitfalls(nodes: number[]): void {
    for (const item of this.walkItems) {
      const node = Number(item.dataset.node);
      if (item.dataset.node && nodes.includes(node) && !item.querySelector(".gw-walk-pitfall")) {
        const mark = nodePitfallMark(this.model, node);
        if (mark) item.append(mark);
      }
    }
    const entry = this.model.timeline[this.step];
    if (entry?.exec && nodes.includes(entry.exec.node)) this.renderCard(entry);
  }

  private walkItem(e: StepEntry): HTMLElement {
    const m = this.model;
    const label = e.kind === "end" ? "end of backward" : nodeLabel(m, e.exec!.node);
    const node = e.exec?.node;
    const b = h(
      "button",
      { type: "button", class: "gw-walk-item", data: { step: e.index, node: node ?? "" } },
      h("span", { class: "gw-walk-n", text: String(e.index + 1) }),
      label,
      node === undefined ? null : nodePitfallMark(m, node),
    );
    b.addEventListener("click", () => this.go(e.index));
    if (node !== undefined) {
      b.addEventListener("mouseenter", () => this.store.set({ hover: linksOfNode(m, node) }));
      b.addEventListener("mouseleave", () => this.store.set({ hover: null }));
    }
    return h("li", {}, b);
  }
}

/**
 * What the stepper says with no step to show. A run that raised before its backward() (a
 * shape error on the line above it) said "This run never called backward()", which a
 * learner looking at `loss.backward()` in the code reads as wrong: it now says how it ended.
 */
function noWalkText(m: TraceModel): string {
  if (!m.isFinished) return "The backward walk appears here once the code calls backward().";
  const how = howItEnded(m);
  return how ? `No backward walk: the run ${how}. The output panel says more.` : "This run never called backward().";
}

/**
 * The rows of one entry of the numbers table: its name beside numbers that fit a line, or
 * above a matrix (numbers over several lines), which then has the card's whole width: beside
 * its name, half the card, a 16 x 2 gradient's rows each broke over two lines.
 */
function numbersRows(name: string, numbers: string): HTMLElement[] {
  // a long run of numbers (a [64×1] column, a [40] vector) goes under its name too: beside
  // it, in the table's narrow second column, it stood two numbers a line, 32 lines high
  if (!numbers.includes("\n") && numbers.length <= BESIDE_MAX) return [h("tr", {}, h("th", { scope: "row", text: name }), h("td", { text: numbers }))];
  // the name's row is not the matrix's: `headers` ties them for screen readers
  const id = `gw-numbers-name-${++numbersNames}`;
  return [
    h("tr", { class: "gw-matrix-name" }, h("th", { id, colspan: 2, text: name })),
    h("tr", { class: "gw-matrix" }, h("td", { headers: id, colspan: 2, text: numbers })),
  ];
}

