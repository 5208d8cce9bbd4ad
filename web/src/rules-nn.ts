// The local rules of the nodes that neural-network layers, activations and losses make
// (cross-entropy's LogSoftmax and NllLoss, softmax, convolution, pooling, the norms,
// embeddings, attention), read by rules.ts beside its elementwise and linear-algebra rules.
// Each says what the layer computed and where the gradient goes, in words: their tensors are
// rarely one number, so there is no substitution to write out.
import type { Rule } from "./rules";

/** A rule whose every edge reads the same. */
function rule(summary: string, sym: string): Rule {
  return { summary: () => summary, slots: () => ({ sym }) };
}

/** A rule whose edges (by input number) read differently. */
function perInput(summary: string, ...syms: string[]): Rule {
  return { summary: () => summary, slots: (_c, slot) => ({ sym: syms[Math.min(slot, syms.length - 1)] }) };
}

// PyTorch's reduction codes, as NllLossBackward0 saves them
const SUM = 2;

export const NN_RULES: Record<string, Rule> = {
  MseLoss: perInput("out = mean((x − y)²)", "grad · 2(x − y) / N", "−grad · 2(x − y) / N"),
  NllLoss: {
    summary: () => "out = −mean of each row's log-probability at its target class (cross-entropy's second half)",
    slots: (c) => ({
      sym: c.saved("reduction")?.value === SUM ? "−grad at each row's target class, 0 elsewhere" : "−grad / N at each row's target class, 0 elsewhere (N rows)",
    }),
  },
  LogSoftmax: rule("out = x − logsumexp(x) · log-probabilities (cross-entropy's first half)", "grad − softmax(x) · Σ grad"),
  Softmax: rule("out = softmax(x) = eˣ / Σ eˣ", "out · (grad − Σ grad · out)"),
  Where: perInput("out = where(cond, a, b)", "grad where cond holds, 0 elsewhere", "grad where cond fails, 0 elsewhere"),
  Clamp: rule("out = clamp(x, min, max)", "grad where x was inside [min, max], 0 where it was clamped"),
  ClampMin: rule("out = clamp(x, min=…)", "grad where x ≥ min, 0 where it was clamped"),
  ClampMax: rule("out = clamp(x, max=…)", "grad where x ≤ max, 0 where it was clamped"),
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
