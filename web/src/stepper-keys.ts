// The keys that walk the backward stepper: ← → (a step), Home End, P (play), and a
// presentation clicker's keys: PageDown and PageUp (what most clickers send for next and
// back), Space and Shift+Space. Before, a teacher's clicker did nothing in the walk.
import { isTyping } from "./dom";

/** What the keys act on (the stepper). */
export interface StepKeyTarget {
  /** Whether the walk is shown (the Backward tab): the keys act only then. */
  shown(): boolean;
  /** Move by `by` steps (clamped by the target). */
  stepBy(by: number): void;
  first(): void;
  last(): void;
  togglePlay(): void;
}

/** What a keyboard user presses with Space: left to it when the focus came by Tab. */
const PRESSABLE = "button, a[href], summary, [role=tab], [role=button], [tabindex], input:not([type=range])";

/** The keys that scroll a region reached by Tab (the output, a lesson's text) rather than step. */
const SCROLL_KEYS = new Set(["PageDown", "PageUp", "Home", "End"]);

/** When the Tab key and a pointer were last pressed (performance.now()). */
let tabbedAt = -1;
let pointedAt = 0;

/**
 * Bind the walk's keys on the document. Space steps unless the focus is on a control the
 * user reached with the Tab key (a keyboard user presses the focused button with it); a
 * button clicked with the mouse keeps the focus, and the clicker's Space then still steps,
 * rather than pressing that button again. Space is taken before the page's other handlers
 * see it (a tab row would otherwise take the arrow keys after it: tabs.ts).
 */
export function bindStepperKeys(target: StepKeyTarget): void {
  document.addEventListener("pointerdown", () => (pointedAt = performance.now()), true);
  document.addEventListener(
    "keydown",
    (ev) => {
      if (ev.key === "Tab") tabbedAt = performance.now();
      if (ev.key !== " " || !ready(ev, target)) return;
      const focused = ev.target instanceof HTMLElement && ev.target !== document.body ? ev.target : null;
      if (focused?.closest(PRESSABLE) && tabbedAt > pointedAt) return;
      ev.preventDefault();
      ev.stopPropagation();
      target.stepBy(ev.shiftKey ? -1 : 1);
    },
    true,
  );
  document.addEventListener("keydown", (ev) => {
    if (!ready(ev, target)) return;
    const keys: Record<string, () => void> = {
      ArrowRight: () => target.stepBy(1),
      ArrowLeft: () => target.stepBy(-1),
      PageDown: () => target.stepBy(1),
      PageUp: () => target.stepBy(-1),
      Home: () => target.first(),
      End: () => target.last(),
      p: () => target.togglePlay(),
      P: () => target.togglePlay(), // as the ? dialog and the button's title write it (Shift or Caps Lock)
    };
    const action = keys[ev.key];
    if (!action || (SCROLL_KEYS.has(ev.key) && scrollsHere(ev))) return;
    ev.preventDefault();
    action();
  });
}

/**
 * Whether the key's focus is a region that scrolls, reached with the Tab key: its PageDown,
 * Home and End scroll it (it takes the focus for that). One clicked with the mouse leaves
 * them to the walk, so a teacher's clicker still steps after a click in the output.
 */
function scrollsHere(ev: KeyboardEvent): boolean {
  const t = ev.target instanceof HTMLElement ? ev.target : null;
  if (!t || t === document.body || tabbedAt < pointedAt || t.scrollHeight <= t.clientHeight + 1) return false;
  return /auto|scroll/.test(getComputedStyle(t).overflowY); // Chromium lets the Tab key reach a scroller with no tabindex
}

function ready(ev: KeyboardEvent, target: StepKeyTarget): boolean {
  return target.shown() && !isTyping(ev) && !ev.altKey && !ev.ctrlKey && !ev.metaKey;
}
