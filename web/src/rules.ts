// The chain rule written out: for one executed node, each local derivative rule with the
// real numbers (for small tensors), and each accumulation into a leaf's .grad.
//
// The numbers come from the trace only: the incoming gradient (`grad_in`), what the node
// saved (tensor values recorded when they were made, scalars as repr), and the gradient it
// sent on each edge (`grad_out`). The right-hand side of every line is the real
// `grad_out`, never a value recomputed here.
import { hookedArrival } from "./grad-hooks";
import { edgeTargetLabel, gradOf, rootLabel, tensorExpr } from "./naming";
import { NN_RULES } from "./rules-nn";
import type { StepEntry, TraceModel } from "./trace-model";
import type { GradAccumulated, NodeCreated, TensorValue } from "./types/events";
import { fmt, fmtFactor, fmtValue, isFull, scalarOf, shapeText } from "./values";

export interface RuleLine {
  /** The edge (input number) this line is about; null for notes. */
  slot: number | null;
  text: string;
}

export interface Explanation {
  /** The forward computation and the rule's name, e.g. "out = a * b · product rule". */
  summary: string;
  /** What arrived: "grad = ∂y/∂(x**3) = 1". */
  incoming: string;
  lines: RuleLine[];
  /** "x.grad: 0 + 14.75 → 14.75" */
  accumulations: string[];
}

interface Operand {
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

  out(slot: number): number | null {
    return scalarOf(this.gradOut[slot]);
  }

  /** A factor the engine applied when it was not saved (a wrapped Python number): out / grad. */
  inferredFactor(slot: number): Operand | null {
    const o = this.out(slot);
    if (this.g === null || o === null || this.g === 0) return null;
    const v = o / this.g;
    return { label: fmt(v), value: v };
  }
}

/** A rule for one edge: the symbolic form and, when every number is known, the substitution. */
export type Slot = { sym: string; num?: string | null };
export type Rule = { summary: (c: Ctx) => string; slots: (c: Ctx, slot: number) => Slot | null };

const SUP: Record<string, string> = { "2": "²", "3": "³", "4": "⁴" };

function power(base: string, e: number): string {
  if (e === 1) return base;
  const sup = SUP[String(e)];
  return sup ? `${base}${sup}` : `${base}^${fmtFactor(e)}`;
}

/** Join numbers with × when they are all known. */
function times(...xs: (number | null)[]): string | null {
  if (!xs.every((x) => x !== null)) return null;
  return (xs as number[]).map((x, i) => (i === 0 ? fmt(x) : fmtFactor(x))).join(" × ");
}

function nums(c: Ctx, f: (g: number) => string | null): string | null {
  return c.g === null ? null : f(c.g);
}

const identity: Rule = {
  summary: () => "passes the gradient through unchanged",
  slots: () => ({ sym: "grad" }),
};

function reshaped(what: string): Rule {
  return {
    summary: () => what,
    slots: (c, slot) => ({ sym: `grad reshaped to ${shapeText(shapeOfTarget(c, slot))}` }),
  };
}

function shapeOfTarget(c: Ctx, slot: number): number[] | null {
  const v = c.gradOut[slot];
  if (v) return v.shape;
  const edge = c.node.edges[slot];
  return edge?.node != null ? c.model.nodeShape(edge.node, edge.input_nr) : null;
}

const RULES: Record<string, Rule> = {
  Add: {
    summary: () => "out = a + b · a sum sends the gradient to both sides",
    slots: (c, slot) => {
      const alpha = c.saved("alpha")?.value ?? 1;
      if (slot === 0 || alpha === 1) return { sym: "grad" };
      return { sym: `${fmt(alpha)} · grad`, num: nums(c, (g) => times(alpha, g)) };
    },
  },
  Sub: {
    summary: () => "out = a − b · the second side gets the gradient negated",
    slots: (c, slot) => {
      if (slot === 0) return { sym: "grad" };
      const alpha = c.saved("alpha")?.value ?? 1;
      if (alpha !== 1) return { sym: `−${fmt(alpha)} · grad`, num: nums(c, (g) => `−${times(alpha, g)}`) };
      return { sym: "−grad", num: nums(c, (g) => `−${fmtFactor(g)}`) };
    },
  },
  Rsub: {
    summary: () => "out = k − a · the gradient is negated",
    slots: (c) => ({ sym: "−grad", num: nums(c, (g) => `−${fmtFactor(g)}`) }),
  },
  Neg: {
    summary: () => "out = −a",
    slots: (c) => ({ sym: "−grad", num: nums(c, (g) => `−${fmtFactor(g)}`) }),
  },
  Mul: {
    summary: () => "out = a * b · product rule: each side gets grad times the other side",
    slots: (c, slot) => {
      const other =
        (slot === 0 ? c.saved("other") : c.saved("self")) ?? c.inferredFactor(slot) ?? { label: "other", value: null };
      const label = other.value !== null && other.label === fmt(other.value) ? fmt(other.value) : other.label;
      return { sym: `grad · ${label}`, num: times(c.g, other.value) };
    },
  },
  Div: {
    summary: () => "out = a / b · quotient rule",
    slots: (c, slot) => {
      const a = c.saved("self") ?? { label: "a", value: null };
      const b = c.saved("other") ?? c.inferredFactor(slot) ?? { label: "b", value: null };
      if (slot === 0) {
        const num = c.g !== null && b.value !== null ? `${fmt(c.g)} / ${fmtFactor(b.value)}` : null;
        return { sym: `grad / ${b.label}`, num };
      }
      const num =
        c.g !== null && a.value !== null && b.value !== null
          ? `−${fmtFactor(c.g)} × ${fmtFactor(a.value)} / ${fmtFactor(b.value)}²`
          : null;
      return { sym: `−grad · ${a.label} / ${b.label}²`, num };
    },
  },
  Pow: {
    summary: (c) => {
      const e = c.saved("exponent");
      return e && c.node.name.endsWith("0") ? `out = a**${e.label} · power rule` : "out = a ** b · power rule";
    },
    slots: (c, slot) => {
      const base = c.saved("self") ?? { label: "a", value: null };
      const e = c.saved("exponent");
      if (c.node.name === "PowBackward0" && e && e.value !== null) {
        const p = e.value;
        const sym = p === 1 ? "grad" : `grad · ${fmt(p)} · ${power(base.label, p - 1)}`;
        const num =
          c.g !== null && base.value !== null
            ? [fmt(c.g), fmtFactor(p), power(fmtFactor(base.value), p - 1)].join(" × ")
            : null;
        return { sym, num };
      }
      if (slot === 0) return { sym: `grad · b · ${base.label}^(b−1)` };
      return { sym: `grad · out · ln(${base.label})` };
    },
  },
  Exp: {
    summary: () => "out = exp(a) · exp is its own derivative",
    slots: (c) => {
      const r = c.result();
      return { sym: `grad · exp(${inputLabel(c, 0)})`, num: times(c.g, r.value) };
    },
  },
  Log: {
    summary: () => "out = log(a)",
    slots: (c) => {
      const a = c.saved("self") ?? { label: "a", value: null };
      const num = c.g !== null && a.value !== null ? `${fmt(c.g)} / ${fmtFactor(a.value)}` : null;
      return { sym: `grad / ${a.label}`, num };
    },
  },
  Tanh: {
    summary: () => "out = tanh(a) · derivative 1 − tanh²",
    slots: (c) => {
      const r = c.result();
      const num = c.g !== null && r.value !== null ? `${fmt(c.g)} × (1 − ${fmtFactor(r.value)}²)` : null;
      return { sym: "grad · (1 − out²)", num };
    },
  },
  Sigmoid: {
    summary: () => "out = σ(a) · derivative σ(1 − σ)",
    slots: (c) => {
      const r = c.result();
      const num =
        c.g !== null && r.value !== null ? `${fmt(c.g)} × ${fmtFactor(r.value)} × (1 − ${fmt(r.value)})` : null;
      return { sym: "grad · out · (1 − out)", num };
    },
  },
  Relu: {
    summary: () => "out = max(a, 0) · the gradient passes where the input was positive",
    slots: (c) => {
      const r = c.result();
      return { sym: "grad · [out > 0]", num: r.value === null ? null : times(c.g, r.value > 0 ? 1 : 0) };
    },
  },
  Sqrt: {
    summary: () => "out = √a",
    slots: (c) => {
      const r = c.result();
      const num = c.g !== null && r.value !== null ? `${fmt(c.g)} / (2 × ${fmt(r.value)})` : null;
      return { sym: "grad / (2 · √a)", num };
    },
  },
  Sin: {
    summary: () => "out = sin(a)",
    slots: (c) => {
      const a = c.saved("self") ?? { label: "a", value: null };
      return { sym: `grad · cos(${a.label})`, num: a.value === null ? null : times(c.g, Math.cos(a.value)) };
    },
  },
  Cos: {
    summary: () => "out = cos(a)",
    slots: (c) => {
      const a = c.saved("self") ?? { label: "a", value: null };
      const num = a.value === null || c.g === null ? null : `−${times(c.g, Math.sin(a.value))}`;
      return { sym: `−grad · sin(${a.label})`, num };
    },
  },
  Abs: {
    summary: () => "out = |a|",
    slots: (c) => {
      const a = c.saved("self") ?? { label: "a", value: null };
      return { sym: `grad · sign(${a.label})`, num: a.value === null ? null : times(c.g, Math.sign(a.value)) };
    },
  },
  Sum: {
    summary: () => "out = sum(a) · every element contributed once",
    slots: (c, slot) => ({ sym: `grad copied to every element of ${shapeText(shapeOfTarget(c, slot))}` }),
  },
  Mean: {
    summary: () => "out = mean(a) · every element contributed 1/N",
    slots: (c, slot) => {
      const n = c.saved("self_sym_numel")?.value ?? numelOf(shapeOfTarget(c, slot));
      const num = c.g !== null && n !== null ? `${fmt(c.g)} / ${n}` : null;
      return { sym: `grad / N, copied to every element (N = ${n ?? "?"})`, num };
    },
  },
  Mm: {
    summary: () => "out = A @ B · matrix product",
    slots: (c, slot) =>
      slot === 0
        ? { sym: `grad @ ${transposed(operandLabel(c, "mat2", 1))}` }
        : { sym: `${transposed(operandLabel(c, "self", 0))} @ grad` },
  },
  Mv: {
    summary: () => "out = A @ v · matrix–vector product",
    slots: (c, slot) =>
      slot === 0 ? { sym: `grad ⊗ ${operandLabel(c, "vec", 1)}` } : { sym: `${transposed(operandLabel(c, "self", 0))} @ grad` },
  },
  Dot: {
    summary: () => "out = a · b · dot product",
    slots: (c, slot) => ({ sym: `grad · ${slot === 0 ? operandLabel(c, "tensor", 1) : operandLabel(c, "self", 0)}` }),
  },
  Bmm: {
    summary: () => "out = A @ B, batched",
    slots: (c, slot) =>
      slot === 0 ? { sym: `grad @ ${transposed(operandLabel(c, "mat2", 1))}` } : { sym: `${transposed(operandLabel(c, "self", 0))} @ grad` },
  },
  Addmm: {
    summary: () => "out = bias + x @ Wᵀ · a linear layer",
    slots: (c, slot) => {
      if (slot === 0) return { sym: "grad summed over the batch rows" };
      if (slot === 1) return { sym: `grad @ ${transposed(operandLabel(c, "mat2", 2))}` };
      return { sym: `${transposed(operandLabel(c, "mat1", 1))} @ grad` };
    },
  },
  T: { summary: () => "out = aᵀ", slots: () => ({ sym: "gradᵀ" }) },
  Transpose: { summary: () => "out = a with two dims swapped", slots: () => ({ sym: "grad with the dims swapped back" }) },
  Permute: { summary: () => "out = a with dims permuted", slots: () => ({ sym: "grad permuted back" }) },
  View: reshaped("out = a viewed with a new shape"),
  Reshape: reshaped("out = a reshaped"),
  UnsafeView: reshaped("out = a viewed with a new shape"),
  Squeeze: reshaped("out = a without its size-1 dims"),
  Unsqueeze: reshaped("out = a with a new size-1 dim"),
  Expand: {
    summary: () => "out = a broadcast to a bigger shape",
    slots: (c, slot) => ({ sym: `grad summed over the broadcast dims → ${shapeText(shapeOfTarget(c, slot))}` }),
  },
  Select: {
    summary: () => "out = a[i]",
    slots: (c, slot) => ({ sym: `grad placed into zeros of shape ${shapeText(shapeOfTarget(c, slot))}` }),
  },
  Slice: {
    summary: () => "out = a[i:j]",
    slots: (c, slot) => ({ sym: `grad placed into zeros of shape ${shapeText(shapeOfTarget(c, slot))}` }),
  },
  Index: {
    summary: () => "out = a[idx]",
    slots: (c, slot) => ({ sym: `grad scattered into zeros of shape ${shapeText(shapeOfTarget(c, slot))}` }),
  },
  CopySlices: {
    summary: () => "out = a with a[key] overwritten in place (a[0] = v) · what was overwritten gets no gradient from out",
    slots: (_c, slot) => ({ sym: slot === 0 ? "grad with the overwritten elements set to 0" : "grad of the overwritten elements" }),
  },
  IndexPut: {
    summary: () => "out = a with a[idx] = v (a mask or an index) · what was overwritten gets no gradient from out",
    slots: (_c, slot) => ({ sym: slot === 0 ? "grad with a[idx] set to 0" : "grad at idx" }),
  },
  Cat: { summary: () => "out = cat(a, b, ...)", slots: () => ({ sym: "grad sliced back into each input's part" }) },
  Stack: { summary: () => "out = stack(a, b, ...)", slots: () => ({ sym: "grad sliced back into each input's part" }) },
  Clone: identity,
  Alias: identity,
  ToCopy: { summary: () => "out = a converted (dtype or device)", slots: () => ({ sym: "grad converted back" }) },
  ...NN_RULES,
};

function numelOf(shape: number[] | null): number | null {
  return shape ? shape.reduce((a, b) => a * b, 1) : null;
}

/** The label of a saved operand, or of the edge target it flows to. */
function operandLabel(c: Ctx, savedName: string, slot: number): string {
  return c.saved(savedName)?.label ?? edgeTargetLabel(c.model, c.node.id, slot);
}

function inputLabel(c: Ctx, slot: number): string {
  return c.saved("self")?.label ?? edgeTargetLabel(c.model, c.node.id, slot);
}

/**
 * When gradients reached a node along several paths, the engine summed them before running
 * it: say so with the numbers (" = 18.75 + (−4)"), for one-element gradients.
 */
function pathsSum(model: TraceModel, entry: StepEntry): string {
  const exec = entry.exec;
  const call = model.backward(entry.backward);
  if (!exec || !call || scalarOf(exec.grad_in[0]) === null) return "";
  const arrived: [number, number][] = [];
  for (const { from, slot } of model.incomingOf(exec.node)) {
    const ran = call.byNode.get(from);
    if (!ran || ran.index >= entry.index || !ran.exec) continue;
    const v = scalarOf(ran.exec.grad_out[slot]);
    if (v !== null) arrived.push([ran.index, v]);
  }
  // In the order the engine sent them.
  const parts = arrived.sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  if (parts.length < 2) return "";
  return `, the sum of ${parts.length} paths: ${parts.map((v, i) => (i === 0 ? fmt(v) : fmtFactor(v))).join(" + ")}`;
}

/** ` (line 7)`: where the snippet hooked tensor `id`'s gradient, when the trace says. */
function hookLinesText(model: TraceModel, id: number | null): string {
  const lines = model.hookLines(id).filter((l) => l !== null);
  return lines.length ? ` (line ${lines.join(", ")})` : "";
}

/** Parenthesize a compound label after ∂: ∂y/∂(x**3), but ∂y/∂x. */
function d(label: string): string {
  return /^[\w.]+ᵀ?$/.test(label) ? label : `(${label})`;
}

/** `Wᵀ` -> `W`, `x` -> `xᵀ`, `a * b` -> `(a * b)ᵀ`. */
function transposed(label: string): string {
  if (label.endsWith("ᵀ")) return label.slice(0, -1);
  return /^[\w.]+$/.test(label) ? `${label}ᵀ` : `(${label})ᵀ`;
}

/** `MulBackward0` -> `Mul`; `AddmmBackward0` -> `Addmm`. */
/** A custom autograd.Function's node (`CubeBackward`, made by `Cube.apply`): its rule is the snippet's own backward. */
function customRule(model: TraceModel, node: NodeCreated): string | null {
  const op = model.op(node.op);
  if (!op?.api.endsWith(".apply") || node.name !== `${op.name}Backward`) return null;
  return `${op.name}.backward(ctx, grad) ran: the rule is your own, the gradient it returned flows on`;
}

export function ruleKey(nodeName: string): string {
  return nodeName.replace(/Backward\d*$/, "");
}

export function hasRule(nodeName: string): boolean {
  return ruleKey(nodeName) in RULES;
}

/** Write `before + added → after` for a leaf, with 0 for a .grad that was None. */
export function accumulationText(model: TraceModel, acc: GradAccumulated): string {
  const before = acc.before ? fmtValue(acc.before) : "0";
  return `${gradOf(model, acc.tensor)}: ${before} + ${fmtValue(acc.added)} → ${fmtValue(acc.after)}`;
}

/** Explain one stepper position: the rule of the executed node with its real numbers. */
export function explain(model: TraceModel, entry: StepEntry): Explanation | null {
  if (entry.kind !== "node" || !entry.exec) return null;
  const exec = entry.exec;
  const node = model.node(exec.node);
  if (!node) return null;
  const root = d(rootLabel(model, entry.backward));
  const c = new Ctx(model, node, exec.grad_in, exec.grad_out);
  const own = node.tensor !== null && node.name !== "AccumulateGrad" ? tensorExpr(model, node.tensor) : null;
  const gradText = exec.grad_in.map((v) => fmtValue(v)).join(", ") + pathsSum(model, entry);
  const first = model.backward(entry.backward)?.entries[0] === entry;
  const seed = first ? " (the seed: backward() starts from 1 at the root)" : "";
  // a hook changed what arrived (grad-hooks.ts): the node ran on the hook's gradient
  const hooked = hookedArrival(model, entry);
  const of = node.name === "AccumulateGrad" ? tensorExpr(model, node.tensor) : own;
  const incoming = hooked
    ? `grad = ${fmtValue(exec.grad_in[0])}: a hook${of ? ` on ${of}` : ""}${hookLinesText(model, node.tensor)} changed the ${of ? `∂${root}/∂${d(of)} = ` : ""}${fmtValue(hooked)} that arrived`
    : own
      ? `grad = ∂${root}/∂${d(own)} = ${gradText}${seed}`
      : `grad = ${gradText}${seed}`;

  if (node.name === "AccumulateGrad") {
    return {
      summary: `AccumulateGrad adds the gradient into ${gradOf(model, node.tensor)} (gradients accumulate with +=)`,
      incoming: hooked ? incoming : `grad = ∂${root}/∂${d(of ?? "?")} = ${gradText}`,
      lines: [],
      accumulations: entry.accs.map((a) => accumulationText(model, a)),
    };
  }

  const rule = RULES[ruleKey(node.name)];
  const lines: RuleLine[] = [];
  exec.grad_out.forEach((out, slot) => {
    const edge = node.edges[slot];
    if (!edge || edge.node === null || out === null) return;
    const target = edgeTargetLabel(model, node.id, slot);
    const result = fmtValue(out);
    const lhs = `∂${root}/∂${d(target)}`;
    const s = rule ? rule.slots(c, slot) : null;
    if (!s) {
      lines.push({ slot, text: `${lhs} ← ${result}` });
      return;
    }
    const parts = [lhs, s.sym];
    const small = isFull(out) && out.flat.length === 1;
    if (s.num && small && s.num !== result) parts.push(s.num);
    if (result !== s.sym) parts.push(result);
    lines.push({ slot, text: parts.join(" = ") });
  });
  return {
    summary: rule ? rule.summary(c) : (customRule(model, node) ?? `${node.name}: the gradient in, the gradients out`),
    incoming,
    lines,
    accumulations: [],
  };
}
