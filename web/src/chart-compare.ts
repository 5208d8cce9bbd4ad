// Two runs on one set of charts: the run on screen, and another drawn dashed under it (the
// run before, in a live demo: "lr=0.05, then lr=0.5"; "total += loss, then loss.item()").
// What a chart plots is the union of both runs' x values (steps, or seconds into each run),
// each run's columns left empty where it has no row; and the change between the two
// sources, in a few words, says what the dashed lines are.

import type { Columns, PlotColumn } from "./chart-gaps";

/**
 * `ours` and `theirs` on one ascending x column: every x of either, ours' columns first,
 * each undefined where its run has no row at that x (a line passes over it: chart-gaps.ts).
 */
export function mergeColumns(ours: Columns, theirs: Columns): Columns {
  const [ax, ...acols] = ours;
  const [bx, ...bcols] = theirs;
  const xs: number[] = [];
  const cols: PlotColumn[] = [...acols, ...bcols].map(() => []);
  let i = 0;
  let j = 0;
  while (i < ax.length || j < bx.length) {
    const takeA = j >= bx.length || (i < ax.length && ax[i] <= bx[j]);
    const takeB = i >= ax.length || (j < bx.length && bx[j] <= ax[i]);
    xs.push(takeA ? ax[i] : bx[j]);
    acols.forEach((c, k) => cols[k].push(takeA ? c[i] : undefined));
    bcols.forEach((c, k) => cols[acols.length + k].push(takeB ? c[j] : undefined));
    if (takeA) i++;
    if (takeB) j++;
  }
  return [xs, ...cols];
}

/** Where two sources differ: the first change, as it was and as it is. */
export interface SourceChange {
  /** A line changed, added (only in the source now) or removed (only in the one before). */
  kind: "changed" | "added" | "removed";
  /** 1-based: in the source as it is now; for a removed line, in the source before. */
  line: number;
  /** The changed words of the line as it was ("" for an added line). */
  before: string;
  /** The changed words of the line as it is ("" for a removed line). */
  after: string;
  /** Lines changed, added or removed besides this one. */
  more: number;
}

const WORD = /[\w.=]/;

/** Whether `line[i]` belongs to a word: a word character, or the sign of a number's
 * exponent (the "-" of 3e-3, which cut `lr=3e-3 → lr=1e-3` to `lr=3e → lr=1e`). */
function inWord(line: string, i: number): boolean {
  return WORD.test(line[i]) || (/[+-]/.test(line[i]) && /\d[eE]$/.test(line.slice(0, i)));
}
const LONGEST = 40;
/** Above this many line pairs, the changed middle is taken as one block (no line diff). */
const DIFF_CELLS = 250_000;

/**
 * What changed from `before` to `after`: the first line changed, added or removed (lines
 * matched by a longest-common-subsequence diff, so a line added near the top does not read as
 * every line below it changed), a changed one narrowed to its changed words (`lr=0.05` →
 * `lr=0.5`); null when the sources are the same.
 */
export function sourceChange(before: string, after: string): SourceChange | null {
  const a = before.replace(/\s+$/, "").split("\n");
  const b = after.replace(/\s+$/, "").split("\n");
  let top = 0;
  while (top < a.length && top < b.length && a[top] === b[top]) top++;
  if (top === a.length && top === b.length) return null;
  let tail = 0;
  while (tail < a.length - top && tail < b.length - top && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const hunks = diffHunks(a.slice(top, a.length - tail), b.slice(top, b.length - tail));
  const more = hunks.reduce((n, h) => n + Math.max(h.removed.length, h.added.length), 0) - 1;
  const { removed, added } = hunks[0];
  if (!added.length) return { kind: "removed", line: top + removed[0] + 1, before: clip(a[top + removed[0]].trim()), after: "", more };
  if (!removed.length) return { kind: "added", line: top + added[0] + 1, before: "", after: clip(b[top + added[0]].trim()), more };
  const [was, is] = narrow(a[top + removed[0]], b[top + added[0]]);
  return { kind: "changed", line: top + added[0] + 1, before: clip(was), after: clip(is), more };
}

/** A run of lines removed from `a` and added in `b` (indexes into each), between equal lines. */
interface Hunk {
  removed: number[];
  added: number[];
}

/** The hunks of a line diff of `a` and `b` (by longest common subsequence), in order. */
function diffHunks(a: string[], b: string[]): Hunk[] {
  const n = a.length;
  const m = b.length;
  if (n * m > DIFF_CELLS) return [{ removed: a.map((_, i) => i), added: b.map((_, j) => j) }];
  // common[i][j]: how many lines a[i:] and b[j:] have in common, in order
  const common = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
  }
  const hunks: Hunk[] = [];
  let open: Hunk | null = null;
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      open = null;
      i++;
      j++;
      continue;
    }
    if (!open) hunks.push((open = { removed: [], added: [] }));
    // a removal before an addition, so that a replaced line pairs with its replacement
    if (i < n && (j >= m || common[i + 1][j] >= common[i][j + 1])) open.removed.push(i++);
    else open.added.push(j++);
  }
  return hunks;
}

/** The differing middle of two lines, widened to whole words (`lr=0.05`, not `0`). */
function narrow(a: string, b: string): [string, string] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  // widen over the word either side, in both lines alike (the shared parts are equal)
  while (start > 0 && inWord(a, start - 1)) start--;
  while (end > 0 && inWord(a, a.length - end)) end--;
  return [a.slice(start, a.length - end).trim(), b.slice(start, b.length - end).trim()];
}

function clip(text: string): string {
  return text.length > LONGEST ? `${text.slice(0, LONGEST - 1)}…` : text;
}

/** The change in words, for the charts' toolbar: "line 11: lr=0.05 → lr=0.5 (and 2 more lines)",
 * "line 2 added: import gradwalk", "line 2 removed: import gradwalk". */
export function describeChange(change: SourceChange | null): string {
  if (!change) return "the same code";
  const what =
    change.kind === "added"
      ? `line ${change.line} added: ${change.after || "(a blank line)"}`
      : change.kind === "removed"
        ? `line ${change.line} removed: ${change.before || "(a blank line)"}`
        : `line ${change.line}: ${change.before || "(nothing)"} → ${change.after || "(nothing)"}`;
  return change.more ? `${what} (and ${change.more} more line${change.more === 1 ? "" : "s"})` : what;
}
