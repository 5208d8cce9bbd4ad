// The WAI-ARIA tabs pattern (https://www.w3.org/WAI/ARIA/apg/patterns/tabs/): a tab list is one
// stop in the Tab order, the selected tab's; Left and Right move to the tab before or after
// it (wrapping), Home and End to the first and last, and a tab moved to is opened at once.

/** When the page last saw a key pressed and a pointer pressed (performance.now()). */
let lastKey = 0;
let lastPointer = 0;
let watching = false;
/** Set while {@link showView} moves the focus onto a tab itself. */
let handedOver = false;

function watchInput(): void {
  if (watching) return;
  watching = true;
  document.addEventListener("keydown", () => (lastKey = performance.now()), true);
  document.addEventListener("pointerdown", () => (lastPointer = performance.now()), true);
}

/** The tabs of `list` a user can reach: those not hidden. */
function tabsOf(list: HTMLElement): HTMLElement[] {
  return [...list.querySelectorAll<HTMLElement>("[role=tab]")].filter((t) => !t.hidden);
}

/**
 * Mark the selected tab (`aria-selected`) and give it alone `tabindex=0`; the others are
 * reached with the arrow keys (`tabindex=-1`). With none selected the first is the stop.
 */
export function selectTab(tabs: Iterable<HTMLElement>, isSelected: (tab: HTMLElement) => boolean): void {
  const all = [...tabs];
  const chosen = all.find((t) => isSelected(t) && !t.hidden) ?? all.find((t) => !t.hidden) ?? null;
  for (const t of all) {
    t.setAttribute("aria-selected", String(isSelected(t)));
    t.tabIndex = t === chosen ? 0 : -1;
  }
}

/**
 * Select the tab of `tabs` whose `data-view` is `view` and show its panel alone (of `panels`,
 * by their `data-panel`). Where the focus was on a control this hid (1–4 pressed in the old
 * view, Enter on a chart's step), it moves to the selected tab rather than being lost to the page.
 */
export function showView(tabs: readonly HTMLElement[], panels: Iterable<HTMLElement>, view: string): void {
  selectTab(tabs, (tab) => tab.dataset.view === view);
  for (const panel of panels) panel.hidden = panel.dataset.panel !== view;
  const focused = document.activeElement;
  if (!(focused instanceof HTMLElement) || focused === document.body || focused.checkVisibility()) return;
  // as after a click, the arrow keys stay the page's: 2, then → steps the walk
  handedOver = true;
  tabs.find((t) => t.getAttribute("aria-selected") === "true")?.focus();
  handedOver = false;
}

/**
 * Left/Right/Home/End on a tab of `list` focus another tab and `activate` it. The key goes no
 * further, so the page's own arrow keys (the stepper's Prev/Next) do not also act on it.
 *
 * A tab clicked with the mouse keeps the focus too, and a mouse user's next arrow key is
 * meant for the page (click Backward, then → steps the walk, as the ? dialog says): the tab
 * row takes the arrow keys while its focus came from the keyboard (Tab, or an arrow key).
 */
export function bindTabKeys(list: HTMLElement, activate: (tab: HTMLElement) => void): void {
  watchInput();
  let byKeyboard = false;
  list.addEventListener("focusin", () => {
    byKeyboard = !handedOver && lastKey >= lastPointer;
  });
  list.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" || ev.key === " ") byKeyboard = true; // a tab opened from the keyboard
    if (!byKeyboard || ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    const tabs = tabsOf(list);
    const i = tabs.indexOf(ev.target as HTMLElement);
    if (i < 0 || !tabs.length) return;
    const n = tabs.length;
    const to: Record<string, number> = { ArrowRight: (i + 1) % n, ArrowLeft: (i - 1 + n) % n, Home: 0, End: n - 1 };
    if (!(ev.key in to)) return;
    ev.preventDefault();
    ev.stopPropagation();
    const next = tabs[to[ev.key]];
    next.focus();
    activate(next);
    // the list may have been drawn anew (the stepper's calls): keep the focus on the tab opened
    if (!list.contains(document.activeElement)) {
      const again = tabsOf(list).find((t) => t.getAttribute("aria-selected") === "true");
      again?.focus();
    }
  });
}
