// The local rules of the nodes that neural-network layers, activations and losses make
// (cross-entropy's LogSoftmax and NllLoss, softmax, convolution, pooling, the norms,
// embeddings, attention), read by rules.ts beside its elementwise and linear-algebra rules.
// Each says what the layer computed and where the gradient goes, in words: their tensors are
// rarely one number, so there is no substitution to write out.
import type { Ctx, Rule } from "./rule-context";

/** A rule whose every edge reads the same. */
function rule(summary: string, sym: string): Rule {
  return { summary: () => summary, slots: () => ({ sym }) };
}

/** A rule whose edges (by input number) read differently. */
function perInput(summary: string, ...syms: string[]): Rule {
  return { summary: () => summary, slots: (_c, slot) => ({ sym: syms[Math.min(slot, syms.length - 1)] }) };
}

// PyTorch's reduction codes, as NllLossBackward0 and MseLossBackward0 save them
const NONE = 0;
const MEAN = 1;
const SUM = 2;

/** The number of elements of a saved tensor, from its recorded shape. */
function numelOf(saved: { shape?: number[] | null } | null): number | null {
  return saved?.shape ? saved.shape.reduce((a, b) => a * b, 1) : null;
}

/** The softmax's dim, as `over dim 1`, when the node saved it. */
function overDim(c: Ctx): string {
  const dim = c.saved("dim")?.label;
  return dim !== undefined ? ` (Σ over dim ${dim})` : "";
}

/** clamp's bounds as the snippet passed them: `[2, 4.5]`, else `[min, max]`. */
function bounds(c: Ctx): { min: string; max: string } {
  return { min: c.saved("min")?.label ?? "min", max: c.saved("max")?.label ?? "max" };
}

export const NN_RULES: Record<string, Rule> = {
  MseLoss: {
    summary: (c) => {
      const reduction = c.saved("reduction")?.value;
      return reduction === SUM ? "out = sum((x − y)²)" : reduction === NONE ? "out = (x − y)² elementwise" : "out = mean((x − y)²)";
    },
    slots: (c, slot) => {
      // only a mean divides by N (reduction="sum" and "none" do not)
      const mean = ![SUM, NONE].includes(c.saved("reduction")?.value ?? MEAN);
      const n = mean ? numelOf(c.node.saved.find((x) => x.name === "self") ?? null) : null;
      const sym = `grad · 2(x − y)${mean ? ` / N${n !== null ? ` (N = ${n})` : ""}` : ""}`;
      return { sym: slot === 0 ? sym : `−${sym}` };
    },
  },
  NllLoss: {
    summary: () => "out = −mean of each row's log-probability at its target class (cross-entropy's second half)",
    slots: (c) => ({
      sym: c.saved("reduction")?.value === SUM ? "−grad at each row's target class, 0 elsewhere" : "−grad / N at each row's target class, 0 elsewhere (N rows)",
    }),
  },
  LogSoftmax: {
    summary: () => "out = x − logsumexp(x) · log-probabilities (cross-entropy's first half)",
    slots: (c) => ({ sym: `grad − softmax(x) · Σ grad${overDim(c)}` }),
  },
  // the sum is of the product: out · (grad − Σ grad · out) reads as if only grad were summed
  Softmax: {
    summary: () => "out = softmax(x) = eˣ / Σ eˣ",
    slots: (c) => ({ sym: `out · (grad − Σ(grad · out))${overDim(c)}` }),
  },
  Where: perInput("out = where(cond, a, b)", "grad where cond holds, 0 elsewhere", "grad where cond fails, 0 elsewhere"),
  Clamp: {
    summary: (c) => `out = clamp(x, ${bounds(c).min}, ${bounds(c).max})`,
    slots: (c) => ({ sym: `grad where x was inside [${bounds(c).min}, ${bounds(c).max}], 0 where it was clamped` }),
  },
  ClampMin: {
    summary: (c) => `out = clamp(x, min=${bounds(c).min})`,
    slots: (c) => ({ sym: `grad where x ≥ ${bounds(c).min}, 0 where it was clamped` }),
  },
  ClampMax: {
    summary: (c) => `out = clamp(x, max=${bounds(c).max})`,
    slots: (c) => ({ sym: `grad where x ≤ ${bounds(c).max}, 0 where it was clamped` }),
  },
  Max: rule("out = the largest element (along a dim)", "grad at each maximum's position, 0 elsewhere"),
  Min: rule("out = the smallest element (along a dim)", "grad at each minimum's position, 0 elsewhere"),
  Gelu: rule("out = x · Φ(x) (Φ: the normal CDF)", "grad · (Φ(x) + x · φ(x))"),
  LeakyRelu: rule("out = x where x > 0, slope · x elsewhere", "grad where x > 0, slope · grad elsewhere"),
  Log1P: rule("out = log(1 + x)", "grad / (1 + x)"),
  NanToNum: rule("out = x with NaN and ±inf replaced by numbers", "grad where x was finite, 0 elsewhere"),
  LinalgVectorNorm: rule("out = ‖x‖ (the 2-norm)", "grad · x / ‖x‖"),
  Std: rule("out = std(x)", "grad · (x − mean) / ((N − 1) · std)"),
  Embedding: rule("out = W[indices] · a table lookup", "grad's rows added into the looked-up rows of W, 0 elsewhere"),
  Convolution: perInput(
    "out = conv(x, W) + b",
    "grad convolved back with W (a transposed convolution)",
    "grad correlated with x",
    "grad summed over the batch and every position",
  ),
  MaxPool2DWithIndices: rule("out = the largest element of each window", "grad routed to each window's maximum, 0 elsewhere"),
  AvgPool2D: rule("out = the mean of each window", "grad spread evenly over each window"),
  NativeBatchNorm: perInput(
    "out = (x − batch mean) / batch std · γ + β",
    "grad through the normalisation (the batch's mean and std depend on x too)",
    "Σ grad · x̂ over the batch and positions",
    "Σ grad over the batch and positions",
  ),
  NativeLayerNorm: perInput(
    "out = (x − mean) / std over each row's features · γ + β",
    "grad through the normalisation (each row's mean and std depend on x too)",
    "Σ grad · x̂ over the rows",
    "Σ grad over the rows",
  ),
  ScaledDotProductFlashAttentionForCpu: perInput(
    "out = softmax(Q Kᵀ / √d) V · attention",
    "grad through the attention weights into Q",
    "grad through the attention weights into K",
    "attention weightsᵀ @ grad, into V",
  ),
};
