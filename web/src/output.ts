// The output panel: the run's status, what the snippet printed, errors with their line,
// limits reached and pitfalls found.
import { h, markCut } from "./dom";
import { pitfallCard } from "./pitfalls";
import { linksOfLine, linksOfNode, type Store } from "./store";
import type { TensorInfo, TraceModel } from "./trace-model";
import type { GradwalkEvent } from "./types/events";

type RunFinishedEvent = Extract<GradwalkEvent, { type: "run_finished" }>;

/** How the page words each way a run can end (the header's status and the output's first line). */
export const STATUS_WORDS: Record<RunFinishedEvent["status"], string> = {
  ok: "finished",
  error: "error",
  timeout: "timed out",
  cancelled: "stopped",
  crashed: "crashed",
  limit: "limit reached",
};

/** A button on a notice said with {@link OutputView.say} (a restored draft's Discard): a click runs `onClick` and removes the notice. */
export interface NoticeAction {
  text: string;
  title?: string;
  /** Its data-gw name. */
  gw?: string;
  onClick: () => void;
}

/** The errors of a snippet that does not compile, whose traceback shows where, with a caret. */
const COMPILE_ERRORS = new Set(["SyntaxError", "IndentationError", "TabError"]);

export class OutputView {
  private readonly status: HTMLElement;
  private readonly notices: HTMLElement;
  private readonly text: HTMLPreElement;
  private unsubscribe: () => void = () => {};
  /**
   * Set where code can be run (the app, not an embed): runs the code again with optimizer
   * step `detailEvery` (and its multiples) recorded in full, for an error that came in a
   * step recorded metrics-only.
   */
  recordInFull: ((detailEvery: number) => void) | null = null;
  /** The last text printed ended in a carriage return: the next goes over its line. */
  private returned = false;

  constructor(
    readonly root: HTMLElement,
    private model: TraceModel,
    private readonly store: Store,
  ) {
    root.classList.add("gw-output");
    // it scrolls when a run prints much (or the pane is short, in presenter type): the
    // keyboard must reach it to scroll it
    root.tabIndex = 0;
    this.status = h("div", { class: "gw-run-status", role: "status" });
    this.notices = h("div", { class: "gw-notices" });
    this.text = h("pre", { class: "gw-stdout", "aria-label": "Printed output" });
    root.append(this.status, this.notices, this.text);
    markCut(root); // a line cut at a short pane's edge fades (output.css)
    this.setModel(model);
  }

  setModel(model: TraceModel): void {
    this.unsubscribe();
    this.model = model;
    this.text.textContent = "";
    this.returned = false;
    this.notices.replaceChildren();
    for (const ev of model.events) this.add(ev);
    this.unsubscribe = model.subscribe((batch) => batch.forEach((ev) => this.add(ev)));
    this.renderStatus();
  }

  /**
   * Show a message that is not part of a run (a refused request, a lost connection, "Link
   * copied"). It replaces the one said before: the same file opened three times, or a link
   * copied three times, piled up three notices.
   */
  say(message: string, kind: "error" | "info" = "info", action?: NoticeAction): void {
    this.unsay();
    const notice = h("div", { class: `gw-notice gw-notice-${kind}`, role: kind === "error" ? "alert" : "status", data: { said: "" }, text: message });
    if (action) {
      const click = () => {
        notice.remove();
        action.onClick();
      };
      notice.append(" ", h("button", { type: "button", class: "gw-btn gw-notice-action", text: action.text, title: action.title, data: action.gw ? { gw: action.gw } : {}, on: { click } }));
    }
    this.notices.append(notice);
    // the output scrolls (a long print): bring the notice into it, without moving the page
    const above = notice.getBoundingClientRect().top - this.root.getBoundingClientRect().top;
    if (above < 0 || above > this.root.clientHeight - notice.offsetHeight) this.root.scrollTop += above;
  }

  /** The run shown ended where the page could not see it (the server restarted while it ran): the status line says so, in place of "running on cpu…". */
  endedUnseen(status: string, why: string): void {
    this.root.dataset.status = status;
    this.status.textContent = `${STATUS_WORDS[status as RunFinishedEvent["status"]] ?? status} · ${why}`;
  }

  /** Take back what {@link say} said (a run starts: "Could not reach the server" is over). */
  unsay(): void {
    for (const old of this.notices.querySelectorAll("[data-said]")) old.remove();
  }

  private add(ev: GradwalkEvent): void {
    switch (ev.type) {
      case "output": {
        this.print(ev.text, ev.stream === "stderr" ? "gw-stderr" : "");
        const nonLeaf = ev.stream === "stderr" ? nonLeafGradRead(this.model, ev.text) : null;
        if (nonLeaf) this.notices.append(this.warningNote(nonLeaf));
        break;
      }
      case "error": {
        // an error whose hint says which .grad read None and why (`x.grad is None because x is
        // not a leaf…`) replaces the note made of PyTorch's warning a moment before, at its line
        if (ev.hint && ev.line != null && GRAD_IS_NONE.test(ev.hint)) {
          for (const note of this.notices.querySelectorAll(`[data-warning="non-leaf-grad"][data-line="${ev.line}"]`)) note.remove();
        }
        const where = ev.line ? this.lineButton(ev.line) : null;
        this.notices.append(
          h(
            "div",
            { class: "gw-notice gw-notice-error", role: "alert", data: { line: ev.line ?? "" } },
            h("strong", { text: ev.exc_type }),
            where ? [" at ", where] : null,
            h("div", { class: "gw-error-message", text: ev.message }),
            ev.hint ? h("div", { class: "gw-hint", text: ev.hint }) : null,
            ev.node != null ? this.nodeButton(ev.node) : null,
            ev.metrics_only_after != null
              ? this.metricsOnlyNote("optimizer step", ev.metrics_only_after)
              : ev.metrics_only_calls != null
                ? this.metricsOnlyNote("backward() call", ev.metrics_only_calls)
                : null,
            // a snippet that does not compile: Python's report, its line with a caret, is the point
            ev.traceback ? h("details", { open: COMPILE_ERRORS.has(ev.exc_type) }, h("summary", { text: "traceback" }), h("pre", { text: ev.traceback })) : null,
          ),
        );
        break;
      }
      case "limit":
        this.notices.append(h("div", { class: "gw-notice gw-notice-limit", role: "status" }, h("strong", { text: `limit: ${ev.what}` }), ` ${ev.message}`));
        break;
      case "pitfall":
        this.notices.append(pitfallCard(this.model, ev, this.store, ev.metrics_only_after != null ? this.metricsOnlyNote("optimizer step", ev.metrics_only_after) : null));
        break;
      case "run_finished":
        this.renderStatus();
        this.sayWhyItStopped(ev);
        break;
      case "run_started":
        this.renderStatus();
        break;
    }
  }

  /**
   * Append printed `text` as a terminal shows it: a carriage return (`print("\rstep 7", end="")`,
   * a progress bar's redraw) goes back to the start of its line, so what follows replaces it
   * rather than running on after it ("step 0step 1step 2…").
   */
  private print(text: string, cls: string): void {
    const parts = text.replace(/\r\n/g, "\n").split("\r");
    parts.forEach((part, i) => {
      if (i > 0) this.returned = true;
      if (!part) return; // a `\r` last goes back when more comes, as a terminal's cursor does
      if (this.returned && !part.startsWith("\n")) this.eraseLine();
      this.returned = false;
      this.text.append(h("span", { class: cls, text: part }));
    });
  }

  /** Remove what was printed since the last line break (the line a `\r` goes back over). */
  private eraseLine(): void {
    for (let span = this.text.lastChild; span; span = this.text.lastChild) {
      const printed = span.textContent ?? "";
      const end = printed.lastIndexOf("\n");
      if (end >= 0) {
        if (end < printed.length - 1) span.textContent = printed.slice(0, end + 1);
        return;
      }
      span.remove();
    }
  }

  /**
   * Say why a run ended early (its time limit, a cancel, a crash, a memory limit) in the
   * runner's words. An error the snippet raised has its own card, at its line, already.
   */
  private sayWhyItStopped(ev: RunFinishedEvent): void {
    if (ev.status === "ok" || !ev.message || (ev.status === "error" && this.model.errors.length > 0)) return;
    const kind = ev.status === "cancelled" ? "info" : ev.status === "timeout" || ev.status === "limit" ? "limit" : "error";
    this.notices.append(
      h("div", { class: `gw-notice gw-notice-${kind}`, role: kind === "error" ? "alert" : "status", data: { stopped: ev.status } }, ev.message),
    );
  }

  /** Open the node an error is about: selected in the graph, its lines lit, its card in Inspect. */
  private nodeButton(id: number): HTMLElement | null {
    const node = this.model.node(id);
    if (!node) return null;
    return h("button", {
      type: "button",
      class: "gw-btn gw-error-node",
      text: `Show ${node.name} in the graph`,
      on: { click: () => this.store.set({ selection: { kind: "node", id }, hover: linksOfNode(this.model, id), view: "inspector" }) },
    });
  }

  /**
   * Say that the failing iteration, the one after `what` number `done` (optimizer step 7,
   * backward() call 500), was recorded metrics-only, with a way to record it in full.
   */
  private metricsOnlyNote(what: string, done: number): HTMLElement {
    const again = this.recordInFull;
    return h(
      "div",
      { class: "gw-metrics-only" },
      h("span", { text: `This iteration (after ${what} ${done}) was recorded metrics-only: its tape, graph and backward walk are not in the trace.` }),
      again
        ? h("button", {
            type: "button",
            class: "gw-btn gw-record-in-full",
            text: "Record this iteration in full",
            title: `Run the code again, recording ${what} ${done + 1} in full`,
            on: { click: () => again(done + 1) },
          })
        : null,
    );
  }

  /** A PyTorch warning in plain words, at its line, with what to do. */
  private warningNote(note: WarningNote): HTMLElement {
    return h(
      "div",
      { class: "gw-notice gw-notice-warning", role: "status", data: { line: note.line, warning: note.kind } },
      h("strong", { text: note.title }),
      " at ",
      this.lineButton(note.line),
      h("div", { class: "gw-hint", text: note.hint }),
    );
  }

  private lineButton(line: number): HTMLElement {
    const b = h("button", { type: "button", class: "gw-line-link", text: `line ${line}` });
    b.addEventListener("click", () => this.store.set({ hover: linksOfLine(this.model, line) }));
    return b;
  }

  private renderStatus(): void {
    const m = this.model;
    const f = m.finished;
    this.root.dataset.status = f ? f.status : m.run ? "running" : "idle";
    if (!m.run && !f) {
      this.status.textContent = "";
      return;
    }
    if (!f) {
      this.status.textContent = `running on ${m.run?.device ?? "cpu"}…`;
      return;
    }
    const c = f.counts;
    const parts = [
      STATUS_WORDS[f.status] ?? f.status,
      `${f.duration_s.toFixed(3)} s`,
      `${c.ops} ops`,
      `${c.nodes} nodes`,
      // a loop that steps by hand records its first calls in full, the rest metrics-only
      m.backwards.length < c.backward_calls && !c.optimizer_steps ? `${c.backward_calls} backward (${m.backwards.length} in full)` : `${c.backward_calls} backward`,
    ];
    if (c.optimizer_steps) {
      // a long run records its first steps in full and the rest metrics-only (the tape's gap rows)
      const whole = m.optimizerSteps.filter((s) => s.detail).length;
      parts.push(whole < c.optimizer_steps ? `${c.optimizer_steps} optimizer steps (${whole} in full)` : `${c.optimizer_steps} optimizer steps`);
    }
    // what gradwalk could not observe (a tensor it cannot read); the run itself was unaffected
    if (c.unrecorded) parts.push(`${c.unrecorded} not recorded`);
    if (m.run) parts.push(`torch ${m.run.torch_version} on ${m.run.device}`);
    this.status.textContent = parts.join(" · ");
  }
}

/** A warning PyTorch printed, said again in a learner's words. */
interface WarningNote {
  kind: string;
  line: number;
  title: string;
  hint: string;
}

/** How an error's hint starts when it explains a .grad that read None (engine/explain_grad.py). */
const GRAD_IS_NONE = /^[\p{L}\p{N}_.]+\.grad is None(?![\p{L}\p{N}_])/u;

/** PyTorch's warning for reading the .grad of a tensor that is not a leaf, with the snippet's line. */
const NON_LEAF_GRAD = /:(\d+): UserWarning: The \.grad attribute of a Tensor that is not a leaf Tensor is being accessed/;

/**
 * The note for PyTorch's non-leaf .grad warning, where `text` (what the snippet wrote to
 * stderr) holds it: which tensor's .grad read None (the line's first `name.grad` whose tensor
 * the run computed), why, and what to read or call instead. PyTorch's own text ends in a path
 * inside its build and never says that the value read was None.
 */
export function nonLeafGradRead(model: TraceModel, text: string): WarningNote | null {
  const found = NON_LEAF_GRAD.exec(text);
  if (!found) return null;
  const line = Number(found[1]);
  const code = (model.run?.source ?? "").split("\n")[line - 1] ?? "";
  const named = new Map<string, TensorInfo>();
  for (const t of model.tensors.values()) if (t.name) named.set(t.name, t);
  const computed = [...code.matchAll(/([\p{L}_][\p{L}\p{N}_.]*)\.grad(?![\p{L}\p{N}_])/gu)].map((m) => m[1]).find((name) => named.get(name)?.ev.is_leaf === false);
  const name = computed ?? "this tensor";
  const tensor = computed ? named.get(computed) : undefined;
  const gradFn = tensor?.ev.grad_fn != null ? model.node(tensor.ev.grad_fn)?.name : undefined;
  const leaves = [...named.values()].filter((t) => t.ev.is_leaf && t.ev.requires_grad).map((t) => `${t.name}.grad`);
  const read = leaves.length ? leaves.slice(0, 3).join(", ") : "the .grad of the tensors made with requires_grad=True";
  const owner = computed ? `${name}.grad` : ".grad";
  return {
    kind: "non-leaf-grad",
    line,
    title: `${owner} is None`,
    hint:
      `${name} is computed from other tensors${gradFn ? ` (its grad_fn is ${gradFn})` : ""}, not a leaf, and backward() fills only the leaves' .grad; ` +
      `the gradient only passed through ${name}. Read ${read} instead, or call ${computed ? name : "t"}.retain_grad() before backward() to keep ${owner} too.`,
  };
}
