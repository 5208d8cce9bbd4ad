// The y axes of the charts on screen, all as wide as the widest one needs: the plot areas
// of stacked cards then start at the same x, and step 200 sits at the same x in every chart
// of a column. Each axis as wide as its own labels (a learning rate's 4.9998e-4 wider than a
// loss's 1.12) shifted its plot right of its neighbours'.
import type { Chart } from "./chart-card";
import { perFrame } from "./dom";

export class YAxisWidths {
  /** The room the widest y axis of the charts on screen needs, as last aligned (px). */
  private widest = 0;
  private readonly schedule = perFrame(() => this.align());

  /** `onScreen`: the charts in the grid now (hidden charts are not; their plots may be unset). */
  constructor(private readonly onScreen: () => Iterable<Chart>) {}

  /**
   * The width to give `chart`'s y axis whose labels need `need` px: at least the widest
   * axis's. Call it from the axis's uPlot `size`; when `need` changed, the charts are
   * aligned again in the next frame (each plot whose width then differs is redrawn).
   */
  size(chart: Chart, need: number): number {
    if (need !== chart.yNeed) {
      chart.yNeed = need;
      this.schedule();
    }
    chart.ySize = Math.max(need, this.widest);
    return chart.ySize;
  }

  /** Give every chart on screen the widest need; redraw those drawn at another width. */
  private align(): void {
    const drawn = [...this.onScreen()].filter((chart) => chart.plot && chart.card.isConnected);
    this.widest = drawn.reduce((w, chart) => Math.max(w, chart.yNeed), 0);
    for (const chart of drawn) {
      if (chart.ySize !== Math.max(chart.yNeed, this.widest)) chart.plot!.redraw(false, true);
    }
  }
}
