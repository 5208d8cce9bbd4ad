// The header's examples list: it names the example the editor's code is, "Edited: <title>"
// once the user changed that code, and a lesson's title for a lesson's own snippet (it read
// "Examples…" there). A title too long for the list ends in "…" (styles: text-overflow);
// hovering the list reads it whole, with the example's summary.
import type { Example } from "./api";
import { h } from "./dom";

export class ExamplesMenu {
  examples: Example[] = [];
  /** The title of the lesson whose own snippet `source` is, or null (set by teaching.ts). */
  lessonTitleOf: (source: string) => string | null = () => null;
  /** The example the editor's code is (or was, before the user's edits). */
  private shown: Example | null = null;
  /** The lesson whose own snippet the editor's code is (or was, before the user's edits). */
  private lesson: string | null = null;
  /** "Edited: <title>", never chosen by hand. */
  private readonly editedOption = h("option", { value: "edited", disabled: true, hidden: true, data: { gw: "example-edited" } });
  /** A lesson's own snippet: "Lesson: <title>", never chosen by hand. */
  private readonly lessonOption = h("option", { value: "lesson", disabled: true, hidden: true, data: { gw: "example-lesson" } });

  /** `pick` gets the code of an example chosen from the list. */
  constructor(
    private readonly select: HTMLSelectElement,
    pick: (source: string) => void,
  ) {
    select.addEventListener("change", () => {
      const ex = this.examples.find((e) => e.id === select.value);
      if (!ex) return;
      this.name(ex);
      pick(ex.source);
    });
  }

  /** Fill the list with `examples`. */
  fill(examples: Example[]): void {
    this.examples = examples;
    this.select.replaceChildren(
      h("option", { value: "", text: "Examples…" }),
      ...examples.map((ex) => h("option", { value: ex.id, text: ex.title, title: ex.summary })),
      this.editedOption,
      this.lessonOption,
    );
  }

  /** The title of the example or lesson whose code `source` is, or null: what the server calls its run. */
  titleOf(source: string): string | null {
    const code = source.trim();
    return this.examples.find((e) => e.source.trim() === code)?.title ?? this.lessonTitleOf(source);
  }

  /** Name what `source` is: an example, a lesson's snippet, or nothing ("Examples…": a run's or a file's own code). */
  showSourceOf(source: string): void {
    const ex = this.examples.find((e) => e.source === source);
    this.shown = ex ?? null;
    const lesson = ex ? null : this.lessonTitleOf(source);
    this.lesson = lesson;
    if (ex) return this.name(ex);
    if (lesson !== null) {
      this.lessonOption.textContent = `Lesson: ${lesson}`;
      this.select.value = "lesson";
      this.select.title = `The code of the lesson “${lesson}”`;
      return;
    }
    this.select.value = "";
    this.select.title = "";
  }

  /**
   * The code changed: an example's code edited reads "Edited: <title>" (choosing the example
   * again puts its code back), and edits undone name it again; code the app put there (a
   * lesson's, a run's) is named by {@link showSourceOf}.
   */
  codeChanged(source: string, byUser: boolean): void {
    const ex = this.examples.find((e) => e.source === source);
    if (ex) {
      this.shown = ex;
      this.name(ex);
    } else if (!byUser) {
      this.showSourceOf(source);
    } else if (this.shown || this.lesson !== null) {
      // first, so a narrow list (presenter type, a projector) still shows it
      this.editedOption.textContent = `Edited: ${this.shown?.title ?? this.lesson}`;
      this.select.value = "edited";
      this.select.title = this.shown
        ? `Your edits to ${this.shown.title}: choose it again to put its code back`
        : `Your edits to the code of the lesson “${this.lesson}”`;
    }
  }

  private name(ex: Example): void {
    this.select.value = ex.id;
    this.select.title = `${ex.title}: ${ex.summary}`;
  }
}
