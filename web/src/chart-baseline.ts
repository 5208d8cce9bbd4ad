// The charts' comparison: which run is drawn dashed under the one on screen (the store's
// `compare`, a run id the URL, embeds, exports and rooms carry), its events, and the
// toolbar's "compare with the run before" switch. Where the run's events come from is the
// page's to say (`fetchRun`): the app keeps the run it just replaced, and asks the server
// for any other; an export carries the compared run's trace in the page.
import { describeChange, sourceChange } from "./chart-compare";
import { ChartData, type Table } from "./charts-data";
import { h } from "./dom";
import type { Store } from "./store";
import type { GradwalkEvent } from "./types/events";

/** A run's code and events, as far as the charts need them. */
export interface RunEvents {
  source?: string;
  events: readonly GradwalkEvent[];
}

export type FetchRun = (id: string) => Promise<RunEvents>;

/** Whether `events` give the charts anything to draw (an optimizer step, memory, a metric). */
export function hasCharts(events: readonly GradwalkEvent[]): boolean {
  return events.some((e) => e.type === "optimizer_step" || e.type === "metric" || (e.type === "memory" && e.saved_bytes > 0));
}

/**
 * What chart `id` draws, for pairing a run's charts with the compared run's: a loop that
 * steps by hand charts its loss per backward() call ("calls"), an optimizer's per step
 * ("loss"); one backward a step, so the update written out and the optimizer that does it
 * are compared on one loss chart.
 */
export function comparedAs(id: string): string {
  return id === "calls" ? "loss" : id;
}

export class Baseline {
  /** The switch and what it compares with, for the charts' toolbar. */
  readonly control: HTMLElement;
  /** What the dashed lines are, for the toolbar ("dashed: line 11: lr=0.05 → lr=0.5"). */
  readonly description: HTMLElement;
  private readonly toggle: HTMLInputElement;
  /** The run a tick compares with: the run before, in the app; the compared run, in an embed. */
  private candidate: string | null = null;
  /** The run just replaced, kept so that comparing with it needs no fetch. */
  private offered: { id: string; run: RunEvents } | null = null;
  private loaded: { id: string; run: RunEvents } | null = null;
  private data: ChartData | null = null;

  constructor(
    private readonly store: Store,
    /** Where a compared run's events come from; without it only `offer`ed runs can be compared. */
    private readonly fetchRun: FetchRun | null,
    /** The code of the run on screen (what the compared run's code is told apart from). */
    private readonly currentSource: () => string,
    /** Called when the dashed run changed: the charts are drawn again. */
    private readonly changed: () => void,
    /** Says why a run could not be compared. */
    private readonly say: (message: string) => void,
  ) {
    this.toggle = h("input", { type: "checkbox", "aria-label": "Compare with the run before" });
    this.description = h("span", { class: "gw-charts-compare-what" });
    this.control = h(
      "label",
      { class: "gw-check gw-charts-compare", title: "Draw the run before this one dashed under it, on every chart both have", hidden: true },
      this.toggle,
      " compare with the run before",
    );
    this.toggle.addEventListener("change", () => store.set({ compare: this.toggle.checked ? this.candidate : null }));
  }

  /** Follow the store's `compare` from now on, starting with its run (once the charts are built). */
  start(): void {
    this.store.subscribe((state, changed) => {
      if (changed.has("compare")) void this.load(state.compare);
      else if (changed.has("perParam")) this.rebuild();
    });
    void this.load(this.store.state.compare);
  }

  /**
   * Offer `id` (the run just replaced, with its events) as the run a tick compares with;
   * while a comparison is on, it moves to `id`. A run with nothing to chart is not offered.
   */
  offer(id: string | null, run: RunEvents | null): void {
    const usable = id !== null && run !== null && hasCharts(run.events);
    this.offered = usable ? { id, run } : null;
    this.candidate = usable ? id : null;
    if (this.store.state.compare !== null) this.store.set({ compare: this.candidate });
    this.render();
  }

  /** The compared run's tables, in the charts' order (none while no run is compared). */
  tables(): readonly Table[] {
    return this.data?.ordered ?? [];
  }

  /** The compared run's table for this run's chart `id` (see {@link comparedAs}), when one is drawn. */
  table(id: string): Table | null {
    const kind = comparedAs(id);
    return this.data?.ordered.find((t) => comparedAs(t.id) === kind) ?? null;
  }

  /** Draw the comparison again: the run on screen changed (its code, its events). */
  render(): void {
    const on = this.store.state.compare;
    this.toggle.checked = on !== null;
    this.control.hidden = this.candidate === null && on === null;
    const run = this.loaded && this.loaded.id === on ? this.loaded.run : null;
    this.description.hidden = run === null;
    this.description.textContent = run ? `dashed: ${describeChange(sourceChange(run.source ?? "", this.currentSource()))}` : "";
  }

  private rebuild(): void {
    this.data = this.loaded ? ChartData.from(this.loaded.run.events, this.store.state.perParam) : null;
  }

  private async load(id: string | null): Promise<void> {
    if (id === null || this.loaded?.id !== id) {
      this.loaded = null;
      this.data = null;
    }
    if (id !== null && !this.loaded) {
      const run = this.offered?.id === id ? this.offered.run : await this.fetch(id);
      if (this.store.state.compare !== id) return; // switched again meanwhile
      if (!run) {
        this.store.set({ compare: null });
        return;
      }
      this.candidate ??= id; // a run that could not be loaded is not offered to compare with
      this.loaded = { id, run };
      this.rebuild();
    }
    this.render();
    this.changed();
  }

  private async fetch(id: string): Promise<RunEvents | null> {
    if (!this.fetchRun) {
      this.say(`Run ${id} cannot be compared here: this page has no server to fetch it from.`);
      return null;
    }
    try {
      return await this.fetchRun(id);
    } catch (err) {
      this.say(`Could not load run ${id} to compare with: ${(err as Error).message}`);
      return null;
    }
  }
}
