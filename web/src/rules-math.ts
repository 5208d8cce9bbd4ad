// The local rules of the elementwise functions a course meets after sin, exp and log: the
// inverse and hyperbolic trigonometry, exp2/expm1 and the other logarithms, erf and the
// gamma functions, the two-input ones (atan2, hypot, logaddexp, xlogy, lerp, addcmul,
// addcdiv), fmod and remainder, and the complex-number constructors. Read by rules.ts.
//
// Where the input is one number the rule writes its slope out with the real numbers, as
// rules.ts does for sin (`grad · cosh(x) = 1 × 1.128`); the right-hand side is always the
// gradient PyTorch sent, never one recomputed here.
import { type Ctx, factor, inner, type Operand, type Rule, type Slot, times, x } from "./rule-context";
import { fmtFactor } from "./values";

const LN2 = Math.LN2;
const LN10 = Math.LN10;
const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);

/** The saved input `name` (`self` by default) as an operand, `x` when the node saved none. */
function input(c: Ctx, name = "self"): Operand {
  return c.saved(name) ?? { label: "x", value: null };
}

/**
 * A one-input function whose node saved its input: `out = name(x)`, its edge
 * `grad · slope(x)` (`slopeText` writes the slope with the input as written inside a call,
 * `a`, and as a factor, `fa`), with the slope's value when the input is one number and
 * `slope` can compute it.
 */
function ofInput(name: string, slopeText: (a: string, fa: string) => string, slope?: (v: number) => number): Rule {
  return {
    summary: (c) => `out = ${name}(${inner(c)})`,
    slots: (c) => {
      const a = input(c);
      return { sym: slopeText(inner(c), x(c)), num: slope && a.value !== null ? times(c.g, slope(a.value)) : null };
    },
  };
}

/** A one-input function whose node saved its output: the slope is written with `out`. */
function ofResult(name: string, slopeText: string, slope: (out: number) => number): Rule {
  return {
    summary: (c) => `out = ${name}(${inner(c)})`,
    slots: (c) => {
      const r = c.result();
      return { sym: slopeText, num: r.value !== null ? times(c.g, slope(r.value)) : null };
    },
  };
}

/** The two inputs of a two-input function, by the snippet's names (`a`, `b` when unnamed). */
function pair(c: Ctx): { a: Operand; b: Operand; at: string; bt: string } {
  const a = c.saved("self") ?? { label: "a", value: null };
  // a Python number as the second input (`torch.fmod(x, 0.3)`) is no edge: the op's constant
  const number = c.constant(...NUMBER_SECOND);
  const b = c.saved("other") ?? number ?? { label: "b", value: null };
  const bt = number && c.node.edges.length < 2 ? number.label : factor(c.input(1, "other", "b"));
  return { a, b, at: factor(c.input(0, "self", "a")), bt };
}

// the two-input functions that take a Python number as their second input
const NUMBER_SECOND = ["fmod", "remainder", "atan2", "hypot", "logaddexp", "logaddexp2", "xlogy"];

/** A two-input rule: `slots[slot](a, b)` symbolic, and its value when both inputs are numbers. */
function twoInputs(
  summary: (a: string, b: string) => string,
  ...slots: [(a: string, b: string) => string, ((a: number, b: number) => number)?][]
): Rule {
  return {
    summary: (c) => {
      const { at, bt } = pair(c);
      return summary(at, bt);
    },
    slots: (c, slot): Slot | null => {
      const [text, slope] = slots[Math.min(slot, slots.length - 1)];
      const { a, b, at, bt } = pair(c);
      const num = slope && a.value !== null && b.value !== null ? times(c.g, slope(a.value, b.value)) : null;
      return { sym: text(at, bt), num };
    },
  };
}

const sigmoid = (v: number): number => 1 / (1 + Math.exp(-v));

/** addcmul's and addcdiv's multiplier `value` as saved, null when it is 1 (nothing to write). */
function valueOf(c: Ctx): string | null {
  const v = c.saved("value");
  return !v || v.value === 1 ? null : v.label;
}

/** `grad · value · rest`, without the value when it is 1. */
function scaledGrad(c: Ctx, rest: string): string {
  const v = valueOf(c);
  return v === null ? `grad ${rest}` : `grad · ${v} ${rest}`;
}

/** lerp's weight: the saved Python number, or the weight tensor's name. */
function weight(c: Ctx): string {
  return c.saved("weight")?.label ?? factor(c.input(2, "weight", "w"));
}

export const MATH_RULES: Record<string, Rule> = {
  Sin: ofInput("sin", (a) => `grad · cos(${a})`, Math.cos),
  // −grad · sin: a negative gradient in brackets (it read `−−2 × 0.6442`)
  Cos: {
    summary: (c) => `out = cos(${inner(c)})`,
    slots: (c) => {
      const a = input(c);
      const num = a.value === null || c.g === null ? null : `−${fmtFactor(c.g)} × ${fmtFactor(Math.sin(a.value))}`;
      return { sym: `−grad · sin(${a.label})`, num };
    },
  },
  Abs: ofInput("abs", (a) => `grad · sign(${a})`, Math.sign),
  Asin: ofInput("asin", (_a, fa) => `grad / √(1 − ${fa}²)`, (v) => 1 / Math.sqrt(1 - v * v)),
  Acos: ofInput("acos", (_a, fa) => `−grad / √(1 − ${fa}²)`, (v) => -1 / Math.sqrt(1 - v * v)),
  Atan: ofInput("atan", (_a, fa) => `grad / (1 + ${fa}²)`, (v) => 1 / (1 + v * v)),
  Sinh: ofInput("sinh", (a) => `grad · cosh(${a})`, Math.cosh),
  Cosh: ofInput("cosh", (a) => `grad · sinh(${a})`, Math.sinh),
  Asinh: ofInput("asinh", (_a, fa) => `grad / √(${fa}² + 1)`, (v) => 1 / Math.sqrt(v * v + 1)),
  Acosh: ofInput("acosh", (_a, fa) => `grad / √(${fa}² − 1)`, (v) => 1 / Math.sqrt(v * v - 1)),
  Atanh: ofInput("atanh", (_a, fa) => `grad / (1 − ${fa}²)`, (v) => 1 / (1 - v * v)),
  Tan: ofResult("tan", "grad · (1 + out²)", (out) => 1 + out * out),
  Expm1: ofResult("expm1", "grad · (out + 1) = grad · e^x", (out) => out + 1),
  Exp2: ofResult("exp2", "grad · out · ln 2", (out) => out * LN2),
  Log2: ofInput("log2", (_a, fa) => `grad / (${fa} · ln 2)`, (v) => 1 / (v * LN2)),
  Log10: ofInput("log10", (_a, fa) => `grad / (${fa} · ln 10)`, (v) => 1 / (v * LN10)),
  Erf: ofInput("erf", (_a, fa) => `grad · 2/√π · e^(−${fa}²)`, (v) => TWO_OVER_SQRT_PI * Math.exp(-v * v)),
  Erfc: ofInput("erfc", (_a, fa) => `−grad · 2/√π · e^(−${fa}²)`, (v) => -TWO_OVER_SQRT_PI * Math.exp(-v * v)),
  Erfinv: ofInput("erfinv", () => "grad · √π/2 · e^(out²) (the slope of erf's inverse at out)"),
  Lgamma: ofInput("lgamma", (a) => `grad · ψ(${a}) (ψ = digamma, the slope of log Γ)`),
  Digamma: ofInput("digamma", (a) => `grad · ψ′(${a}) (trigamma: polygamma(1, ${a}))`),
  Logit: ofInput("logit", (_a, fa) => `grad / (${fa} · (1 − ${fa}))`, (v) => 1 / (v * (1 - v))),
  Sinc: ofInput(
    "sinc",
    (a, fa) => `grad · (cos(π · ${fa}) − sinc(${a})) / ${fa} (0 at ${a} = 0)`,
    (v) => (v === 0 ? 0 : (Math.cos(Math.PI * v) - Math.sin(Math.PI * v) / (Math.PI * v)) / v),
  ),
  Frac: {
    summary: (c) => `out = frac(${inner(c)}) = ${x(c)} − trunc(${inner(c)}) · slope 1 between its jumps`,
    slots: () => ({ sym: "grad" }),
  },
  Sgn: {
    summary: (c) => `out = sgn(${inner(c)}) = ${x(c)} / |${inner(c)}|: a real input's sign, flat between its jumps`,
    slots: (c) => ({ sym: `(grad − Re(grad · conj(out)) · out) / |${inner(c)}|: 0 for a real ${x(c)}` }),
  },
  // fmod(a, b) = a − trunc(a / b) · b and remainder(a, b) = a − floor(a / b) · b: slope 1 in a
  Fmod: twoInputs((a, b) => `out = fmod(${a}, ${b}) = ${a} − trunc(${a} / ${b}) · ${b}`, [() => "grad (slope 1 between the jumps)"], [(a, b) => `−grad · trunc(${a} / ${b})`]),
  Remainder: twoInputs((a, b) => `out = remainder(${a}, ${b}) = ${a} − floor(${a} / ${b}) · ${b}`, [() => "grad (slope 1 between the jumps)"], [(a, b) => `−grad · floor(${a} / ${b})`]),
  Atan2: twoInputs(
    (a, b) => `out = atan2(${a}, ${b}), the angle of the point (${b}, ${a})`,
    [(a, b) => `grad · ${b} / (${a}² + ${b}²)`, (a, b) => b / (a * a + b * b)],
    [(a, b) => `−grad · ${a} / (${a}² + ${b}²)`, (a, b) => -a / (a * a + b * b)],
  ),
  Hypot: twoInputs(
    (a, b) => `out = √(${a}² + ${b}²)`,
    [(a) => `grad · ${a} / out`, (a, b) => a / Math.hypot(a, b)],
    [(_a, b) => `grad · ${b} / out`, (a, b) => b / Math.hypot(a, b)],
  ),
  Logaddexp: twoInputs(
    (a, b) => `out = log(e^${a} + e^${b})`,
    [(a, b) => `grad · e^${a} / (e^${a} + e^${b}) = grad · σ(${a} − ${b})`, (a, b) => sigmoid(a - b)],
    [(a, b) => `grad · e^${b} / (e^${a} + e^${b}) = grad · σ(${b} − ${a})`, (a, b) => sigmoid(b - a)],
  ),
  Logaddexp2: twoInputs(
    (a, b) => `out = log2(2^${a} + 2^${b})`,
    [(a, b) => `grad · 2^${a} / (2^${a} + 2^${b})`, (a, b) => sigmoid((a - b) * LN2)],
    [(a, b) => `grad · 2^${b} / (2^${a} + 2^${b})`, (a, b) => sigmoid((b - a) * LN2)],
  ),
  Xlogy: twoInputs(
    (a, b) => `out = ${a} · log(${b}) (0 where ${a} = 0)`,
    [(a, b) => `grad · log(${b}) (0 where ${a} = 0)`, (a, b) => (a === 0 ? 0 : Math.log(b))],
    [(a, b) => `grad · ${a} / ${b}`, (a, b) => a / b],
  ),
  Lerp: {
    summary: (c) => {
      const { at, bt } = pair(c);
      return `out = ${at} + ${weight(c)} · (${bt} − ${at})`;
    },
    slots: (c, slot) => {
      const { at, bt } = pair(c);
      const w = c.saved("weight");
      const wv = w && w.value !== null ? w.value : null;
      if (slot === 0) return { sym: `grad · (1 − ${weight(c)})`, num: wv !== null ? times(c.g, 1 - wv) : null };
      if (slot === 1) return { sym: `grad · ${weight(c)}`, num: wv !== null ? times(c.g, wv) : null };
      return { sym: `grad · (${bt} − ${at})` };
    },
  },
  Addcmul: {
    summary: (c) => `out = ${x(c)} + ${valueOf(c) ? `${valueOf(c)} · ` : ""}t₁ · t₂ (t₁ = ${factor(c.input(1, "tensor1", "t₁"))}, t₂ = ${factor(c.input(2, "tensor2", "t₂"))})`,
    slots: (c, slot) => ({ sym: slot === 0 ? "grad" : scaledGrad(c, slot === 1 ? "· t₂" : "· t₁") }),
  },
  Addcdiv: {
    summary: (c) => `out = ${x(c)} + ${valueOf(c) ? `${valueOf(c)} · ` : ""}t₁ / t₂ (t₁ = ${factor(c.input(1, "tensor1", "t₁"))}, t₂ = ${factor(c.input(2, "tensor2", "t₂"))})`,
    slots: (c, slot) => ({ sym: slot === 0 ? "grad" : slot === 1 ? scaledGrad(c, "/ t₂") : `−${scaledGrad(c, "· t₁ / t₂²")}` }),
  },
  // complex numbers: a real-valued loss's gradient of a complex tensor is ∂/∂Re + i · ∂/∂Im
  Complex: twoInputs((a, b) => `out = ${a} + i · ${b}`, [() => "Re(grad)"], [() => "Im(grad)"]),
  Polar: {
    summary: () => "out = abs · e^(iθ) = abs · (cos θ + i · sin θ)",
    slots: (_c, slot) => ({ sym: slot === 0 ? "Re(grad · e^(−iθ)): grad's part along out" : "Re(grad · conj(i · out)): grad's part across out, times abs" }),
  },
  ViewAsReal: {
    summary: (c) => `out = ${x(c)}'s complex numbers as (real, imag) pairs, a last dim of 2`,
    slots: () => ({ sym: "grad's pairs read back as complex: grad[..., 0] + i · grad[..., 1]" }),
  },
  ViewAsComplex: {
    summary: (c) => `out = ${x(c)}'s last dim of 2 read as complex numbers: [..., 0] + i · [..., 1]`,
    slots: () => ({ sym: "grad's real and imaginary parts, side by side in a last dim of 2" }),
  },
  Real: { summary: (c) => `out = Re(${inner(c)})`, slots: () => ({ sym: "grad as a complex number with imaginary part 0" }) },
  Imag: { summary: (c) => `out = Im(${inner(c)})`, slots: () => ({ sym: "i · grad: grad as the imaginary part" }) },
};
