// What a local derivative rule (rules.ts, rules-nn.ts) may read about the node it explains:
// what the node saved, its output, the gradients in and out, and the Python number an op
// was passed beside its one tensor.
import { edgeTargetLabel, numberText, tensorExpr } from "./naming";
import type { TraceModel } from "./trace-model";
import type { NodeCreated, TensorValue } from "./types/events";
import { fmt, fmtFactor, isFull, num, scalarOf } from "./values";

export interface Operand {
  label: string;
  /** The number when the operand is a one-element tensor or a scalar. */
  value: number | null;
}

/** What a rule may read about the node being explained. */
export class Ctx {
  readonly g: number | null;
  constructor(
    readonly model: TraceModel,
    readonly node: NodeCreated,
    readonly gradIn: (TensorValue | null)[],
    readonly gradOut: (TensorValue | null)[],
  ) {
    this.g = scalarOf(gradIn[0]);
  }

  /** A saved value by name (`self`, `other`, `result`, `exponent`, ...). */
  saved(name: string): Operand | null {
    const s = this.node.saved.find((x) => x.name === name);
    if (!s) return null;
    if (s.scalar !== null) {
      const v = Number(s.scalar);
      return { label: s.scalar, value: Number.isFinite(v) ? v : null };
    }
    if (s.tensor !== null) {
      return { label: tensorExpr(this.model, s.tensor), value: scalarOf(this.model.tensor(s.tensor)?.ev.value) };
    }
    return null;
  }

  /** The node's own output value (for rules written with the result). */
  result(): Operand {
    const saved = this.saved("result");
    if (saved) return saved;
    const t = this.model.tensor(this.node.tensor);
    return { label: "out", value: scalarOf(t?.ev.value) };
  }

  /**
   * Input `slot` as the snippet wrote it (`w`, `x + 1`): the label of the saved `savedName`,
   * else of the tensor its edge leads to; `fallback` when the trace has no name for it (a
   * tensor made inside a library function reads `SubBackward0's output`) or only a counted
   * one (`#2 … @ …`, which reads as a label, not inside a formula).
   */
  input(slot = 0, savedName = "self", fallback = "x"): string {
    const label = this.saved(savedName)?.label ?? edgeTargetLabel(this.model, this.node.id, slot);
    return /Backward|^input \d|^t\d+$|^#\d/.test(label) ? fallback : label;
  }

  /** The recorded shape of a saved tensor, or null when it saved none by that name. */
  savedShape(name: string): number[] | null {
    return this.node.saved.find((x) => x.name === name)?.shape ?? null;
  }

  /** The number of elements of a saved tensor, from its recorded shape. */
  numelOf(name: string): number | null {
    const shape = this.savedShape(name);
    return shape ? shape.reduce((a, b) => a * b, 1) : null;
  }

  out(slot: number): number | null {
    return scalarOf(this.gradOut[slot]);
  }

  /** The Python number an op of `names` was passed beside its one tensor (see `wrappedNumber`). */
  constant(...names: string[]): Operand | null {
    const v = wrappedNumber(this.model, this.node, names);
    return v === null ? null : { label: numberText(v), value: typeof v === "boolean" ? Number(v) : v };
  }

  /**
   * A factor the engine applied when it was not saved (a wrapped Python number): out / grad,
   * the same for every element (null when the ratios differ, or no element tells).
   */
  inferredFactor(slot: number): Operand | null {
    const grad = this.gradIn[0];
    const out = this.gradOut[slot];
    if (!isFull(grad) || !isFull(out) || grad.flat.length !== out.flat.length) return null;
    const ratios = grad.flat.map(num).flatMap((g, i) => (g === 0 ? [] : [num(out.flat[i]) / g]));
    if (!ratios.length || ratios.some((r) => Math.abs(r - ratios[0]) > 1e-6 * Math.max(1, Math.abs(ratios[0])))) return null;
    return { label: fmt(ratios[0]), value: ratios[0] };
  }
}

/**
 * A label as one factor of a product or a divisor: `x`, `x[:, 0]`, `exp(x)`, `tensor(…)` stand alone,
 * `1 − y` becomes `(1 − y)` (else `grad · 1 − y` reads as `grad − y`).
 */
export function factor(label: string): string {
  // a name, a transpose, a subscript (`y[:, 0:2]`)
  if (/^[\p{L}\p{N}_.₀-₉]+(ᵀ|(\[[^[\]]*\])+)?$/u.test(label)) return label;
  const call = /^[\p{L}\p{N}_.]+\((.*)\)$/u.exec(label);
  if (call) {
    // f(...) whose first "(" closes at the very end: `exp(x)`, not `exp(x) * log(y)`
    let depth = 0;
    for (const ch of call[1]) {
      if (ch === "(") depth++;
      else if (ch === ")" && --depth < 0) break;
    }
    if (depth === 0) return label;
  }
  return `(${label})`;
}

/** Ops that save the Python number they were passed (`x * 2`, `x / 4`) as their `other`. */
export const WRAPPED_NUMBER_OPS = ["mul", "rmul", "div", "true_divide", "divide", "multiply"];

/**
 * The Python number an op of `names` was passed beside its one tensor (`x * 2`, `x / 4`): the
 * other operand, which PyTorch saves as a wrapped number whose value the trace does not hold
 * (the op's recorded constants do). Null for any other op.
 */
export function wrappedNumber(model: TraceModel, node: NodeCreated, names: readonly string[]): number | boolean | null {
  const op = model.op(node.op);
  const constants = op?.constants ?? [];
  if (!op || !names.includes(op.name.replace(/_$/, "")) || op.inputs.length !== 1 || constants.length !== 1) return null;
  return constants[0].value;
}

/** A rule for one edge: the symbolic form and, when every number is known, the substitution. */
export type Slot = { sym: string; num?: string | null };
export type Rule = { summary: (c: Ctx) => string; slots: (c: Ctx, slot: number) => Slot | null };

/** A rule whose every edge reads the same. */
export function rule(summary: string, sym: string): Rule {
  return { summary: () => summary, slots: () => ({ sym }) };
}

/** A rule whose edges (by input number) read differently. */
export function perInput(summary: string, ...syms: string[]): Rule {
  return { summary: () => summary, slots: (_c, slot) => ({ sym: syms[Math.min(slot, syms.length - 1)] }) };
}

/** The input of a one-input rule, by the snippet's name (`w`, `logits`), else `x`. */
export function x(c: Ctx): string {
  return factor(c.input(0, "self", "x"));
}

/** Numbers joined with × when they are all known (`1 × 3`; a negative factor bracketed), else null. */
export function times(...xs: (number | null)[]): string | null {
  if (!xs.every((v) => v !== null)) return null;
  return (xs as number[]).map((v, i) => (i === 0 ? fmt(v) : fmtFactor(v))).join(" × ");
}

/** The node's saved `dim` as the snippet passed it (`1`, `-1`, `(-1,)`), or undefined when it saved none. */
export function savedDim(c: Ctx): string | undefined {
  return c.saved("dim")?.label;
}

/** The input of a one-input rule as written inside a call's parentheses (`lgamma(v + 1)`), else `x`. */
export function inner(c: Ctx): string {
  return c.input(0, "self", "x");
}

/** A saved Python value as the snippet passed it (`1.0`, `(1,)`), else `fallback`. */
export function said(c: Ctx, name: string, fallback: string): string {
  return c.saved(name)?.label ?? fallback;
}
