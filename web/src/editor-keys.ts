// The code editor's sign that the keyboard has arrived in it. Reached with Tab, the editor is
// ringed as every other control is, and a line at its foot says what Tab does here (it
// indents) and how to move on (Escape, then Tab). CodeMirror's own focus outline is off
// (editor.ts): a keyboard user tabbing in saw only a caret at the start of line 1, and their
// next Tab indented it. A click in the code shows neither (the caret is where they clicked).
import { type Extension, StateEffect, StateField } from "@codemirror/state";
import { EditorView, type Panel, showPanel } from "@codemirror/view";

/** What the line at the editor's foot says while the keyboard is in it. */
export const EDITOR_KEYS_TEXT = "Tab indents · Esc, then Tab to leave · Ctrl+Enter runs";

const setShown = StateEffect.define<boolean>();

// Whether the focus is moving by the keyboard: the last thing pressed was Tab, not a pointer.
let tabbing = false;
let watching = false;

function watchHowFocusMoves(): void {
  if (watching) return;
  watching = true;
  document.addEventListener("keydown", (ev) => (tabbing = ev.key === "Tab"), true);
  document.addEventListener("pointerdown", () => (tabbing = false), true);
}

function keysPanel(): Panel {
  const dom = document.createElement("div");
  dom.className = "cm-gw-keys";
  dom.textContent = EDITOR_KEYS_TEXT;
  return { dom };
}

const shown = StateField.define<boolean>({
  create: () => false,
  update(value, tr) {
    for (const e of tr.effects) if (e.is(setShown)) value = e.value;
    return value;
  },
  provide: (field) => showPanel.from(field, (on) => (on ? keysPanel : null)),
});

/** The ring and the line of keys, shown while the editor has a focus that came by Tab. */
export function keyboardFocusSign(): Extension {
  watchHowFocusMoves();
  return [
    shown,
    EditorView.focusChangeEffect.of((state, focusing) => {
      const want = focusing && tabbing;
      return want === state.field(shown) ? null : setShown.of(want);
    }),
    EditorView.domEventHandlers({
      mousedown(_ev, view) {
        if (view.state.field(shown)) view.dispatch({ effects: setShown.of(false) });
        return false;
      },
    }),
    EditorView.theme({
      // a ring drawn over the editor's edge, above its gutter (z-index 200) and panel: an
      // outline of the editor itself was hidden under them on two of its four sides
      "&.cm-focused:has(.cm-gw-keys)::after": {
        content: '""',
        position: "absolute",
        inset: "0",
        border: "3px solid var(--focus)",
        pointerEvents: "none",
        zIndex: "300",
      },
      ".cm-panels.cm-panels-bottom": { borderTop: "1px solid var(--border)", backgroundColor: "var(--panel-2)", color: "var(--fg)" },
      ".cm-gw-keys": { padding: "3px 10px", fontFamily: "var(--sans)", fontSize: "0.8rem" },
    }),
  ];
}
