// What the app and an embed say when a link asks for more than its run has. Both say it in
// the same words: a course author who tries a link in the app and then embeds it reads one
// message, not two.
import type { TraceModel } from "./trace-model";

/**
 * The notice for a link that opens step `asked` (0-based) of a run with `steps` steps, or
 * null when the run has that step. The view then shows the last step (none without steps).
 *
 * `stepPastEndNotice(99, 5)` → "This link opens step 100, but this run has 5 steps: showing the last one."
 */
export function stepPastEndNotice(asked: number, steps: number): string | null {
  if (asked < steps) return null;
  if (!steps) return `This link opens step ${asked + 1}, but this run never called backward(): it has no steps to show.`;
  return `This link opens step ${asked + 1}, but this run has ${steps} step${steps === 1 ? "" : "s"}: showing the last one.`;
}

/**
 * The notice for a link that draws backward call `asked` (0-based) of finished run `model`,
 * or null when the run recorded that call in full. The graph then draws the run's default:
 * a call past its last, or one recorded metrics-only (fit_by_hand's call 99 of 200, 10 in
 * full), had been drawn as the default without a word.
 */
export function callMissingNotice(asked: number, model: TraceModel): string | null {
  const made = Math.max(model.finished?.counts.backward_calls ?? 0, model.backwards.length);
  if (asked >= made) {
    const calls = made ? `made ${made} backward call${made === 1 ? "" : "s"}` : "never called backward()";
    return `This link draws backward call ${asked + 1}, but this run ${calls}: showing ${made > 1 ? "the graph it opens on" : made ? "its graph" : "the graph it built"}.`;
  }
  const full = model.backwards.filter((call) => call.byNode.size > 0).map((call) => call.index);
  if (full.includes(asked)) return null;
  const first = full.every((index, i) => index === i) ? (full.length === 1 ? "call 1" : `calls 1 to ${full.length}`) : `${full.length} calls`;
  return `This link draws backward call ${asked + 1}, but this run recorded ${full.length ? first : "no call"} in full (the rest metrics-only): showing the graph it opens on.`;
}

/**
 * A link's `call`, checked once its run has finished: the app and an embed say
 * {@link callMissingNotice}'s words, once, where the run did not record that call in full.
 */
export class PendingCallNotice {
  private call: number | null = null;

  /** Check `call` (a call's index, "all" or null: nothing to check) against the run shown. */
  want(call: number | "all" | null): void {
    this.call = typeof call === "number" ? call : null;
  }

  /** The notice to say now, once (null: none, or the run still going). */
  take(model: TraceModel): string | null {
    if (this.call === null || !model.isFinished) return null;
    const call = this.call;
    this.call = null;
    return callMissingNotice(call, model);
  }
}
