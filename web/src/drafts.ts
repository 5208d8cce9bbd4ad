// Drafts: the learner's own edits to the code, kept for this tab (sessionStorage) under the
// run they were made on (`gradwalk-draft:<run id>`; the page with no run: `gradwalk-draft:`),
// so a reload, Back/Forward or the logo does not lose them. Only text the learner changed is
// kept: code the app put in the editor (a run's, an example's, a lesson's) is the base a draft
// differs from. A draft is dropped once its code is run (the run is its own saved state), when
// Discard puts the run's code back, and when a lesson or an example is opened over it.
import type { Editor } from "./editor";
import type { OutputView } from "./output";

const PREFIX = "gradwalk-draft:";

export class Drafts {
  /** The code the app last put in the editor: Discard puts it back; text equal to it is no draft. */
  base = "";

  /** `key` names the draft the editor's code is now (the shown run's id, "" for none). */
  constructor(private readonly key: () => string) {}

  /** The editor's code changed to `text`: by the learner (kept, unless it is the base again), or by the app (the new base). */
  changed(text: string, byUser: boolean): void {
    if (!byUser) this.base = text;
    else if (text === this.base) this.drop();
    else write(this.key(), text);
  }

  /** The code `source` was run (or put there by the app for a run): the draft it came from is done with. */
  ran(source: string): void {
    this.drop();
    this.base = source;
  }

  /** Forget the draft of `key` (the shown run's by default). */
  drop(key = this.key()): void {
    write(key, null);
  }

  /**
   * Put the shown run's draft back in `editor`, as an edit the learner made (the examples list
   * reads "Edited: …", Ctrl+Z gives the run's code back), and say so in `output` with a
   * Discard button that puts the run's code back and forgets the draft.
   */
  restore(editor: Editor, output: OutputView): void {
    const key = this.key();
    const text = read(key);
    if (text === null || text === this.base || text === editor.source) return;
    editor.editAsUser(text);
    output.say("Your unsaved edits were restored.", "info", {
      text: "Discard",
      title: "Put back the run's code and forget these edits",
      gw: "draft-discard",
      onClick: () => {
        this.drop(key);
        editor.source = this.base;
      },
    });
  }
}

function read(key: string): string | null {
  try {
    return sessionStorage.getItem(PREFIX + key);
  } catch {
    return null; // storage off: drafts last for the page
  }
}

function write(key: string, text: string | null): void {
  try {
    if (text === null) sessionStorage.removeItem(PREFIX + key);
    else sessionStorage.setItem(PREFIX + key, text);
  } catch {
    // storage off or full: the draft lasts for the page
  }
}
