// What the app and an embed say when a link asks for more than its run has. Both say it in
// the same words: a course author who tries a link in the app and then embeds it reads one
// message, not two.

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
