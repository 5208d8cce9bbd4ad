// The chain rule written out: for one executed node, each local derivative rule with the
// real numbers (for small tensors), and each accumulation into a leaf's .grad.
//
// The numbers come from the trace only: the incoming gradient (`grad_in`), what the node
// saved (tensor values recorded when they were made, scalars as repr), and the gradient it
// sent on each edge (`grad_out`). The right-hand side of every line is the real
// `grad_out`, never a value recomputed here.
import { hookedArrival } from "./grad-hooks";
import { edgeTargetLabel, gradOf, rootLabel, tensorExpr } from "./naming";
import { Ctx, factor, type Rule, times } from "./rule-context";
import { LAYER_RULES } from "./rules-layers";
import { MATH_RULES } from "./rules-math";
import { isDropout, NN_RULES } from "./rules-nn";
import { SHAPE_RULES } from "./rules-shape";
import type { StepEntry, TraceModel } from "./trace-model";
import type { NodeCreated } from "./types/events";
import { fmt, fmtFactor, fmtValue, isFull, numel, shapeText } from "./values";
import { accumulationText, d, hookLinesText, outputsIncoming, pathsSum, seedText } from "./walk-notes";

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
  /** "x.grad: None → 14.75", "x.grad: 4 + 4 → 8" */
  accumulations: string[];
}

const SUP: Record<string, string> = { "2": "²", "3": "³", "4": "⁴" };

function power(base: string, e: number): string {
  if (e === 1) return base;
  const sup = SUP[String(e)];
  return sup ? `${base}${sup}` : `${base}^${fmtFactor(e)}`;
}

function nums(c: Ctx, f: (g: number) => string | null): string | null {
  return c.g === null ? null : f(c.g);
}

const identity: Rule = {
  summary: () => "passes the gradient through unchanged",
  slots: () => ({ sym: "grad" }),
};

/** `T` when the node came from a transpose read as an attribute (`w.T`; likewise mT, H, mH), else null. */
function attributeOf(c: Ctx): string | null {
  const name = c.model.op(c.node.op)?.name ?? "";
  return ["T", "mT", "H", "mH"].includes(name) ? name : null;
}

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
      // a negative alpha in brackets: it read `−−2 · grad`
      if (alpha !== 1) return { sym: `−${fmtFactor(alpha)} · grad`, num: nums(c, (g) => `−${fmtFactor(alpha)} × ${fmtFactor(g)}`) };
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
    summary: (c) => {
      // `k / b` runs as k times reciprocal(b): this node is the "times k"
      const k = c.constant("rdiv");
      const op = c.model.op(c.node.op);
      const b = op ? factor(tensorExpr(c.model, op.inputs[0])) : "b";
      if (k) return `out = ${k.label} · (1 / ${b}) · PyTorch computes ${k.label} / ${b} as ${k.label} times the reciprocal 1 / ${b}`;
      return "out = a * b · product rule: each side gets grad times the other side";
    },
    slots: (c, slot) => {
      const other =
        (slot === 0 ? c.saved("other") : c.saved("self")) ?? c.constant("mul", "rmul", "multiply", "rdiv") ?? c.inferredFactor(slot) ?? { label: "other", value: null };
      const label = other.value !== null && other.label === fmt(other.value) ? fmt(other.value) : other.label;
      return { sym: `grad · ${factor(label)}`, num: times(c.g, other.value) };
    },
  },
  Div: {
    summary: (c) => (rounded(c) ? `out = a / b rounded (rounding_mode=${rounded(c)}) · a staircase: flat between its steps, so no gradient` : "out = a / b · quotient rule"),
    slots: (c, slot) => {
      if (rounded(c)) return { sym: "0 (rounding has slope 0)" };
      const a = c.saved("self") ?? { label: "a", value: null };
      // the engine multiplied a's gradient by 1 / b: b is the inverse of that factor
      const ratio = slot === 0 ? c.inferredFactor(0)?.value : null;
      const inferred = ratio ? { label: fmt(1 / ratio), value: 1 / ratio } : null;
      const b = c.saved("other") ?? c.constant("div", "true_divide", "divide") ?? inferred ?? { label: "b", value: null };
      if (slot === 0) {
        const num = c.g !== null && b.value !== null ? `${fmt(c.g)} / ${fmtFactor(b.value)}` : null;
        return { sym: `grad / ${factor(b.label)}`, num };
      }
      const num =
        c.g !== null && a.value !== null && b.value !== null
          ? `−${fmtFactor(c.g)} × ${fmtFactor(a.value)} / ${fmtFactor(b.value)}²`
          : null;
      return { sym: `−grad · ${factor(a.label)} / ${factor(b.label)}²`, num };
    },
  },
  Pow: {
    summary: (c) => {
      const e = c.saved("exponent");
      if (c.node.name === "PowBackward2") {
        // a Python number raised to a tensor (`2 ** x`): an exponential, not the power rule
        const k = c.saved("self")?.label ?? "k";
        return `out = ${k} ** a · an exponential: its derivative is out · ln(${k})`;
      }
      return e && c.node.name.endsWith("0") ? `out = a**${e.label} · power rule` : "out = a ** b · power rule for a, exponential rule for b";
    },
    slots: (c, slot) => {
      const base = c.saved("self") ?? { label: "a", value: null };
      const e = c.saved("exponent");
      if (c.node.name === "PowBackward0" && e && e.value !== null) {
        const p = e.value;
        // (x − 1.5)**2: "grad · 2 · x − 1.5" would read as (grad · 2 · x) − 1.5
        const sym = p === 1 ? "grad" : `grad · ${fmt(p)} · ${power(factor(base.label), p - 1)}`;
        // x ** 1 passes its gradient on as it came ("1 × 1 × 3^0" said nothing)
        const num = c.g === null ? null : p === 1 ? fmt(c.g) : base.value !== null ? [fmt(c.g), fmtFactor(p), power(fmtFactor(base.value), p - 1)].join(" × ") : null;
        return { sym, num };
      }
      const out = c.result();
      // the exponent's side (PowBackward1's input 1, PowBackward2's only input): out · ln(base)
      if (slot === 1 || c.node.name === "PowBackward2") {
        const num = c.g !== null && out.value !== null && base.value !== null ? `${fmt(c.g)} × ${fmtFactor(out.value)} × ln(${fmt(base.value)})` : null;
        return { sym: `grad · ${factor(out.label)} · ln(${base.label})`, num };
      }
      const b = e ?? { label: "b", value: null };
      const num =
        c.g !== null && base.value !== null && b.value !== null
          ? `${fmt(c.g)} × ${fmtFactor(b.value)} × ${fmtFactor(base.value)}^(${fmt(b.value)} − 1)`
          : null;
      return { sym: `grad · ${factor(b.label)} · ${factor(base.label)}^(${b.label} − 1)`, num };
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
      return { sym: `grad / ${factor(a.label)}`, num };
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
    summary: (c) => `out = √${factor(c.input(0, "self", "a"))}`,
    slots: (c) => {
      const r = c.result();
      const num = c.g !== null && r.value !== null ? `${fmt(c.g)} / (2 × ${fmt(r.value)})` : null;
      return { sym: `grad / (2 · √${factor(c.input(0, "self", "a"))})`, num };
    },
  },
  Reciprocal: {
    summary: (c) => `out = 1 / ${factor(c.input(0, "self", "a"))}`,
    slots: (c) => {
      // PyTorch computes −grad · out², which is −grad / a²
      const r = c.result();
      const num = c.g !== null && r.value !== null && r.value !== 0 ? `−${fmtFactor(c.g)} / ${fmtFactor(1 / r.value)}²` : null;
      return { sym: `−grad / ${factor(c.input(0, "self", "a"))}²`, num };
    },
  },
  Sum: {
    summary: (c) => (reducedDims(c) ? `out = sum(a) over ${dimsText(reducedDims(c)!)} · every element contributed once` : "out = sum(a) · every element contributed once"),
    slots: (c, slot) => {
      const dims = reducedDims(c);
      const to = shapeText(shapeOfTarget(c, slot));
      return { sym: dims ? `grad copied along ${dimsText(dims)} → ${to}` : `grad copied to every element of ${to}` };
    },
  },
  Mean: {
    summary: (c) => (reducedDims(c) ? `out = mean(a) over ${dimsText(reducedDims(c)!)} · each element contributed 1/N to its mean` : "out = mean(a) · every element contributed 1/N"),
    slots: (c, slot) => {
      const dims = reducedDims(c);
      // N: the elements averaged into each output element (a mean over a dim averages fewer than all)
      const input = numelOf(shapeOfTarget(c, slot));
      const output = c.gradIn[0] ? numel(c.gradIn[0].shape) : null;
      const n = dims ? (input !== null && output ? input / output : null) : (c.saved("self_sym_numel")?.value ?? input);
      const num = c.g !== null && n !== null ? `${fmt(c.g)} / ${n}` : null;
      const where = dims ? `copied along ${dimsText(dims)}` : "copied to every element";
      return { sym: `grad / N, ${where} (N = ${n ?? "?"})`, num };
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
      slot === 0 ? { sym: `grad ⊗ ${factor(operandLabel(c, "vec", 1))}` } : { sym: `${transposed(operandLabel(c, "self", 0))} @ grad` },
  },
  Dot: {
    summary: () => "out = a · b · dot product",
    slots: (c, slot) => ({ sym: `grad · ${factor(slot === 0 ? operandLabel(c, "tensor", 1) : operandLabel(c, "self", 0))}` }),
  },
  Bmm: {
    summary: () => "out = A @ B, batched",
    slots: (c, slot) =>
      slot === 0 ? { sym: `grad @ ${transposed(operandLabel(c, "mat2", 1))}` } : { sym: `${transposed(operandLabel(c, "self", 0))} @ grad` },
  },
  // attention's scores plus its mask inside nn.MultiheadAttention: out = β·self + α·(A @ B)
  Baddbmm: {
    summary: (c) => `out = ${scaled(c, "beta", "M")} + ${scaled(c, "alpha", "A @ B")}, batched · the mask or bias M plus a batched product`,
    slots: (c, slot) => {
      const alpha = scaled(c, "alpha", "");
      if (slot === 0) return { sym: scaled(c, "beta", "grad") };
      if (slot === 1) return { sym: `${alpha}grad @ ${transposed(operandLabel(c, "batch2", 2))}` };
      return { sym: `${alpha}${transposed(operandLabel(c, "batch1", 1))} @ grad` };
    },
  },
  // nn.Linear's (bias + x @ Wᵀ), or torch.addmm(M, A, B, beta=, alpha=) written out
  Addmm: {
    summary: (c) =>
      c.model.op(c.node.op)?.name === "addmm" ? `out = ${scaled(c, "beta", "M")} + ${scaled(c, "alpha", "A @ B")}` : "out = bias + x @ Wᵀ · a linear layer",
    slots: (c, slot) => {
      const alpha = scaled(c, "alpha", "");
      // a bias of its own shape was broadcast over the rows (a vector, a row); M of the output's shape was not
      const [to, from] = [shapeOfTarget(c, 0), c.gradIn[0]?.shape];
      const rows = !to || !from || shapeText(to) !== shapeText(from);
      if (slot === 0) return { sym: scaled(c, "beta", rows ? "grad summed over the batch rows" : "grad") };
      if (slot === 1) return { sym: `${alpha}grad @ ${transposed(operandLabel(c, "mat2", 2))}` };
      return { sym: `${alpha}${transposed(operandLabel(c, "mat1", 1))} @ grad` };
    },
  },
  T: { summary: () => "out = aᵀ", slots: () => ({ sym: "gradᵀ" }) },
  Transpose: {
    summary: (c) => (attributeOf(c) ? `out = ${c.input()}.${attributeOf(c)} · its last two dims swapped` : "out = a with two dims swapped"),
    slots: () => ({ sym: "grad with the dims swapped back" }),
  },
  Permute: {
    summary: (c) => {
      const attribute = attributeOf(c);
      if (!attribute) return "out = a with dims permuted";
      return `out = ${c.input()}.${attribute} · ${shapeOfTarget(c, 0)?.length === 2 ? "its rows and columns swapped" : "its dims in reverse order"}`;
    },
    slots: (c) => {
      if (!attributeOf(c)) return { sym: "grad permuted back" };
      return { sym: shapeOfTarget(c, 0)?.length === 2 ? "gradᵀ, rows and columns swapped back" : "grad with its dims reversed back" };
    },
  },
  View: reshaped("out = a viewed with a new shape"),
  Reshape: reshaped("out = a reshaped"),
  ReshapeAlias: reshaped("out = a reshaped"),
  UnsafeView: reshaped("out = a viewed with a new shape"),
  Squeeze: reshaped("out = a without its size-1 dims"),
  Unsqueeze: reshaped("out = a with a new size-1 dim"),
  Repeat: {
    summary: (c) => {
      // repeats as saved: "(2,)" for x.repeat(2), "(2, 3)" for x.repeat(2, 3)
      const reps = (c.saved("repeats")?.label ?? "").match(/\d+/g) ?? [];
      const a = factor(c.input(0, "self", "a"));
      return `out = ${a}.repeat(${reps.join(", ")}) · copies of ${a} laid side by side`;
    },
    slots: (c, slot) => ({ sym: `grad summed over the copies → ${shapeText(shapeOfTarget(c, slot))}` }),
  },
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
  ...MATH_RULES,
  ...SHAPE_RULES,
  ...LAYER_RULES,
};

/** The dims a sum or mean over a dim reduced (its saved `dim`), or null for a reduction over everything. */
function reducedDims(c: Ctx): number[] | null {
  const dim = c.node.saved.find((x) => x.name === "dim")?.scalar;
  if (!dim) return null;
  const dims = (dim.match(/-?\d+/g) ?? []).map(Number);
  return dims.length ? dims : null;
}

function dimsText(dims: number[]): string {
  return dims.length === 1 ? `dim ${dims[0]}` : `dims ${dims.join(", ")}`;
}

/**
 * Ops whose inputs broadcast to the output elementwise: an input with fewer elements than the
 * gradient (a [3×1] added to a [1×4]) gets the rule's gradient summed over the dims it was
 * broadcast along, back to its own shape.
 */
const BROADCASTING = new Set(["Add", "Sub", "Rsub", "Mul", "Div", "Pow", "Where", "Maximum", "Minimum", "Atan2"]);

/** `, summed over the broadcast dim 1 → [3×1]` when input `slot` was broadcast, else "". */
function broadcastNote(c: Ctx, slot: number): string {
  const grad = c.gradIn[0]?.shape;
  const to = shapeOfTarget(c, slot);
  if (!grad || !to || !BROADCASTING.has(ruleKey(c.node.name)) || numel(to) === numel(grad)) return "";
  // align from the right: a dim the input lacks, or holds once, was broadcast
  const offset = grad.length - to.length;
  const dims = grad.flatMap((size, i) => (i < offset || (to[i - offset] === 1 && size !== 1) ? [i] : []));
  return `, summed over the broadcast ${dimsText(dims)} → ${shapeText(to)}`;
}

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

/** `what` times the saved scalar `name` (`0.5 · grad`); `what` alone when it is 1 or not saved. */
function scaled(c: Ctx, name: string, what: string): string {
  const s = c.saved(name);
  return !s || s.value === 1 ? what : `${s.label} · ${what}`;
}

/** The rounding mode of a division that rounds (`'floor'`, `'trunc'`), else null. */
function rounded(c: Ctx): string | null {
  const mode = c.saved("rounding_mode")?.label;
  return mode && mode !== "None" ? mode : null;
}

/** `Wᵀ` -> `W`, `x` -> `xᵀ`, `a * b` -> `(a * b)ᵀ`. */
function transposed(label: string): string {
  if (label.endsWith("ᵀ")) return label.slice(0, -1);
  return /^[\p{L}\p{N}_.₀-₉]+$/u.test(label) ? `${label}ᵀ` : `(${label})ᵀ`;
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
  const seed = seedText(model, entry);
  // a hook changed what arrived (grad-hooks.ts): the node ran on the hook's gradient
  const hooked = hookedArrival(model, entry);
  const of = node.name === "AccumulateGrad" ? tensorExpr(model, node.tensor) : own;
  const incoming = hooked
    ? `grad = ${fmtValue(exec.grad_in[0])}: a hook${of ? ` on ${of}` : ""}${hookLinesText(model, node.tensor)} changed the ${of ? `∂${root}/∂${d(of)} = ` : ""}${fmtValue(hooked)} that arrived`
    : (outputsIncoming(model, entry, root) ??
      (own ? `grad = ${seed.given ? "" : `∂${root}/∂${d(own)} = `}${gradText}${seed.text}` : `grad = ${gradText}${seed.text}`));

  if (node.name === "AccumulateGrad") {
    return {
      summary: `AccumulateGrad adds the gradient into ${gradOf(model, node.tensor)} (gradients accumulate with +=)`,
      // a leaf as the root (`x.backward(g)`): its AccumulateGrad is the call's first node, given the seed
      incoming: hooked ? incoming : `grad = ${seed.given ? "" : `∂${root}/∂${d(of ?? "?")} = `}${gradText}${seed.text}`,
      lines: [],
      accumulations: entry.accs.map((a) => accumulationText(model, a)),
    };
  }

  const rule = RULES[isDropout(model, node) ? "Dropout" : ruleKey(node.name)];
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
    const parts = [lhs, s.sym + broadcastNote(c, slot)];
    const small = isFull(out) && out.flat.length === 1;
    if (s.num && small && s.num !== result) parts.push(s.num);
    if (result !== s.sym) parts.push(result);
    lines.push({ slot, text: parts.join(" = ") });
  });
  return {
    summary: rule ? rule.summary(c) : (customRule(model, node) ?? `${node.name}: no rule is written out for this op; the gradients below are the ones PyTorch computed`),
    incoming,
    lines,
    accumulations: [],
  };
}
