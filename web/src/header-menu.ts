// The header's "More" menu. Below 760 px the header's tools (Classroom, sharing, theme,
// presenter) would take four rows above the code, and at presenter size a second row
// above the graph, so there CSS hides them behind a "More" button; this wires that button.
// Elsewhere the button is not shown and the tools sit in the header, whatever the menu's state.

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
  button.addEventListener("click", () => set(button.getAttribute("aria-expanded") !== "true"));
  tools.addEventListener("click", (ev) => {
    // a button or link did its work (a dialog opens, a link is copied): the menu's job is done;
    // "Open trace…" is a label for a file input, closed once a file is picked (below)
    if ((ev.target as Element).closest("button, a")) set(false);
  });
  tools.addEventListener("change", () => set(false));
  header.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || button.getAttribute("aria-expanded") !== "true") return;
    set(false);
    button.focus();
  });
}
