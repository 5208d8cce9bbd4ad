// Hiding charts: the × on a chart's card, the toolbar's "show N hidden charts", and the line
// that says so when every chart of the run is hidden. Which charts are hidden is the store's
// `hide`, which links, embeds, exports and rooms carry (url-state.ts).
import type { Table } from "./charts-data";
import { h } from "./dom";
import type { Store } from "./store";
import { canHide } from "./url-state";

export class ChartHiding {
  /** "show N hidden charts", for the toolbar; hidden while none of the run's charts is. */
  readonly unhide: HTMLButtonElement;
  /** Says so where every chart of the run is hidden (the grid is empty then). */
  readonly allHidden: HTMLElement;

  constructor(private readonly store: Store) {
    this.unhide = h("button", {
      type: "button",
      class: "gw-btn gw-charts-unhide",
      hidden: true,
      on: { click: () => store.set({ hide: [] }) },
    });
    this.allHidden = h("p", { class: "gw-charts-all-hidden", hidden: true });
  }

  /** The charts of `all` to draw (those not hidden); the toolbar names the others. */
  shown(all: readonly Table[]): Table[] {
    const hide = new Set(this.store.state.hide);
    const shown = all.filter((t) => !hide.has(t.id));
    this.render(all.filter((t) => hide.has(t.id)), shown.length === 0);
    return shown;
  }

  /** What the × of chart `id` does; null where a link could not name the chart (a metric
   * called "acc (%)"), which is then not offered for hiding. */
  hider(id: string): (() => void) | null {
    return canHide(id) ? () => this.store.set({ hide: [...this.store.state.hide, id] }) : null;
  }

  private render(hidden: readonly Table[], none: boolean): void {
    const n = hidden.length;
    const titles = hidden.map((t) => t.title).join(", ");
    this.unhide.hidden = n === 0;
    this.unhide.textContent = n === 1 ? `show the hidden ${hidden[0].title} chart` : `show ${n} hidden charts`;
    this.unhide.title = `Hidden: ${titles}`;
    this.allHidden.hidden = !(none && n > 0);
    this.allHidden.textContent = this.allHidden.hidden ? "" : `Every chart of this run is hidden (${titles}): “${this.unhide.textContent}” above brings them back.`;
  }
}
