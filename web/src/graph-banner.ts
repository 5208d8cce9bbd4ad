// The note under the graph at a backward call's end ("Graph freed …"). Where it must keep to
// one line (a phone, a short screen: graph.css) it is cut with an ellipsis, and a tap on it
// (or its ▾ button) shows it whole.
import { h } from "./dom";

export class GraphBanner {
  readonly element: HTMLElement;
  private readonly text: HTMLElement;
  private readonly toggle: HTMLButtonElement;

  constructor() {
    this.text = h("span", { class: "gw-graph-banner-text", role: "status" });
    this.toggle = h("button", { type: "button", class: "gw-graph-banner-toggle", "aria-expanded": "false", "aria-label": "Show the whole note", title: "Show the whole note", text: "▾" });
    this.element = h("div", { class: "gw-graph-banner", hidden: true }, this.text, this.toggle);
    this.element.addEventListener("click", () => this.open(!this.element.classList.contains("gw-graph-banner-open")));
  }

  /** Say `text` (an empty one hides the note); a new text starts folded. */
  show(text: string): void {
    if (this.text.textContent !== text) {
      this.text.textContent = text;
      this.element.title = text; // where a short pane cuts it to one line
      this.open(false);
    }
    this.element.hidden = !text;
  }

  /** Show the note whole (`open`) or, where it keeps to one line, cut. */
  private open(open: boolean): void {
    this.element.classList.toggle("gw-graph-banner-open", open);
    this.toggle.setAttribute("aria-expanded", String(open));
    this.toggle.textContent = open ? "▴" : "▾";
    const label = open ? "Show the note on one line" : "Show the whole note";
    this.toggle.setAttribute("aria-label", label);
    this.toggle.title = label;
  }
}
