// The stepper's position beside its slider ("step 4 of 12 · backward 2: 1 of 3") keeps one
// line: where its row leaves too little room for it (the side pane of a 900 px embed, a
// 1280 px laptop), the backward call's part shortens to the number its tab shows ("step 4 of
// 12 · #2: 1 of 3"). The full words stay the element's text (visually hidden, read by the
// position's live region) and its tooltip; the short ones are drawn by CSS (stepper.css) from
// data-short, hidden from screen readers. Where even the short words would wrap (a projector's
// 1280 x 720 pane in presenter type: "step 1 of 18 · #1: 1 of 6" beside the slider and the
// speed select), the position takes a row of its own under them (data-row, stepper.css), in
// full words where they fit there. A text that wraps even so wraps, as before.
import { h } from "./dom";
import type { TraceModel } from "./trace-model";

/** Where a step is: its number in the walk, and its call's where the run called backward() more than once. */
export interface StepPlace {
  step: number;
  steps: number;
  /** The backward() call (counted from 1), the step within it and the call's steps; null: one call. */
  call: { number: number; within: number; steps: number } | null;
}

/** The position's words, in full and (several calls) short. */
export function positionWords(place: StepPlace): { full: string; short: string | null } {
  const walk = `step ${place.step} of ${place.steps}`;
  const { call } = place;
  if (!call) return { full: walk, short: null };
  return {
    full: `${walk} · backward ${call.number}: ${call.within} of ${call.steps}`,
    short: `${walk} · #${call.number}: ${call.within} of ${call.steps}`,
  };
}

/** Shows a step's position in `el`, shortened where its full words would wrap. */
export class StepPosition {
  private full: HTMLElement | null = null;
  private pending = false;
  private watched = false;

  /** `el`: the position's element; its row (its parent, once it has one) is watched for room. */
  constructor(private readonly el: HTMLElement) {}

  /** Watch the row: its width changes (a frame resized, a splitter dragged, the tab shown,
   * presenter type): fit again in the next frame (fitting changes the row's height, which
   * would notify again in this one). */
  private watch(): void {
    const row = this.el.parentElement;
    if (this.watched || !row || typeof ResizeObserver === "undefined") return;
    this.watched = true;
    new ResizeObserver(() => this.fitSoon()).observe(row);
  }

  /** Show `place`; null: no step (the text is cleared). */
  show(place: StepPlace | null): void {
    if (!place) {
      this.full = null;
      this.el.replaceChildren();
      this.el.removeAttribute("title");
      delete this.el.dataset.fit;
      delete this.el.dataset.short;
      return;
    }
    const { full, short } = positionWords(place);
    this.full = short ? h("span", { class: "gw-position-full", text: full }) : null;
    // the short form is drawn by CSS from data-short (its text is the element's nobody reads)
    if (this.full && short) this.el.replaceChildren(this.full);
    else this.el.textContent = full;
    if (short) this.el.dataset.short = short;
    else delete this.el.dataset.short;
    this.watch();
    this.fit();
  }

  private fitSoon(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.fit();
    });
  }

  /**
   * The first of: full words beside the slider, short ones beside it, full words on a row
   * of their own, short ones there, that takes one line; the last where none does.
   */
  private fit(): void {
    const forms: ("full" | "short" | null)[] = this.full ? ["full", "short"] : [null];
    const tries = [false, true].flatMap((row) => forms.map((form) => ({ row, form })));
    let chosen = tries[tries.length - 1];
    for (const t of tries) {
      this.apply(t.row, t.form);
      if (!this.wraps()) {
        chosen = t;
        break;
      }
    }
    this.apply(chosen.row, chosen.form);
    if (chosen.form === "short") this.el.title = this.full?.textContent ?? "";
    else this.el.removeAttribute("title");
  }

  private apply(row: boolean, form: "full" | "short" | null): void {
    if (row) this.el.dataset.row = "own";
    else delete this.el.dataset.row;
    if (form) this.el.dataset.fit = form;
    else delete this.el.dataset.fit;
  }

  /** Whether the position's text takes more than one line (a hidden one takes none). */
  private wraps(): boolean {
    const style = getComputedStyle(this.el);
    const line = Number.parseFloat(style.lineHeight) || Number.parseFloat(style.fontSize) * 1.2;
    return this.el.getBoundingClientRect().height > line * 1.5;
  }
}

/** What the backward walk of `model` runs up to `step`: node names, and the ends of calls. */
export function walkTo(model: TraceModel, step: number): string[] {
  return model.timeline.slice(0, step + 1).map((e) => (e.exec ? (model.node(e.exec.node)?.name ?? "?") : "end"));
}

/** Whether two walks ({@link walkTo}) ran the same nodes in the same order. */
export function sameWalk(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
