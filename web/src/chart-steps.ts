// What a click on a chart's step opens: the backward walk of a step recorded in full, or,
// for a step recorded metrics-only, a note naming the steps that were, with (where code
// can run) a button that runs the code again with that step recorded in full and opens it
// once it has been: the last step of a long run, or any other, is one click away.
import type { ChartData } from "./charts-data";
import { h } from "./dom";
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
  /** A step asked to be recorded in full, opened once a run brings it in full. */
  private wanted: { optimizer: string; step: number } | null = null;
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
    this.store.set({ view: "stepper", step: call.entries[0].index, selection: null });
    return true;
  }

  /** Open backward call `index` (0-based), where no optimizer stepped, at its first step. */
  openCall(index: number): void {
    const entry = this.current().model.backward(index)?.entries[0];
    if (entry) this.store.set({ view: "stepper", step: entry.index, selection: null });
  }

  /** Call after new events: opens the step asked for once it arrives in full. */
  onEvents(): void {
    const wanted = this.wanted;
    if (!wanted) return;
    const { model, data } = this.current();
    if (data.step(wanted.optimizer, wanted.step)?.detail) {
      this.wanted = null;
      this.open(wanted.optimizer, wanted.step);
    } else if (model.isFinished) {
      this.wanted = null;
      this.say(`This run did not record step ${wanted.step} of ${wanted.optimizer} in full (it ran ${data.steps.get(wanted.optimizer)?.length ?? 0} steps of it).`);
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

  private again(optimizer: string, step: number): HTMLElement | null {
    const run = this.recordInFull;
    if (!run) return null;
    return h("button", {
      type: "button",
      class: "gw-btn gw-record-step",
      text: `Record step ${step} in full`,
      title: "Run the code again with this step's tape, graph and backward walk recorded, then open it",
      on: {
        click: () => {
          this.wanted = { optimizer, step };
          this.hide();
          run(step);
        },
      },
    });
  }

  private detailText(data: ChartData, optimizer: string): string {
    const steps = data.detailSteps(optimizer);
    if (!steps.length) return "No step of it was recorded in full.";
    const list = steps.length > 8 ? `${steps.slice(0, 8).join(", ")} …` : steps.join(", ");
    return `The tape, graph and backward walk were recorded for step${steps.length > 1 ? "s" : ""} ${list} (the dots).`;
  }

  /** Show `text` (and a button) in the charts' note, above the charts. */
  say(text: string, action: HTMLElement | null = null, about: NoteAbout = "step"): void {
    this.note.replaceChildren(h("span", { text }), action ? " " : "", action ?? "");
    this.note.hidden = false;
    this.about = about;
  }
}
