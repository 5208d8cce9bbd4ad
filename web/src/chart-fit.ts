// How tall the training charts' plots are. A fixed 168 px plot left half the charts panel
// empty on a 1920 x 1080 screen (and in presenter type on it): two rows of cards 230 px
// high in a 900 px panel. The plots now grow until the cards fill the panel's height, row by
// row, within bounds; where they do not fit at the least height (a 1280 x 720 laptop: three
// rows), they keep it and the panel scrolls, as before.

/** The least plot height (px, the x axis included): what every chart had before. */
export const PLOT_MIN = 168;
/** The most: a taller plot shows no more of a 30-step curve, only takes the next row's room. */
export const PLOT_MAX = 360;
/** A plot at most this many times as tall as it is wide (a lone chart in a tall panel). */
const MAX_ASPECT = 0.9;

/** One chart's card and the box its plot is drawn in (chart-card.ts `Chart`). */
export interface CardPlot {
  card: HTMLElement;
  plotEl: HTMLElement;
}

/**
 * The plot height (px) at which the cards in `grid`, laid out in rows, fill the height of
 * `scroll` (the panel that scrolls them) without scrolling: what each row needs besides its
 * plot (the title, the readout, a legend, a foot; its tallest card's) and the gaps between
 * rows come off the panel's height first, the rest is shared out evenly. Within
 * [PLOT_MIN, PLOT_MAX], and no taller than MAX_ASPECT of the narrowest plot's width.
 * PLOT_MIN where nothing is shown (a hidden panel measures 0).
 */
export function fittedPlotHeight(scroll: HTMLElement, grid: HTMLElement, charts: Iterable<CardPlot>): number {
  const rows = new Map<number, number>();
  let narrowest = Infinity;
  for (const { card, plotEl } of charts) {
    if (!card.isConnected || card.offsetParent === null) continue;
    const top = Math.round(card.offsetTop);
    rows.set(top, Math.max(rows.get(top) ?? 0, card.offsetHeight - plotEl.offsetHeight));
    narrowest = Math.min(narrowest, plotEl.clientWidth);
  }
  if (!rows.size || !scroll.clientHeight) return PLOT_MIN;
  const css = getComputedStyle(scroll);
  const gap = parseFloat(getComputedStyle(grid).rowGap) || 0;
  // the grid's top inside the panel's scrolled content (the panel's padding above it)
  const gridTop = grid.getBoundingClientRect().top - scroll.getBoundingClientRect().top + scroll.scrollTop;
  const chrome = [...rows.values()].reduce((a, b) => a + b, 0);
  const room = scroll.clientHeight - gridTop - (parseFloat(css.paddingBottom) || 0) - gap * (rows.size - 1) - chrome;
  const even = Math.floor(room / rows.size);
  const most = Math.min(PLOT_MAX, Number.isFinite(narrowest) && narrowest > 0 ? Math.floor(narrowest * MAX_ASPECT) : PLOT_MAX);
  return Math.max(PLOT_MIN, Math.min(most, even));
}
