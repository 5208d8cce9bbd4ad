// The keyboard's way into a steps chart: its plot is a slider over the steps, so a reader
// without a mouse can read each step and open it (charts.ts binds it to every steps chart).
import type uPlot from "uplot";
import { type Chart, ownCount } from "./chart-card";

/**
 * Make the plot of steps chart `chart` a slider over its steps for the keyboard: Tab reaches
 * it, ← → (Shift: ten at a time), Home and End move the hover line and its readout from step
 * to step, Enter calls `open` with the row under the cursor, as a click does (a step's walk,
 * or "Record step N in full"). The keys stop there, so the stepper's ← → and the tabs'
 * digits do not also act.
 */
export function bindStepKeys(chart: Chart, u: uPlot, open: (idx: number) => void): void {
  const over = u.over;
  const xs = () => u.data[0];
  const at = () => {
    const idx = u.cursor.idx;
    return idx === null || idx === undefined || idx < 0 ? xs().length - 1 : idx;
  };
  over.tabIndex = 0;
  over.setAttribute("role", "slider");
  over.setAttribute("aria-label", `${chart.table.title}: step (arrow keys move, Enter opens)`);
  const announce = (idx: number) => {
    over.setAttribute("aria-valuemin", String(xs()[0] ?? 0));
    over.setAttribute("aria-valuemax", String(xs()[xs().length - 1] ?? 0));
    over.setAttribute("aria-valuenow", String(xs()[idx] ?? 0));
    over.setAttribute("aria-valuetext", chart.readout.textContent ?? "");
  };
  const moveTo = (idx: number) => {
    const i = Math.max(0, Math.min(xs().length - 1, idx));
    const own = ownCount(chart);
    let top = u.bbox.height / devicePixelRatio / 2;
    for (let si = 1; si <= own; si++) {
      const v = u.data[si][i];
      if (u.series[si].show && v !== null && v !== undefined) {
        top = u.valToPos(v, "y");
        break;
      }
    }
    // at the step's own position, published to every synced chart as a mouse's move is. Not
    // a made-up mousemove: its position is a whole pixel, and where the steps are denser than
    // the pixels it landed on a neighbour (End read step 399 of 400, ← moved two steps).
    moveCursor(u, { left: u.valToPos(xs()[i], "x"), top });
    announce(i);
  };
  announce(at());
  // from the keyboard only: a click focuses the plot mid-press, where a cursor moved by
  // code would drag out a selection from the press and zoom the chart to it
  over.addEventListener("focus", () => {
    if (over.matches(":focus-visible")) moveTo(at());
  });
  over.addEventListener("keydown", (ev) => {
    const by = ev.shiftKey ? 10 : 1;
    const moves: Record<string, () => number> = {
      ArrowLeft: () => at() - by,
      ArrowDown: () => at() - by,
      ArrowRight: () => at() + by,
      ArrowUp: () => at() + by,
      Home: () => 0,
      End: () => xs().length - 1,
    };
    if (ev.key in moves) moveTo(moves[ev.key]());
    else if (ev.key === "Enter" || ev.key === " ") open(at());
    else return;
    ev.preventDefault();
    ev.stopPropagation();
  });
}

/**
 * uPlot's `setCursor` with its third argument, which its types leave out: `true` publishes
 * the move to the charts synced with `u`, as a mouse's move over it does (the hooks fire too).
 */
function moveCursor(u: uPlot, at: { left: number; top: number }): void {
  (u.setCursor as (opts: { left: number; top: number }, fireHook: boolean, publish: boolean) => void)(at, true, true);
}
