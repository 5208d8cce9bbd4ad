// The graph's tooltips: hovering a leaf or a parameter reads its `.grad` whole (a vector its
// label shortens to a norm, `‖·‖ 0.00451`, or a tensor too big to print by its shape and
// norm), at the step the stepper is on or, outside the stepper, as the run left it.
import type { Core, EventObject, NodeSingular } from "cytoscape";
import { h } from "./dom";
import { type GNode, tensorNodeLabel } from "./graph-build";
import type { StepEntry, TraceModel } from "./trace-model";
import type { TensorValue } from "./types/events";
import { fmtValue } from "./values";

/**
 * What leaf `tensor`'s `.grad` holds at stepper position `entry` (null: None): after its last
 * accumulation so far; but while this backward call has yet to reach it, what the call
 * found there (`before`), since the snippet may have cleared it in between (`zero_grad()`).
 */
export function gradValueAt(model: TraceModel, tensor: number, entry: StepEntry): TensorValue | null {
  let now: TensorValue | null = null;
  for (const acc of model.accumulationsOf(tensor)) {
    const ran = model.backward(acc.backward)?.byNode.get(acc.node);
    if (!ran) continue;
    if (ran.index <= entry.index) {
      now = acc.after;
    } else {
      if (acc.backward === entry.backward) now = acc.before;
      break;
    }
  }
  return now;
}

/** What leaf `tensor`'s `.grad` held at the end of the run (null: None), as the inspector says. */
function gradAtEnd(model: TraceModel, tensor: number): TensorValue | null {
  const { accs, final } = model.gradHistoryOf(tensor);
  if (final) return final.grad;
  return accs.length ? accs[accs.length - 1].after : null;
}

/**
 * The tooltip of graph node `node`: a leaf's or a parameter's name and shape, then its
 * `.grad` (`.grad at this step: [−0.00148, −0.004197]`); "" for any other node.
 */
export function nodeTip(model: TraceModel, node: GNode, entry: StepEntry | null): string {
  if ((node.kind !== "leaf" && node.kind !== "param") || node.tensor === undefined) return "";
  const name = tensorNodeLabel(model, node.tensor).join(" · ");
  const grad = entry ? gradValueAt(model, node.tensor, entry) : gradAtEnd(model, node.tensor);
  return `${name}\n.grad ${entry ? "at this step" : "at the end of the run"}: ${grad ? fmtValue(grad) : "None"}`;
}

/**
 * Show `tipOf`'s text (when not "") as the tooltip of `container` while a node of `cy` is
 * hovered; the container's own tooltip (the keys' hint) elsewhere.
 */
export function bindNodeTips(cy: Core, container: HTMLElement, tipOf: (node: GNode) => string): void {
  // kept aside once: a graph drawn anew (a new Cytoscape) under the pointer finds a node's tip there
  container.dataset.ownTitle ??= container.title;
  const own = container.dataset.ownTitle;
  cy.on("mouseover", "node", (ev) => {
    container.title = tipOf((ev.target as NodeSingular).data() as GNode) || own;
  });
  cy.on("mouseout", "node", () => (container.title = own));
  bindTapTips(cy, container, tipOf);
}

/** Whether `ev` came from a finger (a phone's tap has no hover, so no tooltip). */
function byFinger(ev: Event | undefined): boolean {
  if (!ev) return false;
  if (typeof TouchEvent !== "undefined" && ev instanceof TouchEvent) return true;
  return typeof PointerEvent !== "undefined" && ev instanceof PointerEvent && ev.pointerType === "touch";
}

/**
 * A finger's tap on a leaf or a parameter shows its tip in a bubble under the node, moving
 * with it, until the next tap: a learner on a phone could not read a parameter's `.grad` at
 * the step (its label shortens it to a norm, and the tooltip needs a hover).
 */
function bindTapTips(cy: Core, container: HTMLElement, tipOf: (node: GNode) => string): void {
  const pane = container.parentElement;
  if (!pane) return;
  // one bubble a pane: a graph drawn anew (a new Cytoscape) uses the one there
  const bubble = pane.querySelector<HTMLElement>(".gw-graph-tip") ?? pane.appendChild(h("div", { class: "gw-graph-tip", role: "status", hidden: true, data: { gw: "graph-tip" } }));
  bubble.hidden = true;
  let shown: NodeSingular | null = null;
  const place = () => {
    if (!shown || shown.removed()) return void (bubble.hidden = true);
    const p = shown.renderedPosition();
    bubble.style.left = `${p.x}px`;
    bubble.style.top = `${p.y + shown.renderedOuterHeight() / 2 + 6}px`;
  };
  cy.on("tap", (ev: EventObject) => {
    const node = ev.target !== cy && (ev.target as NodeSingular).isNode?.() ? (ev.target as NodeSingular) : null;
    const text = node && byFinger(ev.originalEvent) ? tipOf(node.data() as GNode) : "";
    shown = text ? node : null;
    bubble.textContent = text;
    bubble.hidden = !text;
    place();
  });
  cy.on("viewport", place);
}
