// What pointing at a graph element does to the shared state: hovering lights up what goes
// with it (its source line, tape op, nodes), a click selects it or, in the stepper, goes to
// the step where the node ran. Pure: graph.ts hands the patch to the store.
import type { GNode } from "./graph-build";
import { type Links, linksOfNode, linksOfTensor, stepperEntry, type ViewState } from "./store";
import type { TraceModel } from "./trace-model";

/** What hovering element `d` lights up; `membersOf` gives a module group's grad_fn nodes. */
export function hoverOf(model: TraceModel, d: GNode, membersOf: (path: string) => number[]): Links | null {
  if (d.node !== undefined) return linksOfNode(model, d.node);
  if (d.tensor !== undefined) return linksOfTensor(model, d.tensor);
  if (d.path) return { lines: [], ops: [], nodes: membersOf(d.path) };
  return null;
}

/** The state a click on node or tensor element `d` leads to (a group's click folds it: not here). */
export function tapOf(model: TraceModel, state: ViewState, d: GNode): Partial<ViewState> | null {
  const view = state.view === "stepper" ? "stepper" : "inspector";
  if (d.node !== undefined) {
    const entry = stepperEntry(model, state);
    const ran = entry ? model.backward(entry.backward)?.byNode.get(d.node) : undefined;
    if (ran) return { step: ran.index, selection: { kind: "node", id: d.node } };
    return { selection: { kind: "node", id: d.node }, view };
  }
  if (d.tensor !== undefined) return { selection: { kind: "tensor", id: d.tensor }, view };
  return null;
}
