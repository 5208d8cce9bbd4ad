// A tiny DOM builder. Text always goes in as text (snippet output is untrusted), styles
// go through CSSOM (the page's CSP forbids inline style attributes), and every component
// queries only inside its own root so several views can live on one page.

type Child = Node | string | number | null | undefined | false;
type Attrs = {
  class?: string;
  text?: string;
  title?: string;
  data?: Record<string, string | number>;
  on?: Partial<{ [K in keyof HTMLElementEventMap]: (ev: HTMLElementEventMap[K]) => void }>;
  [attr: string]: unknown;
};

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else if (key === "text") el.textContent = String(value);
    else if (key === "data") {
      for (const [k, v] of Object.entries(value as Record<string, string | number>)) el.dataset[k] = String(v);
    } else if (key === "on") {
      for (const [type, fn] of Object.entries(value as Record<string, EventListener>)) el.addEventListener(type, fn);
    } else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el: Element, children: (Child | Child[])[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(el, child);
    else if (child === null || child === undefined || child === false) continue;
    else el.append(child instanceof Node ? child : String(child));
  }
}

/**
 * While the user drags a divider between panes (pane-splitters.ts), an ancestor of the
 * panes carries `data-resizing`; when the drag ends this event is dispatched on the
 * document. A view that is slow to draw at a new size can wait for it.
 */
export const PANES_RESIZED = "gw-panes-resized";

/**
 * `text` for a narrow column: each word with a `.`, `(` or `_` in it (`net.fc1.weight,`,
 * `multi_head_attention_forward`) is kept on one line where it fits, and else wraps at its
 * dots, brackets and underscores (an inline block with
 * `<wbr>`s, class `gw-breakable`), where `overflow-wrap: anywhere` cut it mid-name
 * (`net.fc1.weigh` / `t`).
 */
export function breakAtDots(text: string): Child[] {
  return text.split(/(\s+)/).map((word) => {
    if (!/[.(_]./.test(word)) return word;
    // `net.fc1(…)` keeps its `(…)`; a snake_case name wraps after an underscore
    const parts = word.split(/(?<=\.)|(?<=\()(?!…)|(?<=[a-z0-9]_)(?=[a-z0-9])/);
    return h("span", { class: "gw-breakable" }, parts.flatMap((part, i) => (i ? [document.createElement("wbr"), part] : [part])));
  });
}

/** Replace an element's children. */
export function fill(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el, children);
}

/** The one element matching `selector` inside `root` (throws when the template lacks it). */
export function $<T extends Element = HTMLElement>(root: ParentNode, selector: string): T {
  const el = root.querySelector<T & Element>(selector);
  if (!el) throw new Error(`gradwalk: missing ${selector}`);
  return el;
}

/** Say whether a key event should be left to the focused control (typing, sliders, menus)
 * or to an open dialog (the page's keys must not act behind it). */
export function isTyping(ev: KeyboardEvent): boolean {
  const t = ev.target as HTMLElement | null;
  if (!t) return false;
  if (t.closest("dialog[open]")) return true;
  // The editor sits in a shadow root: its key events reach the document from the host.
  if (t.isContentEditable || t.closest(".cm-editor, [data-gw=editor]")) return true;
  const tag = t.tagName;
  if (tag === "INPUT") {
    const type = (t as HTMLInputElement).type;
    // a slider moves with these keys itself; 1–4 and ? still open the tabs and the keys' help
    if (type === "range") return SLIDER_KEYS.has(ev.key);
    // a checkbox or a button takes no typing: the page's keys act (Space still presses it: stepper-keys.ts)
    return !PRESSED_INPUTS.has(type);
  }
  return tag === "TEXTAREA" || tag === "SELECT";
}

const SLIDER_KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);
const PRESSED_INPUTS = new Set(["checkbox", "radio", "button", "submit", "reset", "color", "file"]);

/** Call `fn` at most once per animation frame, with the latest arguments. */
export function perFrame(fn: () => void): () => void {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fn();
    });
  };
}

/**
 * How far to move the span `lo`..`hi` so that it lies within `start`..`end`, the least
 * distance (0 when it does); a span longer than the window keeps its start in view.
 */
export function leastShift(lo: number, hi: number, start: number, end: number): number {
  return lo < start ? start - lo : hi > end ? Math.max(end - hi, start - lo) : 0;
}

/**
 * Scroll `scroller`, and nothing else, the least that shows `target` whole along `axis`: an
 * element, or rows `top`..`bottom` in screen coordinates. `el.scrollIntoView()` also scrolls
 * every scrollable ancestor, the page included: on a phone, where the page scrolls, each step
 * of the walk jumped the page to the code's current line.
 */
export function revealWithin(
  scroller: HTMLElement,
  target: HTMLElement | { top: number; bottom: number },
  axis: "x" | "y" = "y",
): void {
  const s = scroller.getBoundingClientRect();
  if (axis === "x") {
    const r = (target as HTMLElement).getBoundingClientRect();
    const left = s.left + scroller.clientLeft;
    scroller.scrollLeft -= leastShift(r.left, r.right, left, left + scroller.clientWidth);
    return;
  }
  const r = target instanceof HTMLElement ? target.getBoundingClientRect() : target;
  const top = s.top + scroller.clientTop;
  scroller.scrollTop -= leastShift(r.top, r.bottom, top, top + scroller.clientHeight);
}

/**
 * Keep `scroller.dataset.cut` saying which of its edges cut content off ("above", "below",
 * both, or ""), as it scrolls and as it or its content changes size: the CSS fades that edge,
 * so text cut mid-line reads as more to scroll to. The step card cut at its bottom, right
 * above the walk's list cut at its top, ran two half lines of text together.
 */
export function markCut(scroller: HTMLElement): void {
  const update = perFrame(() => {
    const above = scroller.scrollTop > 1;
    const below = scroller.scrollHeight - scroller.clientHeight - scroller.scrollTop > 1;
    const cut = [above ? "above" : "", below ? "below" : ""].filter(Boolean).join(" ");
    if (scroller.dataset.cut !== cut) scroller.dataset.cut = cut;
  });
  scroller.addEventListener("scroll", update, { passive: true });
  if (typeof ResizeObserver !== "undefined") {
    const observer = new ResizeObserver(update);
    observer.observe(scroller);
    for (const child of scroller.children) observer.observe(child);
  }
  if (typeof MutationObserver !== "undefined") new MutationObserver(update).observe(scroller, { childList: true, subtree: true, characterData: true });
  update();
}

/** A count short enough for a tab's badge: 999, 1.2k, 12k, 120k. */
export function compactCount(n: number): string {
  if (n < 1000) return String(n);
  if (n < 9950) return `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
  return `${Math.round(n / 1000)}k`;
}

/** What a tab's badge counts: its words for one and for more ("step", "steps"). */
export type Counted = readonly [one: string, many: string];

/**
 * Show `n` (none when 0) in `tab`'s badge (its data-count, drawn by the tabs' CSS), and say
 * what it counts: the tab's name becomes its text, the badge and `what` ("Backward 5 steps":
 * the name begins with what is seen, for voice control), its tooltip adds the exact count.
 */
export function setTabCount(tab: HTMLElement | undefined, n: number, what: Counted): void {
  if (!tab) return;
  tab.dataset.count = n ? compactCount(n) : "";
  tab.dataset.plainTitle ??= tab.title;
  const plain = tab.dataset.plainTitle;
  if (!n) {
    tab.removeAttribute("aria-label");
    tab.title = plain;
    return;
  }
  const words = n === 1 ? what[0] : what[1];
  tab.setAttribute("aria-label", `${tab.textContent?.trim() ?? ""} ${compactCount(n)} ${words}`);
  const counted = `${n.toLocaleString("en-US")} ${words}`;
  tab.title = plain ? `${plain} · ${counted}` : counted;
}

/** Whether the user asked for less motion (`prefers-reduced-motion: reduce`): the graph then
 * jumps where it would glide, pan or zoom. Read at each use, so a change applies at once. */
export function reducedMotion(): boolean {
  return typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
}
