// Finding a lesson in the gallery: every word typed must appear in a lesson's title, summary,
// text, "try", part or code (any case, any order: `register_hook`, `momentum loss`). The tiles that miss are hidden, a part with none
// left hides its name too, and a status line says how many match (screen readers read it
// out). Enter opens the first lesson found whose title holds every word (the one the status
// line names), else the first found; Escape in a box with words clears them, in an empty box
// it closes the gallery.
import { h } from "./dom";
import type { Lesson } from "./lessons";

/** Whether every word of `query` appears in what `lesson` says or in its code, in any case;
 * an empty query matches every lesson. */
export function lessonMatches(lesson: Lesson, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const said = [lesson.title, lesson.summary, lesson.text, lesson.try_next, lesson.part, lesson.source].join(" ").toLowerCase();
  return words.every((word) => said.includes(word));
}

/** The lesson Enter opens for `query`: the first of `lessons` (in the gallery's order) whose
 * title holds every word, else the first that matches at all ("momentum" opened "Your own
 * numbers on the charts", whose code has a momentum, before "Momentum"). */
export function lessonToOpen(lessons: readonly Lesson[], query: string): Lesson | undefined {
  const found = lessons.filter((lesson) => lessonMatches(lesson, query));
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return found.find((lesson) => words.every((word) => lesson.title.toLowerCase().includes(word))) ?? found[0];
}

export class LessonFilter {
  /** The search box and its status line, for the gallery's head. */
  readonly row: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly found: HTMLElement;

  /** `list` holds the gallery's parts and tiles (each tile's `data-lesson` is its id);
   * `lessons` gives the lessons they show. */
  constructor(
    private readonly list: HTMLElement,
    private readonly lessons: () => readonly Lesson[],
  ) {
    this.input = h("input", {
      type: "search",
      class: "gw-lessons-find",
      placeholder: "Find a lesson: momentum, zero_grad, ReLU…",
      "aria-label": "Find a lesson",
      autocomplete: "off",
      spellcheck: "false",
      on: {
        input: () => this.apply(),
        keydown: (ev) => {
          if (ev.key === "Escape" && this.input.value !== "") {
            ev.preventDefault(); // the words go, the gallery stays open
            this.clear();
          } else if (ev.key === "Enter") {
            // the key's default would go on to press the Lessons button, which the closing
            // gallery hands the focus back to, and open the gallery again
            ev.preventDefault();
            const lesson = lessonToOpen(this.lessons(), this.input.value.trim());
            if (lesson) this.list.querySelector<HTMLButtonElement>(`.gw-lesson-tile[data-lesson="${lesson.id}"]`)?.click();
          }
        },
      },
    });
    this.found = h("p", { class: "gw-lessons-found", role: "status" });
    this.row = h("div", { class: "gw-lessons-find-row" }, this.input, this.found);
    // A letter typed on a tile goes to the search box: the gallery opens on the current
    // lesson's tile, and "chain rule" typed there opened the tile's lesson at the space
    // (the box was a Shift+Tab per tile away).
    list.addEventListener("keydown", (ev) => {
      const onTile = (ev.target as Element | null)?.closest(".gw-lesson-tile");
      if (!onTile || ev.key.length !== 1 || ev.key === " " || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      ev.preventDefault();
      this.input.focus();
      this.input.value += ev.key;
      this.apply();
    });
  }

  /** Show only the tiles whose lesson matches the box's words (call after drawing the list). */
  apply(): void {
    const query = this.input.value.trim();
    const byId = new Map(this.lessons().map((lesson) => [lesson.id, lesson]));
    let shown = 0;
    for (const tile of this.list.querySelectorAll<HTMLElement>(".gw-lesson-tile")) {
      const lesson = byId.get(tile.dataset.lesson ?? "");
      const match = lesson !== undefined && lessonMatches(lesson, query);
      const item = tile.closest("li");
      if (item) item.hidden = !match;
      if (match) shown += 1;
    }
    for (const part of this.list.querySelectorAll<HTMLElement>(".gw-lesson-part")) {
      part.hidden = part.querySelector("li:not([hidden])") === null;
    }
    this.found.textContent =
      query === ""
        ? ""
        : shown === 0
          ? `No lesson mentions “${query}”.`
          : `${shown} of ${byId.size} lessons mention “${query}”. Enter opens “${lessonToOpen(this.lessons(), query)?.title ?? ""}”.`;
  }

  /** Empty the box and show every lesson again. */
  clear(): void {
    this.input.value = "";
    this.apply();
  }
}
