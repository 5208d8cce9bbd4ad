// The code editor: CodeMirror 6 with Python, Ctrl/Cmd+Enter to run, errors shown at their
// line, and lines lit up when a linked op or node is hovered elsewhere.
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { bracketMatching, HighlightStyle, indentOnInput, syntaxHighlighting } from "@codemirror/language";
import { EditorState, type Extension, RangeSetBuilder, StateEffect, StateField, Transaction } from "@codemirror/state";
import {
  Decoration,
  type DecorationSet,
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
  WidgetType,
} from "@codemirror/view";
import { tags as t } from "@lezer/highlight";
import { blockNoteFrame } from "./block-notes";
import { revealWithin } from "./dom";
import { keyboardFocusSign } from "./editor-keys";

export interface LineMark {
  line: number;
  message: string;
  /** A plain-language explanation shown under the message. */
  hint?: string | null;
}

interface Marks {
  errors: LineMark[];
  linked: number[];
  current: number | null;
}

const setMarks = StateEffect.define<Partial<Marks>>();

class ErrorWidget extends WidgetType {
  constructor(readonly line: number, readonly message: string, readonly hint: string | null = null) {
    super();
  }
  eq(other: ErrorWidget): boolean {
    return other.line === this.line && other.message === this.message && other.hint === this.hint;
  }
  toDOM(): HTMLElement {
    const el = document.createElement("div");
    el.className = "cm-gw-error-widget";
    el.dataset.line = String(this.line);
    el.setAttribute("role", "alert");
    el.textContent = `line ${this.line}: ${this.message}`;
    if (this.hint) {
      const hint = document.createElement("div");
      hint.className = "cm-gw-error-hint";
      hint.textContent = this.hint;
      el.append(hint);
    }
    return el;
  }
}

function build(doc: EditorState["doc"], marks: Marks): DecorationSet {
  const byLine = new Map<number, string[]>();
  const add = (line: number, cls: string) => {
    if (line < 1 || line > doc.lines) return;
    const list = byLine.get(line) ?? [];
    list.push(cls);
    byLine.set(line, list);
  };
  for (const e of marks.errors) add(e.line, "cm-gw-error-line");
  for (const l of marks.linked) add(l, "cm-gw-linked");
  if (marks.current !== null) add(marks.current, "cm-gw-current");
  const builder = new RangeSetBuilder<Decoration>();
  for (const line of [...byLine.keys()].sort((a, b) => a - b)) {
    const info = doc.line(line);
    builder.add(info.from, info.from, Decoration.line({ class: byLine.get(line)!.join(" "), attributes: { "data-line": String(line) } }));
    const errors = marks.errors.filter((e) => e.line === line);
    for (const e of errors) {
      builder.add(info.to, info.to, Decoration.widget({ widget: new ErrorWidget(line, e.message, e.hint ?? null), block: true, side: 1 }));
    }
  }
  return builder.finish();
}

const marksField = StateField.define<{ marks: Marks; deco: DecorationSet }>({
  create: (state) => {
    const marks: Marks = { errors: [], linked: [], current: null };
    return { marks, deco: build(state.doc, marks) };
  },
  update(value, tr) {
    let marks = value.marks;
    for (const effect of tr.effects) if (effect.is(setMarks)) marks = { ...marks, ...effect.value };
    // Errors belong to the code that ran: editing the text clears them.
    if (tr.docChanged && marks.errors.length) marks = { ...marks, errors: [] };
    if (marks === value.marks && !tr.docChanged) return value;
    return { marks, deco: build(tr.state.doc, marks) };
  },
  provide: (f) => EditorView.decorations.from(f, (v) => v.deco),
});

const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword, t.operatorKeyword], color: "var(--syn-keyword)" },
  { tag: [t.string, t.special(t.string)], color: "var(--syn-string)" },
  { tag: [t.number, t.bool, t.null], color: "var(--syn-number)" },
  { tag: [t.comment, t.lineComment], color: "var(--syn-comment)", fontStyle: "italic" },
  { tag: [t.function(t.variableName), t.function(t.propertyName)], color: "var(--syn-function)" },
  { tag: [t.definition(t.variableName), t.definition(t.function(t.variableName))], color: "var(--syn-def)" },
  { tag: [t.className, t.definition(t.className)], color: "var(--syn-class)" },
  { tag: [t.self], color: "var(--syn-keyword)" },
  { tag: [t.operator], color: "var(--syn-operator)" },
]);

// NOTE [Editor in a shadow root]
// The page's CSP allows no inline <style>, and CodeMirror mounts its styles with a <style>
// element in a document but with adoptedStyleSheets in a shadow root. So the editor lives
// in a shadow root, and every style it needs (marks included) is in this theme; the page's
// CSS custom properties (colours, fonts, sizes) still inherit into it.
const theme = EditorView.theme({
  "&": { height: "100%", backgroundColor: "var(--editor-bg)", color: "var(--fg)", fontSize: "var(--code-size)" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.55" },
  ".cm-content": { caretColor: "var(--fg)" },
  ".cm-gutters": { backgroundColor: "var(--editor-bg)", color: "var(--muted)", border: "none" },
  ".cm-activeLine": { backgroundColor: "var(--line-active)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--line-active)", color: "var(--fg)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": { backgroundColor: "var(--selection)" },
  "&.cm-focused": { outline: "none" },
  ".cm-gw-linked": { backgroundColor: "var(--link-soft) !important", boxShadow: "inset 3px 0 0 var(--link)" },
  ".cm-gw-current": { backgroundColor: "var(--accent-soft) !important", boxShadow: "inset 3px 0 0 var(--accent)" },
  ".cm-gw-error-line": { backgroundColor: "var(--error-soft) !important", boxShadow: "inset 3px 0 0 var(--error)" },
  ".cm-gw-error-widget": {
    fontFamily: "var(--sans)",
    fontSize: "0.9em",
    color: "var(--error)",
    backgroundColor: "var(--error-soft)",
    ...blockNoteFrame("var(--error)", 4),
    whiteSpace: "pre-wrap",
  },
  ".cm-gw-error-hint": { color: "var(--fg)", marginTop: "3px" },
  "&.cm-focused .cm-cursor": { borderLeftColor: "var(--fg)" },
});

/**
 * Text typed over a selection is put in by CodeMirror, not by the browser: Chrome, typing
 * over a selection across lines (Ctrl+A, then a key), deletes the lines and keeps their
 * look on the new text as an inline `style` attribute, which the page's CSP (style-src
 * 'self') blocks with a console error. A composition (an IME) stays the browser's.
 */
const typeOverSelection = EditorView.domEventHandlers({
  beforeinput(ev, view) {
    if (ev.inputType !== "insertText" || !ev.data || ev.isComposing || view.composing) return false;
    if (view.state.selection.ranges.every((r) => r.empty)) return false;
    ev.preventDefault();
    view.dispatch(view.state.replaceSelection(ev.data), { userEvent: "input.type", scrollIntoView: true });
    return true;
  },
});

export interface EditorOptions {
  doc: string;
  onRun: () => void;
  onHoverLine?: (line: number | null) => void;
  /** The code changed; `byUser` when typed, pasted, deleted or undone (not set by the app). */
  onChange?: (byUser: boolean) => void;
}

export class Editor {
  readonly view: EditorView;
  private hovered: number | null = null;
  private current: number | null = null;
  private linked: number[] = [];
  private errorsKey = "[]";

  constructor(readonly root: HTMLElement, options: EditorOptions) {
    const runKeys = keymap.of([
      {
        key: "Mod-Enter",
        preventDefault: true,
        run: () => {
          options.onRun();
          return true;
        },
      },
    ]);
    const extensions: Extension[] = [
      lineNumbers(),
      highlightActiveLineGutter(),
      highlightActiveLine(),
      history(),
      drawSelection(),
      indentOnInput(),
      bracketMatching(),
      python(),
      syntaxHighlighting(highlight),
      theme,
      marksField,
      typeOverSelection,
      runKeys,
      keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
      keyboardFocusSign(),
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({
        "aria-label": "PyTorch code",
        // Tab indents here: say how to move on (CodeMirror's Escape, then Tab)
        "aria-description": "Ctrl+Enter runs the code. Tab indents; press Escape, then Tab, to move on.",
        spellcheck: "false",
      }),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) options.onChange?.(u.transactions.some((tr) => tr.annotation(Transaction.userEvent) !== undefined));
      }),
    ];
    const shadow = root.shadowRoot ?? root.attachShadow({ mode: "open" });
    const host = document.createElement("div");
    host.className = "gw-editor-inner";
    shadow.append(host);
    host.style.height = "100%";
    this.view = new EditorView({ parent: host, root: shadow, state: EditorState.create({ doc: options.doc, extensions }) });
    // "line 14" (the step card's, the inspector's, the output's) lights its line up here: once
    // its own click has done that, bring the line into view (scrolling the editor, then the
    // page). On a phone the editor sat a screen above the card, and the tap seemed to do nothing.
    root.ownerDocument.addEventListener(
      "click",
      (ev) => {
        if (ev.target instanceof Element && ev.target.closest(".gw-line-link")) window.setTimeout(() => this.revealLinked());
      },
      { capture: true },
    );
    if (options.onHoverLine) {
      const report = options.onHoverLine;
      this.view.contentDOM.addEventListener("mousemove", (ev) => {
        const pos = this.view.posAtCoords({ x: ev.clientX, y: ev.clientY });
        const line = pos === null ? null : this.view.state.doc.lineAt(pos).number;
        if (line !== this.hovered) {
          this.hovered = line;
          report(line);
        }
      });
      this.view.contentDOM.addEventListener("mouseleave", () => {
        this.hovered = null;
        report(null);
      });
    }
  }

  get source(): string {
    return this.view.state.doc.toString();
  }

  set source(text: string) {
    if (text === this.source) return;
    this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: text } });
  }

  /** Change the code on the learner's behalf (a lesson's Try it): an edit as if typed, so the
   * examples list reads "Edited: <lesson>" (set as the app's own, it read "Examples…"), and
   * undone with Ctrl+Z. */
  editAsUser(text: string): void {
    if (text === this.source) return;
    this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: text }, userEvent: "input" });
  }

  /**
   * Mark the lines of a run's errors, each with its message and hint under it. New errors
   * are scrolled into view, the first one's line and message (a short editor, as under a
   * lesson's card at 1024 × 768, showed the snippet's first lines and not the error).
   */
  setErrors(errors: LineMark[]): void {
    const key = JSON.stringify(errors);
    const fresh = key !== this.errorsKey;
    this.errorsKey = key;
    this.view.dispatch({ effects: setMarks.of({ errors }) });
    const first = errors[0];
    if (fresh && first && first.line >= 1 && first.line <= this.view.state.doc.lines) this.revealError(first.line);
  }

  private revealError(line: number): void {
    // once CodeMirror has drawn the message under the line: its height is known then
    this.view.requestMeasure({
      read: () => this.reveal(line, this.view.dom.querySelector<HTMLElement>(`.cm-gw-error-widget[data-line="${line}"]`)),
    });
  }

  /**
   * Scroll the editor's own scroller (CodeMirror's scrollIntoView also scrolls the page) the
   * least that shows `line`, and `below` under it when given; a span taller than the editor
   * keeps the line in view.
   */
  private reveal(line: number, below: HTMLElement | null = null): void {
    // a measure asked for before the code changed (the next lesson's, shorter) finds its line gone
    if (line < 1 || line > this.view.state.doc.lines) return;
    const block = this.view.lineBlockAt(this.view.state.doc.line(line).from);
    const top = this.view.documentTop + block.top;
    const bottom = below ? below.getBoundingClientRect().bottom : top + block.height;
    revealWithin(this.view.scrollDOM, { top, bottom });
  }

  setLinked(lines: number[]): void {
    this.linked = lines;
    this.view.dispatch({ effects: setMarks.of({ linked: lines }) });
  }

  /**
   * Bring the first lit line into view: in the editor's own scroller at once, then on the page
   * (a phone's one column, a short window's) when the line is off the screen there, to the
   * middle of the screen, smoothly unless the reader asked for less motion.
   */
  private revealLinked(): void {
    const line = this.linked[0];
    if (line === undefined || line < 1 || line > this.view.state.doc.lines || !this.view.dom.getClientRects().length) return;
    this.reveal(line);
    this.view.requestMeasure({
      read: () => {
        if (this.linked[0] !== line || line > this.view.state.doc.lines) return;
        const block = this.view.lineBlockAt(this.view.state.doc.line(line).from);
        const top = this.view.documentTop + block.top;
        const bottom = top + block.height;
        const screen = window.visualViewport?.height ?? window.innerHeight;
        if (top >= 0 && bottom <= screen) return;
        const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
        window.scrollBy({ top: (top + bottom) / 2 - screen / 2, behavior: smooth ? "smooth" : "auto" });
      },
    });
  }

  /** Mark the line the current step or op came from, and scroll it into view. */
  setCurrent(line: number | null): void {
    // Stepping through one line's nodes must not cost an editor update (and a reflow) each.
    if (line === this.current) return;
    this.current = line;
    this.view.dispatch({ effects: setMarks.of({ current: line }) });
    if (line === null || line < 1 || line > this.view.state.doc.lines) return;
    this.revealMeasured(line);
  }

  /**
   * Reveal `line` once CodeMirror has measured its lines: until then a wrapped line's height
   * is a guess, and a step on line 21 of custom_function, under three wrapped lines, was
   * scrolled to just below the editor's bottom edge.
   */
  private revealMeasured(line: number): void {
    this.view.requestMeasure({
      read: () => {
        if (this.current === line && line <= this.view.state.doc.lines) this.reveal(line);
      },
    });
  }

  focus(): void {
    this.view.focus();
  }
}
