// Two runs on one set of charts: the run on screen, and another drawn dashed under it (the
// run before, in a live demo: "lr=0.05, then lr=0.5"; "total += loss, then loss.item()").
// What a chart plots is the union of both runs' x values (steps, or seconds into each run),
// each run's columns left empty where it has no row; and the change between the two
// sources, in a few words, says what the dashed lines are.

/** The columns of one plot: x ascending, then one column per series (uPlot's AlignedData). */
export type Columns = [number[], ...(number | null)[][]];

/**
 * `ours` and `theirs` on one ascending x column: every x of either, ours' columns first,
 * each null where its run has no row at that x.
 */
export function mergeColumns(ours: Columns, theirs: Columns): Columns {
  const [ax, ...acols] = ours;
  const [bx, ...bcols] = theirs;
  const xs: number[] = [];
  const cols: (number | null)[][] = [...acols, ...bcols].map(() => []);
  let i = 0;
  let j = 0;
  while (i < ax.length || j < bx.length) {
    const takeA = j >= bx.length || (i < ax.length && ax[i] <= bx[j]);
    const takeB = i >= ax.length || (j < bx.length && bx[j] <= ax[i]);
    xs.push(takeA ? ax[i] : bx[j]);
    acols.forEach((c, k) => cols[k].push(takeA ? c[i] : null));
    bcols.forEach((c, k) => cols[acols.length + k].push(takeB ? c[j] : null));
    if (takeA) i++;
    if (takeB) j++;
  }
  return [xs, ...cols];
}

/** Where two sources differ: the first changed line, as it was and as it is. */
export interface SourceChange {
  /** 1-based, in the source as it is now. */
  line: number;
  before: string;
  after: string;
  /** Lines changed besides this one. */
  more: number;
}

const WORD = /[\w.=]/;
const LONGEST = 40;

/**
 * What changed from `before` to `after`: the first line that differs, narrowed to the
 * changed words (`lr=0.05` → `lr=0.5`); null when the sources are the same.
 */
export function sourceChange(before: string, after: string): SourceChange | null {
  const a = before.replace(/\s+$/, "").split("\n");
  const b = after.replace(/\s+$/, "").split("\n");
  let top = 0;
  while (top < a.length && top < b.length && a[top] === b[top]) top++;
  if (top === a.length && top === b.length) return null;
  let tail = 0;
  while (tail < a.length - top && tail < b.length - top && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const changed = Math.max(a.length - top - tail, b.length - top - tail);
  const [was, is] = narrow(a[top] ?? "", b[top] ?? "");
  return { line: top + 1, before: clip(was), after: clip(is), more: Math.max(0, changed - 1) };
}

/** The differing middle of two lines, widened to whole words (`lr=0.05`, not `0`). */
function narrow(a: string, b: string): [string, string] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  // widen over the word either side, in both lines alike (the shared parts are equal)
  while (start > 0 && WORD.test(a[start - 1])) start--;
  while (end > 0 && WORD.test(a[a.length - end])) end--;
  return [a.slice(start, a.length - end).trim(), b.slice(start, b.length - end).trim()];
}

function clip(text: string): string {
  return text.length > LONGEST ? `${text.slice(0, LONGEST - 1)}…` : text;
}

/** The change in words, for the charts' toolbar: "line 11: lr=0.05 → lr=0.5 (and 2 more lines)". */
export function describeChange(change: SourceChange | null): string {
  if (!change) return "the same code";
  const what = `line ${change.line}: ${change.before || "(nothing)"} → ${change.after || "(nothing)"}`;
  return change.more ? `${what} (and ${change.more} more line${change.more === 1 ? "" : "s"})` : what;
}
