// The tape view: every forward op in the order it ran, each linked both ways to its source
// line and its graph nodes, and a scrubber that replays the forward pass op by op while
// the graph grows. While the graph draws one backward call (graph-calls.ts), the ops that
// made another call's graph are greyed.
import { breakAtDots, h, revealWithin } from "./dom";
import { drawnCall, nodesOutsideCall } from "./graph-calls";
import { argumentsText, madeKindText, madeShapesText, outputsText, rowArgumentsText, TENSORS_LISTED } from "./naming";
import { linksOfOp, type Store, type ViewState } from "./store";
import type { TapeGap, TraceModel } from "./trace-model";
import type { GradwalkEvent, OpRecorded } from "./types/events";

/**
 * Rows per chunk. The list is cut into chunks the browser may skip drawing (CSS
 * `content-visibility` on the chunk): checking 75 chunks as a 7,500-op tape scrolls costs a
 * fraction of checking 7,500 rows, and the scrubber greys a chunk wholly past it with one
 * class instead of a hundred.
 */
const CHUNK = 100;
/** An op's grad_fn nodes written out in its row, at most (more are counted). */
const NODES_SHOWN = 4;

/** The dtype or device an op's output changed to, beside its shape (see madeKindText). */
function kindBadge(kind: string): HTMLElement | null {
  return kind ? h("span", { class: "gw-op-kind", text: kind, title: "the dtype or device of what the op made, where it is not that of its first input" }) : null;
}

export class TapeView {
  private readonly list: HTMLDivElement;
  private readonly scroller: HTMLElement;
  private readonly slider: HTMLInputElement;
  private readonly position: HTMLElement;
  private readonly playButton: HTMLButtonElement;
  private rows = new Map<number, HTMLElement>();
  /** The chunks of rows, in order, with the op index of the first row of each. */
  private chunks: { el: HTMLElement; first: number }[] = [];
  /** The chunk whose rows carry the `future` class (the scrubber's), or -1. */
  private scrubbedChunk = -1;
  private rowsOfTensor = new Map<number, number[]>();
  /** Tensors whose rows show the module call they came out of (`net.fc1(…)`), learnt late. */
  private moduleLabelled = new Set<number>();
  private lit: HTMLElement[] = [];
  private current: HTMLElement | null = null;
  /** The grad_fn nodes the graph leaves out (another call's): rows of ops that made one are greyed. */
  private outside: ReadonlySet<number> = new Set();
  private playing = 0;
  /** Counts the tape's reveals of a call: a pending retry of an older one, or one the reader
   * scrolled away from, stops. */
  private revealing = 0;
  /** The row after the last op that counts the metrics-only work since it (hidden when none). */
  private readonly endGap: HTMLElement;
  private unsubscribe: () => void = () => {};

  constructor(
    readonly root: HTMLElement,
    private model: TraceModel,
    private readonly store: Store,
  ) {
    root.classList.add("gw-tape");
    this.slider = h("input", { type: "range", min: 0, max: 0, value: 0, class: "gw-slider", "aria-label": "Replay the forward pass: op" });
    this.slider.addEventListener("input", () => this.scrubTo(Number(this.slider.value)));
    this.position = h("span", { class: "gw-position", "aria-live": "polite" });
    this.playButton = h("button", { type: "button", class: "gw-btn", text: "Replay", title: "Replay the forward pass op by op" });
    this.playButton.addEventListener("click", () => this.togglePlay());
    this.list = h("div", { class: "gw-op-list", role: "list", "aria-label": "Forward ops in order" });
    this.endGap = h("div", { class: "gw-op-gap", role: "listitem", hidden: true });
    const empty = h("p", { class: "gw-empty", text: "The forward ops appear here as the code runs." });
    this.scroller = h("div", { class: "gw-scroll" }, empty, this.list);
    for (const type of ["wheel", "touchstart", "pointerdown", "keydown"]) {
      this.scroller.addEventListener(type, () => (this.revealing += 1), { passive: true });
    }
    root.append(h("div", { class: "gw-scrubber" }, this.playButton, this.slider, this.position), this.scroller);
    store.subscribe((state, changed) => this.onStore(state, changed));
    this.setModel(model);
  }

  setModel(model: TraceModel): void {
    this.unsubscribe();
    this.model = model;
    this.rows.clear();
    this.rowsOfTensor.clear();
    this.moduleLabelled.clear();
    this.chunks = [];
    this.scrubbedChunk = -1;
    this.list.replaceChildren();
    this.lit = [];
    this.current = null;
    for (const op of model.ops) {
      for (const id of op.inputs) if (model.moduleOutputOf(id) !== undefined) this.moduleLabelled.add(id);
      this.addRow(op);
    }
    this.unsubscribe = model.subscribe((batch) => this.onEvents(batch));
    this.showEndGap();
    this.updateScrubber();
    this.markCall(drawnCall(this.model, this.store.state.graphCall));
  }

  private onEvents(batch: readonly GradwalkEvent[]): void {
    for (const ev of batch) {
      if (ev.type === "op") {
        this.relabelModuleOutputs(ev);
        this.addRow(ev);
      } else if (ev.type === "tensor_named") this.renderRowsOf(ev.id);
      else if (ev.type === "backward_finished" && this.store.state.graphCall !== "all") this.markCall(drawnCall(this.model, this.store.state.graphCall));
    }
    this.showEndGap();
    this.updateScrubber();
  }

  /** Draw again the rows that show tensor `id`, whose label has changed. */
  private renderRowsOf(id: number): void {
    for (const index of this.rowsOfTensor.get(id) ?? []) {
      const op = this.model.op(index);
      const row = this.rows.get(index);
      if (op && row) row.replaceWith(this.renderRow(op));
    }
  }

  /**
   * A module's output is known as one (`net.fc1(…)`) only once an op outside the module
   * reads it: `op`'s inputs that became one draw their earlier rows again (a live run's rows
   * showed `t3` where a finished trace showed `net.fc1(…)`).
   */
  private relabelModuleOutputs(op: OpRecorded): void {
    for (const id of op.inputs) {
      if (this.moduleLabelled.has(id) || this.model.moduleOutputOf(id) === undefined) continue;
      this.moduleLabelled.add(id);
      this.renderRowsOf(id);
    }
  }

  private addRow(op: OpRecorded): void {
    const row = this.renderRow(op);
    let chunk = this.chunks[this.chunks.length - 1];
    if (!chunk || chunk.el.childElementCount >= CHUNK) {
      chunk = { el: h("div", { class: "gw-op-chunk", role: "presentation" }), first: op.index };
      this.chunks.push(chunk);
      this.list.append(chunk.el);
    }
    const gap = this.model.gapsBefore.get(op.index);
    if (gap) chunk.el.append(this.renderGap(h("div", { class: "gw-op-gap", role: "listitem", data: { op: op.index } }), gap));
    chunk.el.append(row);
    for (const t of [...op.inputs, ...op.outputs]) {
      const list = this.rowsOfTensor.get(t) ?? [];
      list.push(op.index);
      this.rowsOfTensor.set(t, list);
    }
    this.root.classList.add("gw-has-ops");
  }

  /**
   * The tape's last row while the run has done metrics-only work since its last op, drawn
   * again only when its counts change (a live run sends a batch of events many times a
   * second, and a redrawn row would take the keyboard focus off its Charts link).
   */
  private showEndGap(): void {
    const gap = this.model.gapAtEnd;
    this.endGap.hidden = !gap.steps && !gap.calls;
    if (this.endGap.hidden) return;
    const counts = `${gap.steps} ${gap.calls}`;
    if (this.endGap.dataset.counts !== counts) {
      this.endGap.dataset.counts = counts;
      this.renderGap(this.endGap, gap);
    }
    if (this.list.lastElementChild !== this.endGap) this.list.append(this.endGap);
  }

  /**
   * Fill `el` with what a gap in the tape stands for: steps or backward() calls recorded
   * metrics-only (their loss, norms and memory are on the charts, their ops nowhere), so a
   * tape that jumps from step 3's ops to the code after the loop says why.
   */
  private renderGap(el: HTMLElement, gap: TapeGap): HTMLElement {
    const parts = [];
    if (gap.steps) parts.push(`${gap.steps} optimizer step${gap.steps === 1 ? "" : "s"}`);
    if (gap.calls) parts.push(`${gap.calls} backward() call${gap.calls === 1 ? "" : "s"}`);
    const charts = h("button", { type: "button", class: "gw-ref", text: "Charts", title: "Open the charts of every step" });
    charts.addEventListener("click", () => this.store.set({ view: "charts" }));
    const numbers = gap.steps ? "loss, gradient norms and memory" : "loss and memory";
    el.replaceChildren(h("span", { class: "gw-op-gap-text", text: `⋯ ${parts.join(" and ")} recorded metrics-only (no ops): their ${numbers} are in ` }), charts);
    return el;
  }

  private renderRow(op: OpRecorded): HTMLElement {
    const m = this.model;
    // the inputs, then the other arguments (`h, 1.01`; `x, dim=1`; `x, torch.float64`; `x[:, 0]`)
    const ins = rowArgumentsText(m, op, TENSORS_LISTED);
    const outs = outputsText(m, op, TENSORS_LISTED);
    // a row that counts some of its tensors names them all on hover
    const cut = op.inputs.length > TENSORS_LISTED || op.outputs.length > TENSORS_LISTED;
    const io = cut ? `${argumentsText(m, op)} → ${outputsText(m, op)}` : undefined;
    const nodes = op.nodes.map((n) => m.node(n)?.name).filter((n) => n && n !== "AccumulateGrad");
    // a fused op (nn.MultiheadAttention's forward) makes thirty nodes: the first few, then a count
    const many = nodes.length > NODES_SHOWN;
    const nodesText = many ? `${nodes.slice(0, NODES_SHOWN - 1).join(" ")} … +${nodes.length - NODES_SHOWN + 1} more` : nodes.join(" ");
    const badges = [
      op.grad_mode !== "grad" ? h("span", { class: "gw-badge gw-badge-nograd", text: op.grad_mode }) : null,
      op.inplace ? h("span", { class: "gw-badge gw-badge-inplace", text: "in-place" }) : null,
      op.module_path ? h("span", { class: "gw-badge gw-badge-module", text: op.module_path }) : null,
    ];
    const button = h(
      "button",
      { type: "button", class: "gw-op", title: `${op.api}${op.line ? ` (line ${op.line})` : ""}` },
      h("span", { class: "gw-op-index", text: String(op.index) }),
      h("span", { class: "gw-op-line", text: op.line ? `L${op.line}` : "" }),
      h("span", { class: "gw-op-main" }, h("span", { class: "gw-op-name" }, breakAtDots(op.name)), " ", h("span", { class: "gw-op-io", title: io }, breakAtDots(ins ? `${ins} → ${outs}` : `→ ${outs}`))),
      h("span", { class: "gw-op-shape" }, madeShapesText(m, op), kindBadge(madeKindText(m, op))),
      h("span", { class: "gw-op-nodes", text: nodesText, title: many ? nodes.join(" ") : undefined }),
      ...badges,
    );
    button.addEventListener("mouseenter", () => this.store.set({ hover: linksOfOp(m, op.index) }));
    button.addEventListener("focus", () => this.store.set({ hover: linksOfOp(m, op.index) }));
    button.addEventListener("mouseleave", () => this.store.set({ hover: null }));
    button.addEventListener("blur", () => this.store.set({ hover: null }));
    button.addEventListener("click", () => {
      const pos = this.model.ops.indexOf(op);
      this.scrubTo(pos);
      if (op.outputs.length) this.store.set({ selection: { kind: "tensor", id: op.outputs[0] } });
    });
    const li = h("div", { class: `gw-op-row${this.madeElsewhere(op) ? " elsewhere" : ""}`, role: "listitem", data: { op: op.index } }, button);
    const old = this.rows.get(op.index);
    this.rows.set(op.index, li);
    if (old) {
      if (this.current === old) this.current = li;
      this.lit = this.lit.map((r) => (r === old ? li : r));
      li.className = old.className;
    }
    return li;
  }

  /** Scrub to position `pos` of the tape (the last position shows everything). */
  private scrubTo(pos: number): void {
    const ops = this.model.ops;
    const op = pos >= ops.length - 1 ? null : ops[Math.max(0, pos)].index;
    this.store.set({ op, view: "tape" });
  }

  private togglePlay(): void {
    if (this.playing) {
      this.stop();
      return;
    }
    const ops = this.model.ops;
    if (!ops.length) return;
    let pos = 0;
    this.playButton.textContent = "Stop";
    this.scrubTo(pos);
    this.playing = window.setInterval(() => {
      pos += 1;
      this.scrubTo(pos);
      if (pos >= ops.length - 1) this.stop();
    }, 450);
  }

  private stop(): void {
    clearInterval(this.playing);
    this.playing = 0;
    this.playButton.textContent = "Replay";
  }

  private updateScrubber(): void {
    const n = this.model.ops.length;
    this.slider.max = String(Math.max(0, n - 1));
    const state = this.store.state;
    const pos = state.op === null ? n - 1 : this.model.ops.findIndex((o) => o.index === state.op);
    this.slider.value = String(Math.max(0, pos));
    this.slider.disabled = n === 0;
    this.position.textContent = n === 0 ? "" : state.op === null ? `all ${n} ops` : `op ${pos + 1} of ${n}`;
    // read as the words beside it, not the slider's 0-based value
    if (n) this.slider.setAttribute("aria-valuetext", state.op === null ? `all ${n} ops` : `op ${pos + 1} of ${n}`);
    else this.slider.removeAttribute("aria-valuetext");
  }

  /** Grey the rows of ops that made a node outside backward call `call`'s graph (none for null). */
  private markCall(call: number | null): void {
    const before = this.outside;
    this.outside = nodesOutsideCall(this.model, call);
    if (!before.size && !this.outside.size) return;
    for (const op of this.model.ops) this.rows.get(op.index)?.classList.toggle("elsewhere", this.madeElsewhere(op));
  }

  /** Bring into view the first op that made backward call `call`'s graph (none for null). */
  private revealCall(call: number | null): void {
    const ran = call === null ? undefined : this.model.backward(call)?.byNode;
    if (!ran?.size) return;
    const first = this.model.ops.find((op) => !this.madeElsewhere(op) && op.nodes.some((n) => ran.has(n)));
    const row = first && this.rows.get(first.index);
    if (!row) return;
    // The row at the top, the call's ops under it. Chunks never drawn have a placeholder's
    // height (content-visibility): the list is shorter than it will be, and a far row's
    // scroll stops short at its end, or lands while the chunks scrolled into view are still
    // being drawn. Again, every 80 ms, until the row is at the top (under a second), unless
    // another reveal starts or the reader scrolls the tape themselves.
    const token = ++this.revealing;
    const reveal = (tries: number) => {
      if (token !== this.revealing || !row.isConnected) return;
      const top = row.getBoundingClientRect().top;
      const edge = this.scroller.getBoundingClientRect().top + this.scroller.clientTop;
      if (Math.abs(top - edge) < 1) return;
      revealWithin(this.scroller, { top, bottom: top + this.scroller.clientHeight });
      if (tries > 0) window.setTimeout(() => reveal(tries - 1), 80);
    };
    reveal(12);
  }

  /** Whether `op` made a node of another call's graph (beside it, maybe, a leaf's
   * AccumulateGrad, which every call runs). */
  private madeElsewhere(op: OpRecorded): boolean {
    return this.outside.size > 0 && op.nodes.some((n) => this.outside.has(n));
  }

  private onStore(state: ViewState, changed: ReadonlySet<keyof ViewState>): void {
    // Another tab opened mid-replay: each next op set the view back to the tape, so the
    // click did nothing. The replay stops there, and the graph shows the whole forward pass
    // again (after this change has reached every view).
    if (changed.has("view") && state.view !== "tape" && this.playing) {
      this.stop();
      queueMicrotask(() => this.store.set({ op: null }));
    }
    if (changed.has("graphCall")) {
      const drawn = drawnCall(this.model, state.graphCall);
      this.markCall(drawn);
      this.revealCall(drawn);
    }
    if (changed.has("op")) {
      this.updateScrubber();
      this.markFuture(state.op);
    }
    if (changed.has("hover")) {
      for (const row of this.lit) row.classList.remove("linked");
      this.lit = (state.hover?.ops ?? []).map((i) => this.rows.get(i)).filter((r): r is HTMLElement => !!r);
      for (const row of this.lit) row.classList.add("linked");
      if (this.lit[0] && !this.root.matches(":hover")) revealWithin(this.scroller, this.lit[0]);
    }
  }

  /** Grey the ops after `op` (none when null): whole chunks by one class, rows only in the chunk `op` is in. */
  private markFuture(op: number | null): void {
    this.current?.classList.remove("current");
    this.current = op === null ? null : (this.rows.get(op) ?? null);
    this.current?.classList.add("current");
    if (this.current) revealWithin(this.scroller, this.current);
    const last = op ?? Infinity; // the last op shown
    let at = -1; // the chunk it is in
    while (op !== null && at + 1 < this.chunks.length && this.chunks[at + 1].first <= last) at += 1;
    // rows carry the class only in the chunk the scrubber is in: clear the last one's
    for (const i of new Set([this.scrubbedChunk, at])) {
      for (const row of this.chunks[i]?.el.children ?? []) {
        row.classList.toggle("future", i === at && Number((row as HTMLElement).dataset.op) > last);
      }
    }
    this.scrubbedChunk = at;
    this.chunks.forEach((chunk, i) => chunk.el.classList.toggle("future", op !== null && i > at));
  }
}

