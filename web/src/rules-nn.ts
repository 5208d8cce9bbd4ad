// The local rules of the nodes that neural-network layers, activations and losses make
// (cross-entropy's LogSoftmax and NllLoss, softmax, convolution, pooling, the norms,
// embeddings, attention), and of the reductions and steps a course meets next (var, max
// with its ties, clamp at its bounds, split, cumsum, round), read by rules.ts beside its
// elementwise and linear-algebra rules.
// Each says what the layer computed and where the gradient goes, in words: their tensors are
// rarely one number, so there is no substitution to write out.
import { type Ctx, factor, perInput, type Rule, rule, savedDim, x } from "./rule-context";
import type { TraceModel } from "./trace-model";
import type { NodeCreated } from "./types/events";

/**
 * Whether `node` is the MulBackward0 of a dropout (on the CPU, dropout multiplies by a
 * random mask): rules.ts reads it with the `Dropout` rule, not as a product of two tensors.
 */
export function isDropout(model: TraceModel, node: NodeCreated): boolean {
  return node.name.startsWith("MulBackward") && /dropout/.test(model.op(node.op)?.name ?? "");
}

/** A number as the snippet would write it: `2`, `0.5`. */
function fmtBeta(v: number): string {
  return String(Number(v.toPrecision(4)));
}


// PyTorch's reduction codes, as NllLossBackward0 and MseLossBackward0 save them
const NONE = 0;
const MEAN = 1;
const SUM = 2;


/** The softmax's dim, as `over dim 1`, when the node saved it. */
function overDim(c: Ctx): string {
  const dim = savedDim(c);
  return dim !== undefined ? ` (Σ over dim ${dim})` : "";
}

/** where's condition by the snippet's expression (`x > 0`), else `cond`. */
function cond(c: Ctx): string {
  const label = c.saved("condition")?.label;
  return label && !/Backward|^t\d+$/.test(label) ? label : "cond";
}


/**
 * A loss's two sides: the prediction by its name (`x` when it has none) and the target by
 * its name when it is a plain variable, else `y` (a literal reads `tensor(…)`).
 */
export function sides(c: Ctx): { x: string; y: string } {
  const target = c.saved("target")?.label ?? "";
  if (/^[\p{L}_][\p{L}\p{N}_.₀-₉]*$/u.test(target)) return { x: x(c), y: target };
  // the textbook y, unless the snippet has a y of its own, which the formula would seem to
  // subtract (`(y[:, 0:2] − y)²` for a target of zeros)
  const ownY = [...c.model.tensors.values()].some((t) => t.name === "y");
  return { x: x(c), y: ownY ? "target" : "y" };
}

/** ` / N (N = 3)` for a loss with reduction="mean", "" for "sum" and "none". */
export function perN(c: Ctx): string {
  const reduction = c.saved("reduction")?.value ?? MEAN;
  if (reduction !== MEAN) return "";
  const n = c.numelOf("self");
  return ` / N${n !== null ? ` (N = ${n})` : ""}`;
}

/** `mean(…)`, `sum(…)` or `…` elementwise, as a loss's reduction wraps its terms. */
export function reduced(c: Ctx, terms: string): string {
  const reduction = c.saved("reduction")?.value ?? MEAN;
  return reduction === SUM ? `sum(${terms})` : reduction === NONE ? `${terms} elementwise` : `mean(${terms})`;
}

/**
 * clamp's bounds as the snippet passed them (`0`, `1.0`); a bound it left out is null
 * (`x.clamp(min=0)` saves no max).
 */
function bounds(c: Ctx): { min: string | null; max: string | null } {
  return { min: c.saved("min")?.label ?? null, max: c.saved("max")?.label ?? null };
}

/** The clamp rule for whichever bounds were given: both, only min, or only max. */
const clampRule: Rule = {
  summary: (c) => {
    const { min, max } = bounds(c);
    const args = [min !== null && max !== null ? `${min}, ${max}` : min !== null ? `min=${min}` : max !== null ? `max=${max}` : ""];
    return `out = clamp(${x(c)}${args[0] ? `, ${args[0]}` : ""})`;
  },
  slots: (c) => {
    const { min, max } = bounds(c);
    const v = x(c);
    // PyTorch passes the gradient where min ≤ x ≤ max: at a bound itself too (relu at 0 does not)
    const inside = min !== null && max !== null ? `${min} ≤ ${v} ≤ ${max}` : min !== null ? `${v} ≥ ${min}` : max !== null ? `${v} ≤ ${max}` : null;
    const at = min !== null && max !== null ? "the bounds included" : "the bound included";
    return { sym: inside ? `grad where ${inside} (${at}), 0 where it was clamped` : "grad" };
  },
};

/** max or min of a whole tensor, or along a dim: where its gradient goes, ties included. */
function extremeRule(word: "max" | "min", amax: boolean): Rule {
  const largest = word === "max" ? "largest" : "smallest";
  return {
    summary: (c) => {
      const dim = savedDim(c)?.replace(/^\((-?\d+),\)$/, "$1");
      const name = amax ? `a${word}` : word;
      return dim !== undefined
        ? `out = ${name}(${x(c)}, dim=${dim}) · the ${largest} element along dim ${dim}`
        : `out = ${name}(${x(c)}) · the ${largest} element`;
    },
    slots: (c) => {
      // max(dim) (MaxBackward0) routes to the index it returned; max() and amax split a tie evenly
      if (!amax && c.saved("dim") !== null) {
        return { sym: `grad at the index ${word}(dim) returned, 0 elsewhere (a tie gets it at that one index only)` };
      }
      return { sym: `grad at the ${word}imum, 0 elsewhere (k tied ${word}ima share it: grad / k each)` };
    },
  };
}

/** torch.maximum / torch.minimum of two tensors: each side gets the gradient where it won, half at a tie. */
function pairwiseRule(word: "maximum" | "minimum"): Rule {
  const beats = word === "maximum" ? ">" : "<";
  return {
    summary: (c) => `out = ${word}(${factor(c.input(0, "self", "a"))}, ${factor(c.input(1, "other", "b"))}) elementwise`,
    slots: (c, slot) => {
      const [me, other] = slot === 0 ? [c.input(0, "self", "a"), c.input(1, "other", "b")] : [c.input(1, "other", "b"), c.input(0, "self", "a")];
      return { sym: `grad where ${factor(me)} ${beats} ${factor(other)}, grad / 2 where they tie, 0 elsewhere` };
    },
  };
}

/** The divisor of var and std: N − 1 (Bessel's correction, the default), or N − correction; and N. */
export function dof(c: Ctx): { divisor: string; n: string } {
  const correction = c.saved("correction")?.value ?? 1;
  const inputs = c.numelOf("self");
  const outputs = c.gradIn[0] ? c.gradIn[0].shape.reduce((a, b) => a * b, 1) : null;
  const n = inputs !== null && outputs ? inputs / outputs : null;
  return { divisor: correction === 0 ? "N" : `(N − ${correction})`, n: n !== null ? ` (N = ${n})` : "" };
}

/** `, dim=1` (or `, dim=(0, 1)`) when a var or std reduced over dims, else "". */
function alongDim(c: Ctx): string {
  const dims = savedDim(c)?.match(/-?\d+/g);
  return dims?.length ? `, dim=${dims.length > 1 ? `(${dims.join(", ")})` : dims[0]}` : "";
}

/** A step function (round, floor, sign): flat between its jumps, so its gradient is 0. */
function flat(name: string): Rule {
  return {
    summary: (c) => `out = ${name}(${x(c)}) · flat between its jumps`,
    slots: () => ({ sym: `0 (${name} is flat between its jumps: no gradient passes)` }),
  };
}

/** split / chunk / unbind: each piece's gradient goes back to where the piece came from. */
const pieces: Rule = {
  summary: (c) => `out = the pieces of ${x(c)} (split, chunk or unbind)`,
  slots: () => ({ sym: "each piece's grad put back in its place (zeros where a piece got none)" }),
};

/** A p-norm's p: linalg.vector_norm saves it as `ord`, Tensor.norm as `p`; 2 when neither. */
function order(c: Ctx): number {
  return c.saved("ord")?.value ?? c.saved("p")?.value ?? 2;
}

/** ‖x‖ₚ: the 2-norm sends grad · x / ‖x‖, the 1-norm grad · sign(x). */
const vectorNorm: Rule = {
  summary: (c) => {
    const ord = order(c);
    return ord === 2 ? `out = ‖${x(c)}‖ (the 2-norm: √Σ ${x(c)}²)` : `out = ‖${x(c)}‖ (the ${fmtBeta(ord)}-norm)`;
  },
  slots: (c) => {
    const ord = order(c);
    if (ord === 2) return { sym: `grad · ${x(c)} / ‖${x(c)}‖ (0 where ‖${x(c)}‖ = 0)` };
    if (ord === 1) return { sym: `grad · sign(${x(c)})` };
    return { sym: `grad · sign(${x(c)}) · |${x(c)}|^(p − 1) / ‖${x(c)}‖^(p − 1) (p = ${fmtBeta(ord)})` };
  },
};

export const NN_RULES: Record<string, Rule> = {
  MseLoss: {
    summary: (c) => {
      const { x: p, y } = sides(c);
      return `out = ${reduced(c, `(${p} − ${y})²`)}`;
    },
    slots: (c, slot) => {
      // only a mean divides by N (reduction="sum" and "none" do not)
      const { x: p, y } = sides(c);
      const sym = `grad · 2(${p} − ${y})${perN(c)}`;
      return { sym: slot === 0 ? sym : `−${sym}` };
    },
  },
  L1Loss: {
    summary: (c) => `out = ${reduced(c, `|${sides(c).x} − ${sides(c).y}|`)}`,
    slots: (c, slot) => ({ sym: `${slot === 0 ? "" : "−"}grad · sign(${sides(c).x} − ${sides(c).y})${perN(c)} (sign(0) = 0)` }),
  },
  SmoothL1Loss: {
    summary: (c) => {
      const beta = c.saved("beta")?.label ?? "1.0";
      return `out = ${reduced(c, "ℓ(d)")} with d = ${sides(c).x} − ${sides(c).y}: ℓ(d) = d² / 2β where |d| < β, else |d| − β/2 (β = ${beta})`;
    },
    slots: (c, slot) => ({ sym: `${slot === 0 ? "" : "−"}grad · clamp(d / β, −1, 1)${perN(c)}` }),
  },
  BinaryCrossEntropy: {
    summary: (c) => {
      const { x: p, y } = sides(c);
      return `out = ${reduced(c, `−(${y} · log ${p} + (1 − ${y}) · log(1 − ${p}))`)}`;
    },
    slots: (c, slot) => {
      const { x: p, y } = sides(c);
      const weighted = c.saved("weight") !== null ? " · weight" : "";
      if (slot !== 0) return { sym: `−grad · log(${p} / (1 − ${p}))${weighted}${perN(c)}` };
      return { sym: `grad · (${p} − ${y}) / (${p} · (1 − ${p}))${weighted}${perN(c)}` };
    },
  },
  BinaryCrossEntropyWithLogits: {
    summary: (c) => {
      const { x: z, y } = sides(c);
      return `out = ${reduced(c, `−(${y} · log σ(${z}) + (1 − ${y}) · log(1 − σ(${z})))`)} · the sigmoid and the BCE in one`;
    },
    slots: (c, slot) => {
      const { x: z, y } = sides(c);
      const weighted = c.saved("weight") !== null || c.saved("pos_weight") !== null;
      if (slot !== 0) return { sym: `−grad · ${z}${perN(c)}` };
      // σ(z) − y: the sigmoid's σ(1 − σ) cancels the log's 1 / (σ(1 − σ))
      return { sym: `grad · (σ(${z}) − ${y})${perN(c)}${weighted ? " (then weighted by weight / pos_weight)" : ""}` };
    },
  },
  NllLoss: {
    summary: (c) => {
      const reduction = c.saved("reduction")?.value ?? MEAN;
      const each = "of each row's log-probability at its target class (cross-entropy's second half)";
      if (reduction === NONE) return "out = −1 × each row's log-probability at its target class, one loss a row (cross-entropy's second half)";
      return `out = ${reduction === SUM ? "−sum" : c.saved("weight") ? "−weighted mean" : "−mean"} ${each}`;
    },
    slots: (c) => {
      const reduction = c.saved("reduction")?.value ?? MEAN;
      if (reduction === SUM) return { sym: "−grad at each row's target class, 0 elsewhere" };
      if (reduction === NONE) return { sym: "−(each row's grad) at its target class, 0 elsewhere" };
      // the mean divides by the rows (their classes' total weight when weighted), not by every element
      if (c.saved("weight")) return { sym: "−grad · weight[target] / N at each row's target class, 0 elsewhere (N = Σ weight[target])" };
      const rows = c.node.saved.find((s) => s.name === "self")?.shape;
      // rows whose target is ignore_index count for nothing: N is those left
      const ignored = c.saved("ignore_index")?.label ?? "-100";
      const target = c.node.saved.find((s) => s.name === "target");
      const values = target?.tensor != null ? c.model.tensor(target.tensor)?.ev.value : null;
      const counted = values?.kind === "full" ? values.flat.filter((v) => v !== Number(ignored)).length : null;
      if (rows?.length === 2 && counted !== null && counted < rows[0]) {
        return { sym: `−grad / N at each row's target class, 0 elsewhere and in the rows whose target is ignore_index (${ignored}) (N = ${counted} of ${rows[0]} rows)` };
      }
      return { sym: `−grad / N at each row's target class, 0 elsewhere (N${rows?.length === 2 ? ` = ${rows[0]}` : ""} rows)` };
    },
  },
  LogSoftmax: {
    summary: (c) => `out = ${x(c)} − logsumexp(${x(c)}) · log-probabilities (cross-entropy's first half)`,
    slots: (c) => ({ sym: `grad − softmax(${x(c)}) · Σ grad${overDim(c)}` }),
  },
  // the sum is of the product: out · (grad − Σ grad · out) reads as if only grad were summed
  Softmax: {
    summary: (c) => `out = softmax(${x(c)}) = e^${x(c)} / Σ e^${x(c)}`,
    slots: (c) => ({ sym: `out · (grad − Σ(grad · out))${overDim(c)}` }),
  },
  // attention's softmax over masked scores (scaled_dot_product_attention with a mask, and
  // nn.MultiheadAttention's): a row masked out entirely is 0, not nan, and passes no gradient
  SafeSoftmax: {
    summary: (c) => `out = softmax(${x(c)}) = e^${x(c)} / Σ e^${x(c)}, 0 in a row masked out entirely (masked attention)`,
    slots: (c) => ({ sym: `out · (grad − Σ(grad · out))${overDim(c)}` }),
  },
  Where: {
    summary: (c) => `out = where(${cond(c)}, a, b)`,
    slots: (c, slot) => ({ sym: `grad where ${cond(c)} ${slot === 0 ? "holds" : "fails"}, 0 elsewhere` }),
  },
  Clamp: clampRule,
  ClampMin: clampRule,
  ClampMax: clampRule,
  Max: extremeRule("max", false),
  Min: extremeRule("min", false),
  Amax: extremeRule("max", true),
  Amin: extremeRule("min", true),
  Maximum: pairwiseRule("maximum"),
  Minimum: pairwiseRule("minimum"),
  Gelu: {
    summary: (c) =>
      c.saved("approximate")?.label.includes("tanh")
        ? `out = gelu(${x(c)}), the tanh approximation of ${x(c)} · Φ(${x(c)})`
        : `out = ${x(c)} · Φ(${x(c)}) (Φ: the normal CDF)`,
    slots: (c) => ({ sym: `grad · (Φ(${x(c)}) + ${x(c)} · φ(${x(c)}))${c.saved("approximate")?.label.includes("tanh") ? ", Φ and φ as the tanh formula approximates them" : ""}` }),
  },
  Softplus: {
    summary: (c) => {
      const beta = c.saved("beta")?.value ?? 1;
      return beta === 1 ? `out = log(1 + e^${x(c)})` : `out = log(1 + e^(β·${x(c)})) / β (β = ${fmtBeta(beta)})`;
    },
    slots: (c) => {
      const beta = c.saved("beta")?.value ?? 1;
      const threshold = c.saved("threshold")?.label ?? "20";
      const z = beta === 1 ? x(c) : `β·${x(c)}`;
      // above the threshold softplus is the identity, and so is its gradient
      return { sym: `grad · σ(${z}) (grad itself where ${z} > ${threshold})` };
    },
  },
  LeakyRelu: {
    summary: (c) => `out = ${x(c)} where ${x(c)} > 0, slope · ${x(c)} elsewhere (slope = ${c.saved("negative_slope")?.label ?? "0.01"})`,
    // PyTorch sends slope · grad at x = 0 itself (its test is x > 0)
    slots: (c) => ({ sym: `grad where ${x(c)} > 0, slope · grad elsewhere` }),
  },
  Log1P: { summary: (c) => `out = log(1 + ${x(c)})`, slots: (c) => ({ sym: `grad / (1 + ${x(c)})` }) },
  NanToNum: rule("out = x with NaN and ±inf replaced by numbers", "grad where x was finite, 0 elsewhere"),
  LinalgVectorNorm: vectorNorm,
  // x.norm(p) and torch.norm: the same p-norm, its p saved as `p`
  Norm: vectorNorm,
  Var: {
    summary: (c) => `out = var(${x(c)}${alongDim(c)}) = Σ(${x(c)} − mean)² / ${dof(c).divisor}`,
    slots: (c) => ({ sym: `grad · 2(${x(c)} − mean) / ${dof(c).divisor}${dof(c).n}` }),
  },
  Std: {
    summary: (c) => `out = std(${x(c)}${alongDim(c)}) = √(Σ(${x(c)} − mean)² / ${dof(c).divisor})`,
    slots: (c) => ({ sym: `grad · (${x(c)} − mean) / (${dof(c).divisor} · std)${dof(c).n}` }),
  },
  Hardtanh: {
    summary: (c) => `out = hardtanh(${x(c)}, ${c.saved("min_val")?.label ?? "min"}, ${c.saved("max_val")?.label ?? "max"}) · ${x(c)} clipped (relu6 is hardtanh(x, 0, 6))`,
    // unlike clamp, hardtanh's backward tests min < x < max: a bound itself gets 0
    slots: (c) => ({
      sym: `grad where ${c.saved("min_val")?.label ?? "min"} < ${x(c)} < ${c.saved("max_val")?.label ?? "max"} (the bounds excluded, unlike clamp), 0 elsewhere`,
    }),
  },
  Silu: {
    summary: (c) => `out = ${x(c)} · σ(${x(c)}) (SiLU, also called swish)`,
    slots: (c) => ({ sym: `grad · σ(${x(c)}) · (1 + ${x(c)} · (1 − σ(${x(c)})))` }),
  },
  Elu: {
    summary: (c) => `out = ${x(c)} where ${x(c)} > 0, α · (e^${x(c)} − 1) elsewhere (α = ${c.saved("alpha")?.label ?? "1.0"})`,
    slots: (c) => ({ sym: `grad where ${x(c)} > 0, grad · α · e^${x(c)} where ${x(c)} ≤ 0` }),
  },
  Logsumexp: {
    summary: (c) => `out = log Σ e^${x(c)}${c.saved("dim") ? ` over dim ${savedDim(c)?.replace(/^\((-?\d+),\)$/, "$1")}` : ""}`,
    slots: (c) => ({ sym: `grad · softmax(${x(c)}) = grad · e^(${x(c)} − out)` }),
  },
  Sign: flat("sign"),
  Round: flat("round"),
  Floor: flat("floor"),
  Ceil: flat("ceil"),
  Trunc: flat("trunc"),
  Rsqrt: {
    summary: (c) => `out = 1 / √${x(c)}`,
    slots: (c) => ({ sym: `−grad / (2 · ${x(c)}^(3/2)) = −grad · out³ / 2` }),
  },
  Cumsum: {
    summary: (c) => `out = cumsum(${x(c)}, dim=${savedDim(c) ?? "d"}) · each element the sum of those up to it`,
    slots: () => ({ sym: "grad summed from the end: element i gets the sum of grad over every j ≥ i" }),
  },
  Flip: { summary: (c) => `out = ${x(c)} flipped`, slots: () => ({ sym: "grad flipped back" }) },
  Prod: {
    summary: (c) => `out = the product of ${x(c)}'s elements`,
    slots: () => ({ sym: "grad · the product of every other element (out / x where x ≠ 0)" }),
  },
  Split: pieces,
  SplitWithSizes: pieces,
  // chunk() inside a library op (a GRU's gates, an LSTM cell's): split on a tensor made there
  UnsafeSplit: pieces,
  UnsafeSplitWithSizes: pieces,
  Unbind: pieces,
  // nn.LSTM on the CPU: one fused op for a whole layer; its inputs x, W_ih, W_hh, b_ih, b_hh, h₀, c₀
  MkldnnRnnLayer: perInput(
    "out, (h, c) = an LSTM layer over every time step in one op: backward runs through time, last step first",
    "(gate grads)ₜ @ W_ih at each step t",
    "Σ over time steps of (gate grads)ₜᵀ @ xₜ",
    "Σ over time steps of (gate grads)ₜᵀ @ hₜ₋₁",
    "each step's gate grads, summed over the time steps and the batch",
    "each step's gate grads, summed over the time steps and the batch",
    "the grad that reached the first step's h, carried back to h₀",
    "the grad that reached the first step's c, carried back to c₀",
  ),
  Embedding: rule("out = W[indices] · a table lookup", "grad's rows added into the looked-up rows of W, 0 elsewhere"),
  Dropout: rule(
    "out = dropout(x) = x · mask / (1 − p) · a random mask keeps each element (scaled by 1 / (1 − p)) or drops it (0)",
    "grad · mask / (1 − p): scaled where the element was kept, 0 where it was dropped",
  ),
  // picking and placing by an index tensor: the gradient goes back along the same index
  Gather: rule("out = gather(a, dim, index) · each element picked from a by index", "grad added back at the places index picked, 0 elsewhere"),
  Scatter: perInput(
    "out = a with src (or a value) written at the places index names",
    "grad, 0 at the places that were overwritten",
    "grad gathered from the places src was written to",
  ),
  ScatterAdd: perInput("out = a with src added at the places index names", "grad (every element of a is kept)", "grad gathered from the places src was added to"),
  IndexAdd: perInput("out = a with source's rows added at the rows index names", "grad (every element of a is kept)", "grad's rows at index (index_select)"),
  MaskedFill: perInput(
    "out = a with the elements where the mask holds set to a value",
    "grad where the mask fails, 0 where it holds (those were filled)",
    "Σ grad over the filled elements",
  ),
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
  ScaledDotProductFlashAttentionForCpu: attention(),
};

/**
 * F.scaled_dot_product_attention's one fused node (PyTorch's CPU kernel): out = P V with
 * the attention weights P = softmax(Q Kᵀ · s), s = 1/√d unless `scale=` says otherwise.
 * Backward is three products and the softmax's own rule: ∂V = Pᵀ grad; with
 * G = grad Vᵀ, the scores' gradient is dS = P ⊙ (G − Σ over each row of P ⊙ G), and
 * ∂Q = dS K · s, ∂K = dSᵀ Q · s. Written with the snippet's own names for Q, K and V.
 */
function attention(): Rule {
  const names = (c: Ctx) => ({ q: c.input(0, "query", "Q"), k: c.input(1, "key", "K"), v: c.input(2, "value", "V") });
  const scale = (c: Ctx) => {
    const given = c.saved("scale")?.label;
    const shape = c.savedShape("query");
    const d = shape?.length ? shape[shape.length - 1] : undefined;
    return given && given !== "None" ? given : d !== undefined ? `1/√${d}` : "1/√d";
  };
  return {
    summary: (c) => {
      const { q, k, v } = names(c);
      const causal = c.saved("is_causal")?.label === "True" ? "; causal: each query's later keys masked out of P" : "";
      const p = Number(c.saved("dropout_p")?.label ?? 0);
      const dropout = p > 0 ? `; dropout ${p} on P` : "";
      return `out = P ${v}, P = softmax(${q} ${k}ᵀ · ${scale(c)}) · attention${causal}${dropout}`;
    },
    slots: (c, slot) => {
      const { q, k, v } = names(c);
      if (slot === 0) return { sym: `dS ${k} · ${scale(c)}, dS = P ⊙ (G − Σ_row P ⊙ G), G = grad ${v}ᵀ (the softmax's rule)` };
      if (slot === 1) return { sym: `dSᵀ ${q} · ${scale(c)} (dS as for ${q})` };
      return { sym: "Pᵀ grad (P: the attention weights)" };
    },
  };
}
