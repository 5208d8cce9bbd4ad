// The tab's title names the run open ("Autograd on a scalar · gradwalk"), so tabs, the
// browser's history and its bookmarks tell runs apart; with none open, the page's own title.
import { type TraceModel, traceTitle } from "./trace-model";

/** The run's name: its example's or lesson's title (`titleOf` its code), else its first comment line, else its file's name; null for none. */
export function runTitle(model: TraceModel, titleOf: (source: string) => string | null): string | null {
  return titleOf(model.source || model.run?.source || "") ?? (traceTitle(model) || null);
}

export class PageTitle {
  /** The page's title as served ("gradwalk · watch autograd work", a room's "gradwalk · room K7P2QX"). */
  private readonly base = document.title;
  /** What follows a run's name: the page's title without the tagline. */
  private readonly name = this.base.replace(/ · watch autograd work$/, "");

  /** The title of the lesson whose card is shown: it names the run (lesson 1's code is also an example's). */
  lesson: string | null = null;

  /** `open` names the run open, or is null with none. */
  constructor(private readonly open: () => string | null) {}

  /** Show the run open's name in the tab (its lesson's, where a lesson's card is shown), or the page's title with none. */
  refresh(): void {
    const open = this.open();
    const run = open && (this.lesson ?? open);
    const title = run ? `${run} · ${this.name}` : this.base;
    if (document.title !== title) document.title = title;
  }
}
