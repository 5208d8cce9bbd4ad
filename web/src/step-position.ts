// The stepper's position beside its slider ("step 4 of 12 · backward 2: 1 of 3") keeps one
// line: where its row leaves too little room for it (the side pane of a 900 px embed, a
// 1280 px laptop), the backward call's part shortens to the number its tab shows ("step 4 of
// 12 · #2: 1 of 3"). The full words stay the element's text (visually hidden, read by the
// position's live region) and its tooltip; the short ones are drawn by CSS (stepper.css) from
// data-short, hidden from screen readers. A text that wraps even so wraps, as before.
import { h } from "./dom";

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

  /** Full words where they take one line (an inline box on two lines has two rects). */
  private fit(): void {
    if (!this.full) {
      delete this.el.dataset.fit;
      this.el.removeAttribute("title");
      return;
    }
    this.el.dataset.fit = "full";
    const short = this.full.getClientRects().length > 1;
    this.el.dataset.fit = short ? "short" : "full";
    if (short) this.el.title = this.full.textContent ?? "";
    else this.el.removeAttribute("title");
  }
}
