// What reached a node against what it ran with. Between the nodes that send a gradient and
// the node that runs on it, a hook may change it (`y.register_hook(fn)` on the node's
// tensor, or a pre-hook on the node): the edges carry what was sent, the node runs on what
// the hook returned, and the stepper says so rather than showing two numbers that disagree.
import type { StepEntry, TraceModel } from "./trace-model";
import type { FullValue, TensorValue } from "./types/events";
import { elements, isFull, isSummary } from "./values";

/** Relative difference below which two gradients are the same (float32 sums, added again here). */
const SAME = 1e-5;

function close(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b;
  return Math.abs(a - b) <= SAME * Math.max(Math.abs(a), Math.abs(b), 1e-30);
}

/** The gradients sent into input `inputNr` of the node `entry` ran, by nodes that ran before it in its call. */
function sentTo(model: TraceModel, entry: StepEntry, inputNr: number): TensorValue[] | null {
  const exec = entry.exec;
  const call = model.backward(entry.backward);
  if (!exec || !call) return null;
  const sent: TensorValue[] = [];
  for (const { from, slot } of model.incomingOf(exec.node)) {
    if (model.node(from)?.edges[slot]?.input_nr !== inputNr) continue;
    const ran = call.byNode.get(from);
    if (!ran || ran.index >= entry.index || !ran.exec) continue; // it ran in another call, or later
    const value = ran.exec.grad_out[slot];
    if (value) sent.push(value);
  }
  return sent;
}

/**
 * The gradient that reached input `inputNr` of the node `entry` ran, when the node ran on a
 * different one (a hook changed it); else null. Several senders' whole values are summed,
 * as the engine sums them; a large gradient (a summary) is compared by its shape and
 * statistics, and only from a single sender. The backward call's root, which no node feeds,
 * has nothing to compare.
 */
export function hookedArrival(model: TraceModel, entry: StepEntry, inputNr = 0): TensorValue | null {
  const ran = entry.exec?.grad_in[inputNr];
  const sent = sentTo(model, entry, inputNr);
  if (!ran || !sent?.length) return null;
  if (isFull(ran)) {
    if (!sent.every(isFull)) return null;
    const total = elements(ran).map(() => 0);
    for (const value of sent) {
      const xs = elements(value);
      if (xs.length !== total.length) return null; // a shape the engine would have reduced: not compared
      xs.forEach((x, i) => (total[i] += x));
    }
    const got = elements(ran);
    if (total.every((x, i) => close(x, got[i]))) return null;
    return { kind: "full", shape: ran.shape, flat: total } satisfies FullValue;
  }
  if (isSummary(ran) && sent.length === 1 && isSummary(sent[0])) {
    const a = sent[0];
    const stat = (x: number | null, y: number | null) => x === null || y === null || close(x, y);
    const same = a.numel === ran.numel && stat(a.norm, ran.norm) && stat(a.min, ran.min) && stat(a.max, ran.max);
    return same ? null : a;
  }
  return null;
}
