// The changes a lesson's "try" asks for, made in the editor's code by the card's Try it button
// (server/lessons/tries.py): pure, so the unit tests run it without a page.

/** One change: the first `replace` in the code becomes `with`. */
export interface TryEdit {
  replace: string;
  with: string;
}

/** The edits one press of Try it makes together, in order. */
export type TryStep = TryEdit[];

/** What a press of Try it does: the code with the next step made, or why there is none. */
export type TryMade = { source: string; step: number } | { why: "made" } | { why: "gone"; missing: string };

/**
 * Make the next step of a try in `source` (its index comes back with the code): the first step
 * whose results are not all in the code (a step made by hand counts as made) and that Try it
 * did not make already (`madeHere` steps: a step that deletes leaves nothing to recognise).
 * `made`: every step is made; `gone`: the text the next step changes (`missing`) is no longer
 * in the code.
 */
export function applyTry(source: string, steps: readonly TryStep[], madeHere: number): TryMade {
  for (const [k, step] of steps.entries()) {
    // a result may hold the text it replaced (a line inserted before it): look for results first
    const results = step.map((edit) => edit.with).filter((text) => text !== "");
    if (results.length > 0 && results.every((text) => source.includes(text))) continue;
    let out = source;
    const missing = step.find((edit) => {
      if (!out.includes(edit.replace)) return true;
      out = out.replace(edit.replace, () => edit.with);
      return false;
    });
    if (!missing) return { source: out, step: k };
    if (k < madeHere) continue;
    return { why: "gone", missing: missing.replace };
  }
  return { why: "made" };
}
