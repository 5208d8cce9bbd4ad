// The change a lesson's "try" asks for, made in the editor's code by the card's Try it button
// (server/lessons's TryEdit): pure, so the unit tests run it without a page.

/** The first `replace` in the lesson's code becomes `with` (server/lessons's TryEdit). */
export interface TryEdit {
  replace: string;
  with: string;
}

/**
 * Make `edit` in `source`: the code with the change, or why not (`made`: the code has the
 * change already; `gone`: the text it changes is no longer there). `madeHere` says whether
 * Try it made it in this code before (a change that deletes leaves nothing to recognise).
 */
export function applyTry(source: string, edit: TryEdit, madeHere: boolean): { source: string } | { why: "made" | "gone" } {
  // `with` may hold `replace` (an inserted line before it): look for the change first
  if (edit.with && source.includes(edit.with)) return { why: "made" };
  if (source.includes(edit.replace)) return { source: source.replace(edit.replace, () => edit.with) };
  return { why: madeHere ? "made" : "gone" };
}
