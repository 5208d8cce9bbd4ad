// Which element of the graph shows a grad_fn node, a selection, the scrubber's op or the
// stepper's node: its own, or the folded module group it is in. Pure functions of the
// model, the folded groups and the element ids to look among (those drawn now, or the
// whole graph's when a part is drawn: graph-window.ts).
import { groupId } from "./graph-build";
import type { Ids } from "./graph-window";
import { stepperEntry, type ViewState } from "./store";
import type { TraceModel } from "./trace-model";

/** Where to look: the model, its folded module groups, and the element ids there are. */
export interface Shown {
  model: TraceModel;
  collapsed: ReadonlySet<string>;
  elements: Ids;
}

/** The element showing grad_fn node `nodeId`, if any. */
export function elementOfNode({ model, collapsed, elements }: Shown, nodeId: number): string | null {
  const direct = `n${nodeId}`;
  if (elements.has(direct)) return direct;
  const path = model.node(nodeId)?.module_path;
  if (!path) return null;
  for (const c of collapsed) if (path === c || path.startsWith(`${c}.`)) return groupId(c);
  return null;
}

/** The element showing `sel`: a node's; a tensor's, or else the grad_fn's that made it. */
export function elementOfSelection(shown: Shown, sel: NonNullable<ViewState["selection"]>): string | null {
  if (sel.kind === "node") return elementOfNode(shown, sel.id);
  if (sel.kind !== "tensor") return null;
  if (shown.elements.has(`t${sel.id}`)) return `t${sel.id}`;
  const fn = shown.model.gradFnOfTensor(sel.id);
  return fn === undefined ? null : elementOfNode(shown, fn);
}

/** The element of the last op up to `op` that made a node: the graph's output at that point. */
export function elementOfOp(shown: Shown, op: number): string | null {
  for (let i = op; i >= 0; i--) {
    const node = shown.model.op(i)?.nodes[0];
    if (node !== undefined) return elementOfNode(shown, node);
  }
  return null;
}

/** The element of the stepper's node (or of its backward call's first node), if the stepper is open. */
export function stepperElement(shown: Shown, state: ViewState): string | null {
  const entry = stepperEntry(shown.model, state);
  if (!entry) return null;
  const node = entry.exec?.node ?? shown.model.backward(entry.backward)?.entries.find((e) => e.exec)?.exec?.node;
  return node === undefined ? null : elementOfNode(shown, node);
}

/** The element the user looks at: the stepper's node, else the selection, else the scrubber's op. */
export function lookedAt(shown: Shown, state: ViewState): string | null {
  if (stepperEntry(shown.model, state)) return stepperElement(shown, state);
  const selected = state.selection ? elementOfSelection(shown, state.selection) : null;
  if (selected) return selected;
  return state.op === null ? null : elementOfOp(shown, state.op);
}
