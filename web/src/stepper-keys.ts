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
const PRESSABLE = "button, a[href], summary, [role=tab], [role=button], [tabindex]";

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
    if (!action) return;
    ev.preventDefault();
    action();
  });
}

function ready(ev: KeyboardEvent, target: StepKeyTarget): boolean {
  return target.shown() && !isTyping(ev) && !ev.altKey && !ev.ctrlKey && !ev.metaKey;
}
