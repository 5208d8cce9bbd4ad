// The snippet's source, read-only, for pages without the editor (embeds, exports,
// notebooks): numbered lines lit up with what is hovered elsewhere, the line of the
// current backward step or tape op marked, and hovering a line lights up its ops and nodes.
import { h, revealWithin } from "./dom";
import { currentLine, linksOfLine, type Store, type ViewState } from "./store";
import type { TraceModel } from "./trace-model";

const KEYWORDS = new Set(
  "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield".split(" "),
);

// Comments, strings (triple-quoted first), numbers, names: enough to read a snippet.
const TOKEN = /(#.*$)|("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')|(\b\d[\d_]*\.?\d*(?:e[+-]?\d+)?j?\b)|([A-Za-z_]\w*)/gm;

/** Split one line of Python into spans with a syntax class (text only, never HTML). */
export function highlight(line: string): HTMLElement[] {
  const out: HTMLElement[] = [];
  let last = 0;
  for (const m of line.matchAll(TOKEN)) {
    const at = m.index ?? 0;
    if (at > last) out.push(h("span", { text: line.slice(last, at) }));
    const [text, comment, str, number, name] = m;
    let cls = "";
    if (comment) cls = "gw-syn-comment";
    else if (str) cls = "gw-syn-string";
    else if (number) cls = "gw-syn-number";
    else if (name && KEYWORDS.has(name)) cls = "gw-syn-keyword";
    else if (name && line.slice(at + text.length).startsWith("(")) cls = "gw-syn-function";
    out.push(h("span", { class: cls || undefined, text }));
    last = at + text.length;
  }
  if (last < line.length) out.push(h("span", { text: line.slice(last) }));
  return out;
}

export class CodeView {
  private readonly list: HTMLOListElement;
  private lines: HTMLElement[] = [];
  private lit: HTMLElement[] = [];
  private current: HTMLElement | null = null;
  private readonly scroller: HTMLElement;

  constructor(
    readonly root: HTMLElement,
    private model: TraceModel,
    private readonly store: Store,
  ) {
    root.classList.add("gw-code-view");
    this.list = h("ol", { class: "gw-code", "aria-label": "The snippet's code" });
    // focusable, so the arrow keys scroll a listing longer than the pane (its lines are text)
    this.scroller = h("div", { class: "gw-scroll gw-code-scroll", tabindex: 0, role: "region", "aria-label": "Code" }, this.list);
    root.append(this.scroller);
    store.subscribe((state, changed) => {
      if (changed.has("hover")) this.applyHover(state);
      if (changed.has("view") || changed.has("step") || changed.has("op")) this.applyCurrent(state);
    });
    this.setModel(model);
  }

  setModel(model: TraceModel): void {
    this.model = model;
    const source = model.source || model.run?.source || "";
    this.lines = source
      .replace(/\n$/, "")
      .split("\n")
      .map((text, i) => {
        const line = i + 1;
        const li = h("li", { class: "gw-code-line", data: { line } }, h("span", { class: "gw-code-n", "aria-hidden": "true", text: String(line) }), h("code", {}, highlight(text)));
        li.addEventListener("mouseenter", () => this.store.set({ hover: linksOfLine(this.model, line) }));
        li.addEventListener("mouseleave", () => this.store.set({ hover: null }));
        return li;
      });
    this.list.replaceChildren(...this.lines);
    this.lit = [];
    this.current = null;
    this.applyCurrent(this.store.state);
  }

  private applyHover(state: ViewState): void {
    for (const el of this.lit) el.classList.remove("linked");
    this.lit = (state.hover?.lines ?? []).map((n) => this.lines[n - 1]).filter((el): el is HTMLElement => !!el);
    for (const el of this.lit) el.classList.add("linked");
  }

  private applyCurrent(state: ViewState): void {
    const line = currentLine(this.model, state);
    const el = line ? (this.lines[line - 1] ?? null) : null;
    if (el === this.current) return;
    this.current?.classList.remove("current");
    this.current = el;
    if (el) {
      el.classList.add("current");
      revealWithin(this.scroller, el);
    }
  }
}
