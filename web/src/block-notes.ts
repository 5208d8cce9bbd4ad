// The look shared by the notes CodeMirror draws under a line of code (editor.ts's errors,
// pitfalls.ts's pitfalls), kept apart so that the viewer, which shows pitfalls but has no
// editor, does not bundle the editor for it.

/**
 * The frame of a note drawn under a line (an error in editor.ts, a pitfall in pitfalls.ts): a 3 px
 * stripe of `stripe` on its left, `padY` px of padding above and below its text.
 *
 * NOTE [No margins on block widgets]: CodeMirror measures a block widget by its border box,
 * so a margin made every line below it sit lower than CodeMirror believed and a line
 * scrolled into view came out 6 px short. The gap is transparent border instead (the
 * background kept off it) and the stripe an inset shadow.
 */
export function blockNoteFrame(stripe: string, padY: number): Record<string, string> {
  return {
    boxShadow: `inset 3px 0 0 ${stripe}`,
    borderTop: "2px solid transparent",
    borderBottom: "4px solid transparent",
    backgroundClip: "padding-box",
    padding: `${padY}px 10px ${padY}px 13px`,
  };
}
