// What a stepper card says around a node's own rule (rules.ts): the seed a backward call
// starts from, the paths whose gradients the engine summed before a node ran, where the
// snippet hooked a gradient, and a leaf's accumulation into .grad.
import { gradOf, outputTensors, rootLabel, tensorExpr } from "./naming";
import type { StepEntry, TraceModel } from "./trace-model";
import type { GradAccumulated, TensorValue } from "./types/events";
import { fmtAddend, fmtFactor, fmtValue, isFull, numel, scalarOf, shapeText, statsOf } from "./values";

/**
 * When gradients reached a node along several paths, the engine summed them before running
 * it: say so with the numbers (", the sum of 2 paths: −4 + 18.75"), written out when each is
 * small enough to print whole (six elements or fewer), else counted.
 */
export function pathsSum(model: TraceModel, entry: StepEntry): string {
  const exec = entry.exec;
  const call = model.backward(entry.backward);
  // a node with several outputs got each output's gradient on its own: nothing was summed
  if (!exec || !call || exec.grad_in.length > 1) return "";
  const arrived: [number, TensorValue | null][] = [];
  for (const { from, slot } of model.incomingOf(exec.node)) {
    const ran = call.byNode.get(from);
    if (!ran || ran.index >= entry.index || !ran.exec) continue;
    arrived.push([ran.index, ran.exec.grad_out[slot] ?? null]);
  }
  // In the order the engine sent them.
  const parts = arrived.sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  if (parts.length < 2) return "";
  const whole = parts.every((v) => isFull(v) && v.flat.length <= 6);
  if (!whole) return `, the sum of ${parts.length} paths`;
  return `, the sum of ${parts.length} paths: ${parts.map((v, i) => (i === 0 ? fmtValue(v) : fmtAddend(v))).join(" + ")}`;
}

/** ` (line 7)`: where the snippet hooked tensor `id`'s gradient, when the trace says. */
export function hookLinesText(model: TraceModel, id: number | null): string {
  const lines = model.hookLines(id).filter((l) => l !== null);
  return lines.length ? ` (line ${lines.join(", ")})` : "";
}

/** Parenthesize a compound label after ∂: ∂y/∂(x**3), but ∂y/∂x. */
export function d(label: string): string {
  return /^[\p{L}\p{N}_.₀-₉]+ᵀ?$/u.test(label) ? label : `(${label})`;
}

/**
 * Write a leaf's accumulation: `x.grad: 4 + 4 → 8` where the values print whole, and
 * `x.grad: None → [18, 36]` for the first (.grad was None, and is set to the gradient: no
 * 0 is added to anything); a tensor too big to print, its shape once and then the norms:
 * `w.grad [16]: None → ‖·‖ 0.01634`, `w.grad [16]: ‖·‖ 0.01634 + ‖·‖ 0.01213 → ‖·‖ 0.02451`
 * (a norm of a sum is no sum of norms: each is its own tensor's).
 */
export function accumulationText(model: TraceModel, acc: GradAccumulated): string {
  const grad = gradOf(model, acc.tensor);
  const values = [acc.before, acc.added, acc.after].filter((v): v is TensorValue => v !== null);
  if (values.every((v) => isFull(v) && v.flat.length <= 6)) {
    if (!acc.before) return `${grad}: None → ${fmtValue(acc.after)}`;
    return `${grad}: ${fmtValue(acc.before)} + ${fmtAddend(acc.added)} → ${fmtValue(acc.after)}`;
  }
  const shape = shapeText(values[0].shape);
  if (!acc.before) return `${grad} ${shape}: None → ${statsOf(acc.after)}`;
  return `${grad} ${shape}: ${statsOf(acc.before)} + ${statsOf(acc.added)} → ${statsOf(acc.after)}`;
}

/**
 * What a call's first node starts from. `backward()` of a scalar starts from 1; a gradient
 * given to it (`y.backward(v)`, `grad_outputs=`) is the seed instead, and for a root that is
 * not a scalar each ∂y/∂… of the walk is that vector times the Jacobian. `given` when the
 * seed is not a lone 1 (then "∂y/∂y = …" would be false).
 */
export function seedText(model: TraceModel, entry: StepEntry): { text: string; given: boolean } {
  const call = model.backward(entry.backward);
  if (!call || call.entries[0] !== entry) return { text: "", given: false };
  const grad = call.start.api === "autograd.grad";
  // with several roots (`torch.autograd.backward([a, b], [ga, gb])`), the seed of the one this node made
  const node = model.node(entry.exec?.node);
  const at = Math.max(0, call.start.roots.findIndex((r) => r === node?.tensor));
  const seed = call.start.seed?.[at] ?? null;
  if (!seed || (isFull(seed) && seed.flat.length === 1 && scalarOf(seed) === 1)) {
    return { text: grad ? " (the seed: autograd.grad starts from 1 at its output)" : " (the seed: backward() starts from 1 at the root)", given: false };
  }
  const root = rootLabel(model, entry.backward);
  const to = grad ? "autograd.grad (grad_outputs=…)" : "backward()";
  if (seed.shape.length === 0 || numel(seed.shape) === 1) {
    return { text: ` (the seed: the gradient given to ${to} instead of 1, so every gradient below is ${fmtFactor(scalarOf(seed) ?? NaN)} × ∂${d(root)}/∂…)`, given: true };
  }
  return { text: ` (the seed: the gradient given to ${to}, as ${root} is not a scalar: each ∂${d(root)}/∂… below is Σᵢ seedᵢ · ∂${d(root)}ᵢ/∂…)`, given: true };
}

/** `grad: ∂loss/∂a = [1, 1]; ∂loss/∂b = [2, 2]` for a node with several outputs, else null. */
export function outputsIncoming(model: TraceModel, entry: StepEntry, root: string): string | null {
  const exec = entry.exec;
  const made = exec && exec.grad_in.length > 1 ? outputTensors(model, exec.node) : null;
  if (!exec || !made) return null;
  const parts = exec.grad_in.map((v, i) => {
    const t = made[i];
    const label = t !== null && t !== undefined ? tensorExpr(model, t) : `output ${i}`;
    return `∂${root}/∂${d(label)} = ${v ? fmtValue(v) : "none reached it (zeros)"}`;
  });
  return `grad: ${parts.join("; ")}`;
}
