// What a click on a chart's step opens: the backward walk of a step recorded in full, or,
// for a step recorded metrics-only, a note naming the steps that were, with (where code
// can run) a button that runs the code again with that step recorded in full and opens it
// once it has been: the last step of a long run, or any other, is one click away. A step
// opened draws its own graph where the run recorded several (graph-calls.ts).
import type { ChartData } from "./charts-data";
import { h } from "./dom";
import { graphCallFor } from "./graph-calls";
import type { Store } from "./store";
import type { TraceModel } from "./trace-model";

/** What the charts' note is about: a step of the run shown, or the run compared with. */
export type NoteAbout = "step" | "comparison";

export class StepOpener {
  /**
   * Set where code can be run (the app, not an embed): runs the code again with optimizer
   * step `step` (and its multiples) recorded in full.
   */
  recordInFull: ((step: number) => void) | null = null;
  /**
   * A step (of an optimizer, or a backward() call where none stepped: `optimizer` null)
   * asked to be recorded in full, opened once a run brings it in full.
   */
  private wanted: { optimizer: string | null; step: number } | null = null;
  /** What the note says something about. */
  private about: NoteAbout = "step";

  constructor(
    private readonly note: HTMLElement,
    private readonly store: Store,
    private readonly current: () => { model: TraceModel; data: ChartData },
  ) {}

  /** Open the backward walk of `optimizer`'s step `step`, or say why it cannot be opened. */
  open(optimizer: string, step: number): boolean {
    const { model, data } = this.current();
    const ev = data.step(optimizer, step);
    if (!ev) return false;
    if (!ev.detail) {
      this.say(`Step ${step} of ${optimizer} carries metrics only. ${this.detailText(data, optimizer)}`, this.again(optimizer, step));
      return false;
    }
    const call = [...model.backwards].reverse().find((c) => c.start.seq < ev.seq);
    if (!call?.entries.length) {
      this.say(`Step ${step} of ${optimizer} was recorded in full, but no backward() ran before it.`);
      return false;
    }
    this.hide();
    this.store.set({ view: "stepper", step: call.entries[0].index, selection: null, graphCall: graphCallFor(model, call.index) });
    return true;
  }

  /**
   * Open backward call `index` (0-based), where no optimizer stepped, at its first step; or,
   * for a call of a long loop recorded metrics-only, say which calls were recorded in full.
   */
  openCall(index: number): boolean {
    const { model, data } = this.current();
    const entry = model.backward(index)?.entries[0];
    if (entry) {
      this.hide();
      this.store.set({ view: "stepper", step: entry.index, selection: null, graphCall: graphCallFor(model, index) });
      return true;
    }
    if (!data.detailCalls.has(index + 1)) this.say(`Call ${index + 1} of backward() carries its loss only. ${this.callsText(data)}`, this.again(null, index + 1));
    return false;
  }

  /** Call after new events: opens the step asked for once it arrives in full. */
  onEvents(): void {
    const wanted = this.wanted;
    if (!wanted) return;
    const { model, data } = this.current();
    const { optimizer, step } = wanted;
    if (optimizer === null ? data.detailCalls.has(step) && model.backward(step - 1)?.entries.length : data.step(optimizer, step)?.detail) {
      this.wanted = null;
      if (optimizer === null) this.openCall(step - 1);
      else this.open(optimizer, step);
    } else if (model.isFinished) {
      this.wanted = null;
      this.say(
        optimizer === null
          ? `This run did not record backward() call ${step} in full (it made ${data.tables.get("calls")?.length ?? 0} calls).`
          : `This run did not record step ${step} of ${optimizer} in full (it ran ${data.steps.get(optimizer)?.length ?? 0} steps of it).`,
      );
    }
  }

  /**
   * Hide the note; with `about`, only a note about that (a new run hides what was said about
   * a step of the old one, not that the run asked to compare with could not be loaded).
   */
  hide(about?: NoteAbout): void {
    if (about && this.about !== about) return;
    this.note.hidden = true;
  }

  /** The button that records `optimizer`'s step `step` (a backward() call's, for null) in full. */
  private again(optimizer: string | null, step: number): HTMLElement | null {
    const run = this.recordInFull;
    if (!run) return null;
    const what = optimizer === null ? "call" : "step";
    return h("button", {
      type: "button",
      class: "gw-btn gw-record-step",
      text: `Record ${what} ${step} in full`,
      title: `Run the code again with this ${what}'s tape, graph and backward walk recorded, then open it`,
      on: {
        click: () => {
          this.wanted = { optimizer, step };
          this.hide();
          run(step);
        },
      },
    });
  }

  private callsText(data: ChartData): string {
    const calls = [...data.detailCalls].sort((a, b) => a - b);
    if (!calls.length) return "No call was recorded in full.";
    return `The tape, graph and backward walk were recorded for call${calls.length > 1 ? "s" : ""} ${listText(calls)} (the dots).`;
  }

  private detailText(data: ChartData, optimizer: string): string {
    const steps = data.detailSteps(optimizer);
    if (!steps.length) return "No step of it was recorded in full.";
    return `The tape, graph and backward walk were recorded for step${steps.length > 1 ? "s" : ""} ${listText(steps)} (the dots).`;
  }

  /** Show `text` (and a button) in the charts' note, above the charts. */
  say(text: string, action: HTMLElement | null = null, about: NoteAbout = "step"): void {
    this.note.replaceChildren(h("span", { text }), action ? " " : "", action ?? "");
    this.note.hidden = false;
    this.about = about;
  }
}

/**
 * Bind the presses on a chart's plot (`over`) that open the step under the cursor (`at`):
 * a mouse's click in place opens it (`open`); a finger's first tap reads it (`read`, whose
 * words then say "tap again to open") and a second on the same step opens it. A tap to read
 * a metrics-only step had put a note above the chart, and the next tap, aimed at the chart
 * moved down, pressed "Record step 20 in full" (hunt 64, touch). `touched` is told whether
 * each press was a finger's.
 */
export function bindStepPresses(over: HTMLElement, at: () => number | null | undefined, open: (idx: number) => void, read: () => void, touched: (finger: boolean) => void): void {
  let down: [number, number] | null = null;
  let finger = false;
  let tapped: number | null = null;
  over.addEventListener("pointerdown", (ev) => {
    finger = ev.pointerType === "touch";
    touched(finger);
  });
  over.addEventListener("mousedown", (ev) => (down = [ev.clientX, ev.clientY]));
  // A press and release in place is a click (uPlot's drag-to-zoom sometimes eats "click").
  over.addEventListener("mouseup", (ev) => {
    const moved = !down || Math.hypot(ev.clientX - down[0], ev.clientY - down[1]) > 4;
    down = null;
    const idx = at();
    if (moved || ev.button !== 0 || idx === null || idx === undefined) return;
    if (finger && tapped !== idx) {
      tapped = idx;
      read();
      return;
    }
    tapped = null;
    open(idx);
  });
}

/**
 * Ascending numbers as a note writes them: a run of three or more as a range (`1–10`), the
 * first eight items and `…` past that (`1–3, 100, 200, 300, …`).
 */
export function listText(xs: number[]): string {
  const items: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j] + 1) j++;
    if (j - i >= 2) items.push(`${xs[i]}–${xs[j]}`);
    else for (let k = i; k <= j; k++) items.push(String(xs[k]));
    i = j + 1;
  }
  return items.length > 8 ? `${items.slice(0, 8).join(", ")} …` : items.join(", ");
}
