// Reading and formatting tensor values as they travel in events.
//
// Small tensors arrive whole ({kind: "full", shape, flat}); large ones as summaries. On
// the wire, non-finite floats are the strings "NaN", "Infinity" and "-Infinity", so every
// element goes through `num` before arithmetic.
import type { FullValue, SummaryValue, TensorValue } from "./types/events";

export type Maybe<T> = T | null | undefined;

/** Turn one wire element (number, bool, or a non-finite string) into a number. */
export function num(x: unknown): number {
  if (typeof x === "number") return x;
  if (typeof x === "boolean") return x ? 1 : 0;
  if (x === "NaN") return NaN;
  if (x === "Infinity") return Infinity;
  if (x === "-Infinity") return -Infinity;
  return Number(x);
}

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function isFull(v: Maybe<TensorValue>): v is FullValue {
  return !!v && v.kind === "full";
}

export function isSummary(v: Maybe<TensorValue>): v is SummaryValue {
  return !!v && v.kind === "summary";
}

/** The elements of a whole value as numbers (empty for summaries and nothing). */
export function elements(v: Maybe<TensorValue>): number[] {
  return isFull(v) ? v.flat.map(num) : [];
}

/** The single number of a one-element value, else null. */
export function scalarOf(v: Maybe<TensorValue>): number | null {
  if (!isFull(v) || v.flat.length !== 1) return null;
  return num(v.flat[0]);
}

/** Format one number compactly: up to 4 significant digits, no trailing zeros. */
export function fmt(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "∞";
  if (x === -Infinity) return "−∞";
  if (Object.is(x, -0) || x === 0) return "0";
  const sign = x < 0 ? "−" : "";
  const a = Math.abs(x);
  let s: string;
  if (Number.isInteger(a) && a < 1e7) s = String(a);
  else if (a >= 1e5 || a < 1e-3) s = a.toExponential(3).replace(/\.?0+e/, "e").replace("e+", "e");
  else s = String(Number(a.toPrecision(4)));
  return sign + s;
}

/** Format a number for use inside a product: negatives get parentheses. */
export function fmtFactor(x: number): string {
  return x < 0 ? `(${fmt(x)})` : fmt(x);
}

/** A shape as shown everywhere: `scalar`, `[2]`, `[5×16]` (brackets keep `[2]` from reading as a value). */
export function shapeText(shape: readonly number[] | null | undefined): string {
  if (!shape) return "?";
  return shape.length === 0 ? "scalar" : `[${shape.join("×")}]`;
}

/**
 * The shapes of an op's outputs in one cell: one shape; `3 × [2×4]` when all are alike
 * (`split`); both when two differ (`max` along a dim); else the count (`model.double()`
 * hands back nine tensors of five shapes).
 */
export function shapesText(shapes: readonly (readonly number[] | null | undefined)[]): string {
  if (shapes.length === 0) return "";
  const texts = shapes.map((s) => shapeText(s));
  if (texts.length === 1) return texts[0];
  if (texts.every((t) => t === texts[0])) return `${texts.length} × ${texts[0]}`;
  return texts.length === 2 ? texts.join(", ") : `${texts.length} tensors`;
}

/** A one-line description of a value: the number, a short list, or shape and statistics. */
export function fmtValue(v: Maybe<TensorValue>, maxItems = 6): string {
  return describeValue(v, maxItems, false);
}

/**
 * As {@link fmtValue}, with a matrix (or a tensor of more dims) written whole a row a line
 * (`[[2, 4],\n [6, 8]]`), for a cell that keeps line breaks (`white-space: pre-wrap`): the
 * stepper's table of what the engine passed.
 */
export function fmtValueRows(v: Maybe<TensorValue>, maxItems = 6): string {
  return describeValue(v, maxItems, true);
}

function describeValue(v: Maybe<TensorValue>, maxItems: number, rows: boolean): string {
  if (!v) return "—";
  if (v.kind === "full") {
    const xs = v.flat.map(num);
    if (v.shape.length === 0 || xs.length === 1) return fmt(xs[0]);
    if (xs.length <= maxItems) return nested(xs.map(fmt), v.shape, rows);
    return `${shapeText(v.shape)} ‖·‖ ${fmt(norm(xs))}`;
  }
  return [shapeText(v.shape), ...summaryParts(v)].join(" ");
}

/** What a summary says past its shape: `complex`, `‖·‖ 0.0845`, `2 NaN`, `1 inf`. */
function summaryParts(v: SummaryValue): string[] {
  const parts: string[] = [];
  if (v.of === "abs") parts.push("complex");
  if (v.norm !== null) parts.push(`‖·‖ ${fmt(v.norm)}`);
  if (v.nan) parts.push(`${v.nan} NaN`);
  if (v.inf) parts.push(`${v.inf} inf`);
  return parts;
}

/**
 * As {@link fmtValue} without the shape of a tensor too big to print (`‖·‖ 0.01634`, with
 * its NaN and inf counts), for a line that gave the shape once (a .grad's accumulation).
 */
export function statsOf(v: Maybe<TensorValue>, maxItems = 6): string {
  if (!v) return "—";
  if (v.kind === "full") return v.flat.length <= maxItems ? fmtValue(v, maxItems) : `‖·‖ ${fmt(norm(v.flat.map(num)))}`;
  const parts = summaryParts(v);
  return parts.length ? parts.join(" ") : shapeText(v.shape);
}

/**
 * Numbers in the brackets of their shape, as PyTorch prints them: `[[2, 4], [6, 8]]` for a
 * 2 × 2; with `rows`, each row on a line of its own under the one before, as `print(t)`
 * lays a matrix out (`[[2, 4],\n [6, 8]]`).
 */
function nested(items: readonly string[], shape: readonly number[], rows = false, depth = 0): string {
  if (shape.length <= 1) return `[${items.join(", ")}]`;
  const size = items.length / shape[0];
  const parts = Array.from({ length: shape[0] }, (_, i) => nested(items.slice(i * size, (i + 1) * size), shape.slice(1), rows, depth + 1));
  // a column's rows of one number each run on, wrapping: a regression's [64×1] gradient was
  // 64 lines, a card taller than the screen for one number a line
  const column = shape.length === 2 && shape[1] === 1;
  return `[${parts.join(rows && !column ? `,\n${" ".repeat(depth + 1)}` : ", ")}]`;
}

/** A value written after a `+`: as `fmtValue`, with a negative number in parentheses (`0 + (−0.75)`). */
export function fmtAddend(v: Maybe<TensorValue>): string {
  const x = scalarOf(v);
  return x !== null && x < 0 ? fmtFactor(x) : fmtValue(v);
}

/**
 * A value short enough for an edge label: the number, two numbers, or the norm; `whole`: the
 * most numbers written out (1: a vector by its norm, for a parameter's hexagon).
 */
export function fmtShort(v: Maybe<TensorValue>, whole = 2): string {
  if (!v) return "";
  if (v.kind === "full" && v.flat.length <= whole) {
    const xs = v.flat.map(num);
    if (xs.length === 1) return fmt(xs[0]);
    return `[${xs.map((x) => fmt(Number(x.toPrecision(3)))).join(", ")}]`;
  }
  const n = v.kind === "full" ? norm(v.flat.map(num)) : v.norm;
  return n === null ? shapeText(v.shape) : `‖·‖ ${fmt(Number(n.toPrecision(3)))}`;
}

export function norm(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x * x;
  return Math.sqrt(s);
}

export interface Stats {
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  norm: number | null;
  nan: number;
  inf: number;
}

/**
 * Statistics of any value (computed for whole values, read from summaries). The std is
 * PyTorch's `Tensor.std()`, divided by n − 1 (0 for one element), as a summary's is: a whole
 * value's divided by n, so a 64-element tensor and a 65-element one showed two kinds of std.
 */
export function stats(v: Maybe<TensorValue>): Stats | null {
  if (!v) return null;
  if (v.kind === "summary") return v;
  const xs = v.flat.map(num);
  const finite = xs.filter(Number.isFinite);
  const nan = xs.filter(Number.isNaN).length;
  const inf = xs.length - finite.length - nan;
  if (!finite.length) return { min: null, max: null, mean: null, std: null, norm: null, nan, inf };
  const mean = finite.reduce((a, b) => a + b, 0) / finite.length;
  const n = finite.length;
  const variance = n > 1 ? finite.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1) : 0;
  return {
    min: Math.min(...finite),
    max: Math.max(...finite),
    mean,
    std: Math.sqrt(variance),
    norm: norm(finite),
    nan,
    inf,
  };
}

/** Shape of a value as rows × columns for a table (vectors are one row; >2-D folds leading dims). */
export function asMatrix(shape: readonly number[]): { rows: number; cols: number } {
  if (shape.length === 0) return { rows: 1, cols: 1 };
  if (shape.length === 1) return { rows: 1, cols: shape[0] };
  const cols = shape[shape.length - 1];
  return { rows: numel(shape) / Math.max(cols, 1), cols };
}

export function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
