// The keyboard shortcuts, listed in a dialog that the header's ? button and the ? key open.
import { h } from "./dom";

/** One group of keys: where they work, and what each does. */
export interface ShortcutGroup {
  where: string;
  keys: readonly (readonly [keys: string, does: string])[];
}

/**
 * Every shortcut the app has, by where it works. The handlers live with what they drive
 * (app.ts: the tabs and ?; editor.ts: run; stepper.ts; graph-keys.ts; chart-keys.ts;
 * pane-splitters.ts; room.ts: follow): a key added there belongs here too.
 */
export const SHORTCUTS: readonly ShortcutGroup[] = [
  {
    where: "Anywhere outside the code",
    keys: [
      ["1 2 3 4", "open Tape, Backward, Inspect or Charts"],
      ["?", "show these keys"],
    ],
  },
  {
    where: "In the code",
    keys: [
      ["Ctrl+Enter", "run the code (⌘+Enter on a Mac)"],
      ["Tab", "indent the line"],
      ["Esc, then Tab", "leave the code for the next control"],
    ],
  },
  {
    where: "Backward tab",
    keys: [
      ["← →", "previous or next step"],
      ["PageUp PageDown", "previous or next step (a presentation clicker's keys)"],
      ["Space, Shift+Space", "next or previous step"],
      ["Home End", "first or last step"],
      ["P", "play or pause the walk"],
    ],
  },
  {
    where: "The graph (Tab to it)",
    keys: [
      ["Arrow keys", "move between the nodes as drawn"],
      ["Enter", "what a click does: inspect the node (Backward: go to its step)"],
      ["Esc", "clear the selection"],
      ["+ −", "zoom in or out"],
      ["0", "fit the graph to the pane"],
    ],
  },
  {
    where: "A chart's plot (Tab to it)",
    keys: [
      ["← →", "the step before or after; Shift: ten steps"],
      ["Home End", "the first or last step"],
      ["Enter", "what a click does on that step"],
    ],
  },
  {
    where: "A divider between panes (Tab to it)",
    keys: [
      ["← → (↑ ↓)", "make the panes beside it wider or narrower; Shift: bigger steps"],
      ["Home End", "as far as it goes"],
      ["Enter", "back to the default sizes"],
    ],
  },
  {
    where: "Following a classroom",
    keys: [["F", "follow the presenter again"]],
  },
];

/** The dialog listing {@link SHORTCUTS}; append it to the page with `root`. */
export class ShortcutsDialog {
  readonly dialog: HTMLDialogElement;

  constructor(root: HTMLElement) {
    const close = h("button", { type: "button", class: "gw-btn", "aria-label": "Close", text: "✕", on: { click: () => this.dialog.close() } });
    this.dialog = h(
      "dialog",
      { class: "gw-dialog gw-shortcuts-dialog", "aria-labelledby": "gw-shortcuts-title", data: { gw: "shortcuts-dialog" } },
      h("div", { class: "gw-dialog-head" }, h("h2", { id: "gw-shortcuts-title", text: "Keyboard shortcuts" }), close),
      h(
        "div",
        { class: "gw-shortcuts" },
        SHORTCUTS.map((group) =>
          h(
            "table",
            { class: "gw-shortcut-group" },
            h("caption", { text: group.where }),
            h(
              "tbody",
              {},
              group.keys.map(([keys, does]) => h("tr", {}, h("th", { scope: "row" }, h("kbd", { text: keys })), h("td", { text: does }))),
            ),
          ),
        ),
      ),
    );
    this.dialog.addEventListener("click", (ev) => {
      if (ev.target === this.dialog) this.dialog.close(); // a click on the backdrop
    });
    root.append(this.dialog);
  }

  open(): void {
    if (!this.dialog.open) this.dialog.showModal();
  }
}
