// The local rules of the activations, losses, norms and distances beyond those of rules-nn.ts
// (mish, hardswish, glu, PReLU, the margin and Huber losses, CTC, group norm, embedding
// bags, bilinear layers, grid sampling, cdist and pdist), and of the linear-algebra
// functions a course meets (inverse, determinant, solve, Cholesky, cross, SVD, eigh, QR,
// pseudo-inverse, matrix exponential), and torch.cond. Each says where the gradient goes, in words and
// formulas with the snippet's names. Read by rules.ts.
import { type Ctx, factor, inner, perInput, type Rule, rule, said, x } from "./rule-context";
import { perN, reduced, sides } from "./rules-nn";

/** A distance's p (`2`, `1.0`) as saved, `2` when the node saved none. */
function pOf(c: Ctx): { label: string; two: boolean } {
  const p = c.saved("p")?.value ?? 2;
  return { label: String(Number(p.toPrecision(4))), two: p === 2 };
}

/** How a p-norm of a difference `d` sends its gradient: `d / out` for p = 2. */
function normSlope(c: Ctx, d: string): string {
  const { label, two } = pOf(c);
  return two ? `${d} / out` : `sign(${d}) · |${d}|^(p − 1) / out^(p − 1) (p = ${label})`;
}

const EMBEDDING_BAG_MODES = ["sum", "mean", "max"];
const GRID_MODES = ["bilinear", "nearest", "bicubic"];

export const LAYER_RULES: Record<string, Rule> = {
  // torch.cond, one op of the tape whose branches ran compiled, off it (engine/eager.py)
  CondAutogradOp: perInput(
    "out = the branch the predicate chose, applied to the operands (torch.cond runs one of its two functions)",
    "no gradient: the predicate only chose the branch",
    "grad through the branch that ran, as PyTorch differentiated it",
  ),
  Mish: {
    summary: (c) => `out = ${x(c)} · tanh(softplus(${inner(c)}))`,
    slots: (c) => ({ sym: `grad · (tanh(s) + ${x(c)} · σ(${inner(c)}) · (1 − tanh²(s))), s = softplus(${inner(c)})` }),
  },
  // as PyTorch's kernels test: hardswish passes (x/3 + 1/2) on −3 ≤ x ≤ 3, hardsigmoid 1/6 on −3 < x < 3
  Hardswish: {
    summary: (c) => `out = ${x(c)} · relu6(${inner(c)} + 3) / 6`,
    slots: (c) => ({ sym: `0 where ${x(c)} < −3, grad · (${x(c)} / 3 + 1/2) where −3 ≤ ${x(c)} ≤ 3, grad where ${x(c)} > 3` }),
  },
  Hardsigmoid: {
    summary: (c) => `out = relu6(${inner(c)} + 3) / 6`,
    slots: (c) => ({ sym: `grad / 6 where −3 < ${x(c)} < 3, 0 elsewhere` }),
  },
  Celu: {
    summary: (c) => `out = ${x(c)} where ${x(c)} > 0, α · (e^(${x(c)}/α) − 1) elsewhere (α = ${said(c, "alpha", "1.0")})`,
    slots: (c) => ({ sym: `grad where ${x(c)} > 0, grad · e^(${x(c)}/α) where ${x(c)} ≤ 0` }),
  },
  Glu: {
    summary: (c) => `out = a · σ(b), a and b the two halves of ${x(c)} along dim ${said(c, "dim", "-1")}`,
    slots: () => ({ sym: "grad · σ(b) into a's half, grad · a · σ(b) · (1 − σ(b)) into b's half" }),
  },
  LogSigmoid: {
    summary: (c) => `out = log σ(${inner(c)})`,
    slots: (c) => ({ sym: `grad · (1 − σ(${inner(c)})) = grad · σ(−${x(c)})` }),
  },
  PreluKernel: {
    summary: (c) => `out = ${x(c)} where ${x(c)} > 0, a · ${x(c)} elsewhere (a: the learned slope)`,
    slots: (c, slot) => ({
      sym: slot === 0 ? `grad where ${x(c)} > 0, a · grad elsewhere` : `Σ grad · ${x(c)} where ${x(c)} ≤ 0, over every element that shares a`,
    }),
  },
  RreluWithNoise: {
    summary: (c) =>
      c.saved("training")?.label === "True"
        ? `out = ${x(c)} where ${x(c)} > 0, slope · ${x(c)} elsewhere, each element's slope drawn from U(${said(c, "lower", "l")}, ${said(c, "upper", "u")})`
        : `out = ${x(c)} where ${x(c)} > 0, slope · ${x(c)} elsewhere, slope = (lower + upper) / 2 (not training: no noise)`,
    slots: (c) => ({ sym: `grad where ${x(c)} > 0, slope · grad elsewhere (the slope each element was given)` }),
  },
  Threshold: {
    summary: (c) => `out = ${x(c)} where ${x(c)} > ${said(c, "threshold", "t")}, the given value elsewhere`,
    slots: (c) => ({ sym: `grad where ${x(c)} > ${said(c, "threshold", "t")}, 0 elsewhere` }),
  },
  HuberLoss: {
    summary: (c) => {
      const { x: a, y } = sides(c);
      return `out = ${reduced(c, "ℓ(d)")} with d = ${a} − ${y}: ℓ(d) = d² / 2 where |d| ≤ δ, else δ · (|d| − δ/2) (δ = ${said(c, "delta", "1.0")})`;
    },
    slots: (c, slot) => ({ sym: `${slot === 0 ? "" : "−"}grad · clamp(d, −δ, δ)${perN(c)}` }),
  },
  SoftMarginLoss: {
    summary: (c) => {
      const { x: a, y } = sides(c);
      return `out = ${reduced(c, `log(1 + e^(−${y} · ${a}))`)}`;
    },
    slots: (c) => {
      const { x: a, y } = sides(c);
      return { sym: `−grad · ${y} · σ(−${y} · ${a})${perN(c)}` };
    },
  },
  MultiMarginLoss: {
    summary: (c) => {
      const p = said(c, "p", "1");
      return `out = ${reduced(c, `Σ_{j ≠ y} max(0, ${said(c, "margin", "1")} − x_y + x_j)${p === "1" ? "" : `^${p}`} / C`)} over the rows (C classes, y the target class)`;
    },
    slots: (c) => ({
      sym: `grad${said(c, "p", "1") === "1" ? "" : " · p · hinge^(p − 1)"} / C into each x_j whose margin is violated, minus their sum at x_y, 0 elsewhere, per row${perRow(c)}`,
    }),
  },
  MultilabelMarginLoss: {
    summary: (c) => `out = ${reduced(c, "Σ over target labels y and other labels j of max(0, 1 − x_y + x_j) / C")} over the rows`,
    slots: (c) => ({ sym: `grad / C into each x_j in a violated pair, minus as much at its x_y, 0 elsewhere${perRow(c)}` }),
  },
  CtcLoss: perInput(
    "out = −log p(targets | log_probs), p summed over every alignment of the targets to the time steps (CTC)",
    "grad · (e^log_probs − γ), γ the posterior of each symbol at each time step given the targets (the forward–backward algorithm), scaled as the reduction divides",
  ),
  NativeGroupNorm: {
    summary: (c) => `out = (x − mean) / std over each group of channels of each sample · γ + β (${groups(c)})`,
    slots: (_c, slot) => ({
      sym: ["grad through the normalisation (each group's mean and std depend on x too)", "Σ grad · x̂ over the batch and positions", "Σ grad over the batch and positions"][Math.min(slot, 2)],
    }),
  },
  EmbeddingBag: {
    summary: (c) => `out = the ${EMBEDDING_BAG_MODES[c.saved("mode")?.value ?? 1] ?? "mean"} of W's rows in each bag of indices`,
    slots: (c, slot) => {
      if (slot !== 0) return { sym: "Σ grad · W[index] for each index's weight" };
      const mode = c.saved("mode")?.value ?? 1;
      const how = mode === 0 ? "" : mode === 1 ? " divided by the bag's size" : ", only to the row that gave each maximum";
      return { sym: `each bag's grad added into the rows it used${how}, 0 elsewhere` };
    },
  },
  Trilinear: perInput(
    "out[k] = x₁ᵀ · W[k] · x₂ (+ b[k]) · F.bilinear: one bilinear form per output feature",
    "Σ_k grad[k] · W[k] · x₂",
    "grad[k] · x₁ · x₂ᵀ for each k, summed over the batch",
    "Σ_k grad[k] · W[k]ᵀ · x₁",
  ),
  GridSampler2D: {
    summary: (c) => `out = the input sampled at grid's points (${GRID_MODES[c.saved("interpolation_mode")?.value ?? 0] ?? "bilinear"})`,
    slots: (_c, slot) => ({
      sym: slot === 0 ? "each output's grad spread to the pixels around its point, with the interpolation weights" : "grad · the slope of the interpolated value at each point, in x and in y",
    }),
  },
  Dist: {
    summary: (c) => `out = ‖${sidesOf(c).a} − ${sidesOf(c).b}‖ (the ${pOf(c).label}-norm of the difference)`,
    slots: (c, slot) => {
      const { a, b } = sidesOf(c);
      return { sym: `${slot === 0 ? "" : "−"}grad · ${normSlope(c, `(${a} − ${b})`)}` };
    },
  },
  Cdist: {
    summary: (c) => `out[i, j] = ‖x₁[i] − x₂[j]‖ (the ${pOf(c).label}-norm), for every row i of x₁ and j of x₂`,
    slots: (c, slot) => ({
      sym: slot === 0 ? `row i gets Σ_j grad[i, j] · ${normSlope(c, "d")}, d = x₁[i] − x₂[j] (0 where out is 0)` : `row j gets Σ_i grad[i, j] · ${normSlope(c, "d")}, d = x₂[j] − x₁[i] (0 where out is 0)`,
    }),
  },
  Pdist: {
    summary: (c) => `out = ‖${x(c)}[i] − ${x(c)}[j]‖ (the ${pOf(c).label}-norm) for every pair of rows i < j`,
    slots: (c) => ({ sym: `row i gets Σ over its pairs of grad · ${normSlope(c, "d")}, d = ${x(c)}[i] − ${x(c)}[j]` }),
  },
  Renorm: {
    summary: (c) => `out = each slice of ${x(c)} along dim ${said(c, "dim", "d")} scaled down to a ${said(c, "p", "p")}-norm of at most ${said(c, "maxnorm", "maxnorm")}`,
    slots: () => ({ sym: "grad where a slice was within the bound; through the scale maxnorm / ‖slice‖ (which depends on the slice too) where it was scaled down" }),
  },
  StdMean: rule("out = (std, mean) of x", "grad_std · (x − mean) / ((N − 1) · std) + grad_mean / N"),
  VarMean: rule("out = (var, mean) of x", "grad_var · 2(x − mean) / (N − 1) + grad_mean / N"),
  // linear algebra: A is the matrix the op was given
  LinalgInvEx: rule("out = A⁻¹", "−A⁻ᵀ · grad · A⁻ᵀ = −outᵀ · grad · outᵀ"),
  LinalgDet: rule("out = det(A)", "grad · det(A) · A⁻ᵀ (Jacobi's formula)"),
  LinalgSlogdet: rule("out = (sign, log |det(A)|)", "grad · A⁻ᵀ (the slope of log |det|)"),
  LinalgSolveEx: perInput("out = X, the solution of A · X = B", "−G · Xᵀ, G = A⁻ᵀ · grad", "G = A⁻ᵀ · grad (one more solve, with Aᵀ)"),
  LinalgCholeskyEx: rule("out = L, lower-triangular with A = L · Lᵀ", "L⁻ᵀ · Φ(Lᵀ · grad) · L⁻¹, Φ(M) = ½ · M's lower triangle mirrored into a symmetric matrix"),
  LinalgCross: perInput("out = a × b (the cross product)", "b × grad", "grad × a"),
  LinalgSvd: rule("out = U, S, Vh with A = U · diag(S) · Vh", "U · diag(grad_S) · Vh, plus U's and Vh's part, which divides by S_i² − S_j²"),
  LinalgEigh: rule("out = the eigenvalues λ and eigenvectors V of a symmetric A", "V · diag(grad_λ) · Vᵀ, plus V's part, which divides by λ_j − λ_i"),
  LinalgQr: rule("out = Q, R with A = Q · R (Q orthonormal, R upper-triangular)", "grad through the QR decomposition (its backward solves a triangular system with R)"),
  LinalgPinv: rule("out = A⁺, the pseudo-inverse of A", "−A⁺ᵀ · grad · A⁺ᵀ plus terms for A's null spaces (the inverse's rule when A is invertible)"),
  LinalgMatrixExp: rule("out = exp(A) = Σₖ Aᵏ / k!", "the same series' derivative taken at Aᵀ, applied to grad (exp of a block matrix [[Aᵀ, grad], [0, Aᵀ]])"),
};

/** A distance's two inputs by the snippet's names. */
function sidesOf(c: Ctx): { a: string; b: string } {
  return { a: x(c), b: factor(c.input(1, "other", "b")) };
}

/** ` / N (N rows)` for a margin loss with reduction="mean", "" otherwise. */
function perRow(c: Ctx): string {
  const reduction = c.saved("reduction")?.value ?? 1;
  const rows = c.savedShape("self")?.[0];
  return reduction === 1 ? ` / N${rows !== undefined ? ` (N = ${rows} rows)` : ""}` : "";
}

/** `1 group`, `4 groups`, as group norm saved its count. */
function groups(c: Ctx): string {
  const n = c.saved("group")?.label ?? "G";
  return `${n} group${n === "1" ? "" : "s"}`;
}
