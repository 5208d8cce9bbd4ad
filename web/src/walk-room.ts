// Whether the backward walk's list has room to be read under the step card. In a short
// frame (an embed 560 px high or less, styles/viewer.css) the list only takes what the
// card leaves: a 900 x 560 course frame left ~200 px blank under a short card (an
// AccumulateGrad's) while the list stayed hidden. Less room than a row clear of the
// faded edges shows no list at all, rather than a cut sliver of one.

/** The least height (px) the list is shown at: the step's row and the faded edges (stepper.ts FADE_PX). */
export const WALK_LEAST_PX = 72;

/**
 * Keep `stepper`'s `data-walk` attribute saying whether `list` (the walk's scroll box) has
 * room: "cramped" below WALK_LEAST_PX (the CSS then hides it), "" otherwise. `roomy` is
 * called when the list gets its room back (to scroll the current step into it).
 */
export function watchWalkRoom(stepper: HTMLElement, list: HTMLElement, roomy: () => void): void {
  if (typeof ResizeObserver === "undefined") return;
  new ResizeObserver(() => {
    const cramped = list.clientHeight < WALK_LEAST_PX;
    const was = stepper.dataset.walk === "cramped";
    stepper.dataset.walk = cramped ? "cramped" : "";
    if (was && !cramped) roomy();
  }).observe(list);
}
