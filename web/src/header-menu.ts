// The header's "More" menu. Where the header's tools (opening a trace, sharing, theme,
// presenter type) do not fit on its row beside the run controls and Classroom, CSS hides
// them behind a "More" button: below 760 px (they took four rows above the code), at
// presenter size, and wherever else they would wrap onto a second row (1024 to ~1400 px at
// normal size: a projector's, a laptop's width), which this module measures
// (`data-crowded`); Classroom stays in the row unless even it does not fit. This module
// also wires the button. Elsewhere the button is not shown and the tools sit in the
// header, whatever the menu's state.

/** Below this width the phone layout (CSS) hides the tools whatever they measure. */
const PHONE_MAX = 759;
/** Room a crowded header needs to spare before its tools come back out. */
const SLACK = 8;

function widthOf(el: Element | null): number {
  return el instanceof HTMLElement && el.offsetParent !== null ? el.getBoundingClientRect().width : 0;
}

/** Whether `need` px overflow `room`, with slack once `was` so (no flipping on a sub-pixel). */
function over(need: number, room: number, was: boolean): boolean {
  return was ? need + SLACK > room : need > room;
}

/** The examples list's width at normal type (layout.css); in presenter type it stretches. */
const EXAMPLES_WIDTH = 230;

/**
 * The width the run controls need: in presenter type they stretch over the row's room (the
 * examples list takes it for a long title), so their parts are added up instead, the
 * examples list at its normal width; measured so, presenter type at 1024 px puts
 * Classroom under "More" for the list's sake.
 */
function runControlsWidth(header: HTMLElement): number {
  const controls = header.querySelector<HTMLElement>(".gw-run-controls");
  if (!controls || document.documentElement.dataset.presenter !== "on") return widthOf(controls);
  const parts = [...controls.children].filter((el) => widthOf(el) > 0);
  const gap = parseFloat(getComputedStyle(controls).columnGap) || 0;
  const examples = controls.querySelector("[data-gw=examples]")?.closest(".gw-field");
  return parts.reduce((sum, el) => sum + (el === examples ? EXAMPLES_WIDTH : widthOf(el)), 0) + gap * Math.max(0, parts.length - 1);
}

/**
 * Mark `header` crowded when its brand, run controls, Classroom and tools would not fit on
 * one row; and where even Classroom does not fit beside "More" (presenter type at 1024 px),
 * move it into the tools, under "More", until there is room again. Widths are measured
 * while an element shows and kept while it is hidden behind "More" (a hidden element
 * measures 0), so the header opens up again once there is room.
 */
function watchCrowding(header: HTMLElement, tools: HTMLElement): void {
  const classroom = header.querySelector<HTMLElement>(".gw-classroom");
  const more = header.querySelector<HTMLElement>(".gw-more");
  let toolsWidth = 0;
  let classroomWidth = 0;
  const fit = () => {
    const phone = window.innerWidth <= PHONE_MAX;
    const style = getComputedStyle(header);
    const gap = parseFloat(style.columnGap) || 0;
    const room = header.clientWidth - (parseFloat(style.paddingLeft) || 0) - (parseFloat(style.paddingRight) || 0);
    const row = widthOf(header.querySelector(".gw-brand")) + runControlsWidth(header) + 3 * gap;
    classroomWidth = widthOf(classroom) || classroomWidth;
    const shown = [...tools.children].filter((el) => el !== classroom && widthOf(el) > 0);
    const toolsGap = parseFloat(getComputedStyle(tools).columnGap) || 0;
    if (shown.length) toolsWidth = shown.reduce((sum, el) => sum + widthOf(el), 0) + toolsGap * (shown.length - 1);
    const crowded = !phone && over(row + classroomWidth + toolsWidth, room, header.dataset.crowded !== undefined);
    if (crowded) header.dataset.crowded = "";
    else delete header.dataset.crowded;
    if (!classroom || !more) return;
    const squeezed = classroom.parentElement === tools;
    const moreShown = widthOf(more) > 0; // crowded, presenter type or a phone (CSS)
    if (!phone && moreShown && over(row + classroomWidth + widthOf(more), room, squeezed)) {
      if (!squeezed) tools.prepend(classroom);
    } else if (squeezed) {
      header.insertBefore(classroom, more);
    }
  };
  // the run controls change width with the run's status, the tools with the theme's label
  const watch = new ResizeObserver(fit);
  for (const el of [header, tools, header.querySelector(".gw-run-controls")]) if (el) watch.observe(el);
  void document.fonts?.ready.then(fit);
  fit();
}

/** Toggle the header's tools with the "More" button; Escape or a chosen tool closes them. */
export function bindHeaderMenu(header: HTMLElement | null): void {
  const button = header?.querySelector<HTMLButtonElement>("[data-gw=more]");
  const tools = header?.querySelector<HTMLElement>(".gw-header-tools");
  if (!header || !button || !tools) return;
  const set = (open: boolean) => {
    header.dataset.tools = open ? "open" : "closed";
    button.setAttribute("aria-expanded", String(open));
  };
  set(false);
  watchCrowding(header, tools);
  button.addEventListener("click", () => set(button.getAttribute("aria-expanded") !== "true"));
  tools.addEventListener("click", (ev) => {
    // a button or link did its work (a dialog opens, a link is copied): the menu's job is done;
    // a room's "Open trace…" is a label for a file input, closed once a file is picked (below)
    if ((ev.target as Element).closest("button, a")) set(false);
  });
  // First, before the tool acts: the focus goes back to More as the tool hides with the menu,
  // so a dialog it opens (the keys' help) hands the focus back there, not to the page
  tools.addEventListener("click", (ev) => (ev.target as Element).closest("button, a") && button.getAttribute("aria-expanded") === "true" && button.focus(), true);
  tools.addEventListener("change", () => set(false));
  header.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || button.getAttribute("aria-expanded") !== "true") return;
    set(false);
    button.focus();
  });
}
