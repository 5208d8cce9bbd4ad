// Readable names for tensors and graph nodes: a variable name when the snippet bound one,
// else a short expression rebuilt from the op that made it (`a * b`, `b**2`, `tanh(h)`),
// else the module call it came out of (`net.fc1(…)`), else `t<id>`.
import type { TraceModel } from "./trace-model";
import { bareExprOf, ELIDED, exprOf, KEY_TENSOR, keyWithTensors, keywordTexts, nameOf, numberText, placedInputs, positionalTexts } from "./tensor-expr";
import type { OpRecorded } from "./types/events";
import { shapesText } from "./values";

export { numberText };

/** A label longer than this gives way to a shorter one (operands left out, `sum(…)`). */
const MAX_EXPR = 22;
/** The same for a call a node made inside one op: `log_softmax(model.4(…))` still reads. */
const MAX_INNER = 26;
/** The same for an op with every operand left out: attention's `multi_head_attention_forward(…)` beats `t6`. */
const MAX_BARE = 36;
/** How many ops deep a label reads back before it leaves operands out. */
const MAX_DEPTH = 4;

/**
 * A tensor's readable label: its name; else the expression that made it, as deep as fits
 * (`exp(x * 2 + 1)`, `sum(x, dim=1)`, keyword numbers left out first when it does not); else the module call it came out of (`net.fc1(…)`,
 * `shared(v)`); else the expression with its operands left out (`sqrt(… / 4)`, `sum(…)`),
 * modules by their own name (`x + self_attn(…)`), every operand (`… + …`); else t<id>.
 */
export function tensorExpr(model: TraceModel, id: number | null | undefined): string {
  if (id === null || id === undefined) return "?";
  const named = nameOf(model, id);
  if (named) return named;
  const fits = (depth: number, keywords = true, shortModules = false) => {
    const e = exprOf(model, id, depth, keywords, shortModules);
    return e && e.text.length <= MAX_EXPR ? e.text : null;
  };
  // numbers passed by keyword (`dim=1`) go before operands do: `softmax(X @ w.mT)`, not `softmax(X @ …, dim=-1)`
  for (let depth = MAX_DEPTH; depth >= 2; depth--) {
    const text = fits(depth) ?? fits(depth, false);
    if (text) return text;
  }
  const module = model.moduleOutputOf(id);
  if (module !== undefined) return `${module}(…)`;
  const bare = () => {
    const text = bareExprOf(model, id);
    return text && text.length <= MAX_BARE ? text : null;
  };
  // modules by their own name (`x + self_attn(…)`), then every operand left out (`… + …`)
  return moduleCallText(model, id) ?? fits(1) ?? fits(1, false) ?? fits(2, false, true) ?? fits(1, false, true) ?? bare() ?? `t${id}`;
}

/**
 * `shared(v)`: a tensor one op of a module made from an input and that module's own
 * parameters (nn.Linear's `linear(v, shared.weight, shared.bias)`), read as the module
 * call. For an output the model does not take for a module's (`shared(shared(v))`: the
 * inner call's output is read inside `shared` again); null for any other tensor.
 */
function moduleCallText(model: TraceModel, id: number): string | null {
  const op = model.op(model.tensor(id)?.ev.op);
  const path = op?.module_path;
  if (!op || !path || op.inputs.length < 2 || op.outputs.length !== 1) return null;
  const [input, ...rest] = op.inputs;
  const ownParameter = (p: number) => {
    const t = model.tensor(p);
    return !!t?.ev.is_param && (t.name ?? t.paramName ?? "").startsWith(`${path}.`);
  };
  if (!rest.every(ownParameter)) return null;
  const outer = model.moduleOutputOf(input);
  const arg = nameOf(model, input) ?? (outer === undefined ? ELIDED : `${outer}(…)`);
  return `${path}(${arg})`;
}

/** The calls a node made inside one op computes, by the node's name without `Backward0`. */
const INNER_CALLS: Record<string, string> = {
  LogSoftmax: "log_softmax",
  Softmax: "softmax",
  Sigmoid: "sigmoid",
  Tanh: "tanh",
  Relu: "relu",
  Gelu: "gelu",
  Silu: "silu",
  Exp: "exp",
  Log: "log",
};

/**
 * What a node made inside one op computes, when the trace holds no tensor for it
 * (cross-entropy's LogSoftmaxBackward0: `log_softmax(logits)`; a GRU's gates:
 * `sigmoid(…)`): its call on what its first edge feeds. Null for a node with a tensor of
 * its own, or one whose call is not known.
 */
function innerCall(model: TraceModel, nodeId: number, depth = 2): string | null {
  const node = model.node(nodeId);
  if (!node || node.tensor !== null) return null;
  const call = INNER_CALLS[node.name.replace(/Backward\d*$/, "")];
  if (!call) return null;
  const edge = node.edges[0];
  const target = edge && edge.node !== null ? model.node(edge.node) : undefined;
  let arg: string | null = null;
  if (target) {
    const pieces = outputTensors(model, target.id);
    const piece = pieces?.[edge.input_nr];
    if (piece !== null && piece !== undefined) arg = tensorExpr(model, piece);
    else if (target.tensor !== null && !pieces) arg = tensorExpr(model, target.tensor);
    else if (depth > 1) arg = innerCall(model, target.id, depth - 1);
  }
  const text = `${call}(${arg ?? ELIDED})`;
  return text.length <= MAX_INNER ? text : `${call}(${ELIDED})`;
}

/** Inner nodes read as an operator between their operands, by name without `Backward0`. */
const INNER_OPERATORS: Record<string, string> = { Add: "+", Sub: "−", Mul: "*", Div: "/", Mm: "@", Bmm: "@" };

/**
 * Any other inner node as the call its name says (`BmmBackward0`: `… @ …`, `CloneBackward0`:
 * `clone(…)`, `TBackward0`: `…ᵀ`, `AddmmBackward0`: `… + … @ …`, `UnsafeViewBackward0`:
 * `view(…)`), its operands the
 * tensors its edges feed where they fit, else `…`.
 */
function innerOpText(model: TraceModel, nodeId: number): string | null {
  const node = model.node(nodeId);
  if (!node || node.name === "AccumulateGrad") return null;
  const key = node.name.replace(/Backward\d*$/, "");
  const operand = (slot: number) => {
    const edge = node.edges[slot];
    const target = edge?.node !== null && edge?.node !== undefined ? model.node(edge.node) : undefined;
    const piece = target ? outputTensors(model, target.id)?.[edge.input_nr] : null;
    const tensor = piece ?? (target && !outputTensors(model, target.id) ? target.tensor : null);
    return tensor === null || tensor === undefined ? ELIDED : tensorExpr(model, tensor);
  };
  const write = (args: string[]): string => {
    const symbol = INNER_OPERATORS[key];
    if (symbol && args.length === 2) return `${args[0]} ${symbol} ${args[1]}`;
    if (key === "T" && args.length === 1) return `${args[0] === ELIDED ? ELIDED : attrOf(args[0])}ᵀ`;
    if (key === "Addmm" && args.length === 3) return `${args[0]} + ${args[1]} @ ${args[2]}`;
    const call = key
      .replace(/^Unsafe/, "")
      .replace(/(?<=[a-z0-9])([A-Z])/g, "_$1")
      .toLowerCase();
    return `${call}(${args.join(", ") || ELIDED})`;
  };
  const slots = node.edges.map((_, slot) => slot);
  const full = write(slots.map(operand));
  return full.length <= MAX_INNER ? full : write(slots.map(() => ELIDED));
}

/**
 * What a node made inside one op computes, for its second line in the graph: its call
 * (`log_softmax(logits)`, `sigmoid(…)`, attention's `… @ …`, `clone(…)`), counted when the
 * op made several nodes of that name, in the order it made them, as call labels are
 * (`#2 loss.backward()`): attention's two products are `#1 … @ …` and `#2 … @ …`, nn.RNN's
 * steps `#1 … + … @ …` to `#5`, a GRU's gates `#1 sigmoid(…)` on. Null for a node with a
 * tensor of its own, or one outside any recorded op.
 */
export function innerExpr(model: TraceModel, nodeId: number): string | null {
  const node = model.node(nodeId);
  const op = model.op(node?.op);
  if (!node || node.tensor !== null || !op) return null;
  const text = innerCall(model, nodeId) ?? innerOpText(model, nodeId);
  if (!text) return null;
  const alike = op.nodes.filter((n) => {
    const other = model.node(n);
    return other?.name === node.name && other.tensor === null;
  });
  if (alike.length < 2) return text;
  return `#${[...alike].sort((a, b) => a - b).indexOf(nodeId) + 1} ${text}`;
}

/**
 * The tensors a node with several outputs made, by output number (`a, b = x.split(2)`: `a`
 * is output 0, `b` output 1); null for a node with one output. An output the trace does not
 * hold is null.
 */
export function outputTensors(model: TraceModel, nodeId: number): (number | null)[] | null {
  const node = model.node(nodeId);
  if (!node?.grad_shapes || node.grad_shapes.length < 2) return null;
  const made = (model.op(node.op)?.outputs ?? []).filter((t) => model.tensor(t)?.ev.grad_fn === node.id);
  return node.grad_shapes.map((_, i) => made[i] ?? null);
}

/**
 * The names of what a node with several outputs made, for its label (`q, k, v` for
 * `q, k, v = qkv.chunk(3, dim=-1)`: the node makes all three, not only the last), past
 * {@link TENSORS_LISTED} the first few and a count; null for a node with one output, or
 * fewer than two the trace holds.
 */
export function madeByNodeText(model: TraceModel, nodeId: number): string | null {
  const held = (outputTensors(model, nodeId) ?? []).filter((t): t is number => t !== null);
  if (held.length < 2) return null;
  return listed(held.map((t) => tensorExpr(model, t))).join(", ");
}

/**
 * What gradient a node's edge `slot` feeds: the leaf or intermediate tensor it belongs to,
 * by the edge's output number when that node made several (`a, b = x.split(2)`: `a`, not
 * the node's last output `b`).
 */
export function edgeTargetLabel(model: TraceModel, nodeId: number, slot: number): string {
  const edge = model.node(nodeId)?.edges[slot];
  if (!edge || edge.node === null) return `input ${slot}`;
  const target = model.node(edge.node);
  if (!target) return `input ${slot}`;
  const piece = outputTensors(model, target.id)?.[edge.input_nr];
  if (piece !== null && piece !== undefined) return tensorExpr(model, piece);
  if (target.tensor !== null) return tensorExpr(model, target.tensor);
  // A node without an output tensor of its own, e.g. the Wᵀ inside nn.Linear.
  const inner = target.edges.length === 1 && target.edges[0].node !== null ? edgeTargetLabel(model, target.id, 0) : null;
  if (inner && target.name.startsWith("TBackward")) return `${inner}ᵀ`;
  const call = innerCall(model, target.id);
  if (call) return call;
  // the tensor it made inside one op (the 2-D product inside nn.Linear on a batch of sequences)
  const outputs = target.grad_shapes?.length ?? 1;
  if (outputs > 1) return `output ${edge.input_nr} of ${target.name}`;
  // as its second line in the graph reads (`transpose(…)`, `#2 … @ …`), so the card's
  // formula names the node the reader sees, not `TransposeBackward0's output`
  return innerExpr(model, target.id) ?? `${target.name}'s output`;
}

/** A node's label for lists: `MulBackward0` plus what it computes when known. */
export function nodeLabel(model: TraceModel, nodeId: number): string {
  const node = model.node(nodeId);
  if (!node) return `node ${nodeId}`;
  if (node.name === "AccumulateGrad") return `AccumulateGrad → ${gradOf(model, node.tensor)}`;
  return node.name;
}

/** The loss (root) of a backward call, named. */
export function rootLabel(model: TraceModel, backward: number): string {
  const call = model.backward(backward);
  const root = call?.start.roots[0];
  return root === undefined ? "out" : tensorExpr(model, root);
}

/**
 * `expr` as Python would need it before `.attribute`: a name (`loss`, `fc1.weight`) or a
 * call (`tanh(h)`) stays as it is, anything else is parenthesised (`x * x` -> `(x * x)`:
 * `x * x.backward()` reads as x times x's backward).
 */
export function attrOf(expr: string): string {
  if (/^[\p{L}\p{N}_.₀-₉]+$/u.test(expr)) return expr;
  const call = /^[\p{L}\p{N}_.]+\(/u.exec(expr);
  if (call && expr.endsWith(")")) {
    // a call only if the parenthesis it opens is the one that ends the text: not `f(a) * g(b)`
    let depth = 0;
    for (let i = call[0].length - 1; i < expr.length; i++) {
      if (expr[i] === "(") depth++;
      else if (expr[i] === ")" && --depth === 0) return i === expr.length - 1 ? expr : `(${expr})`;
    }
  }
  return `(${expr})`;
}

/**
 * A backward call as the snippet wrote it, near enough: `loss.backward()`,
 * `(x * x).backward()`, `torch.autograd.grad(y, …)` (the inputs it was asked about are not
 * in the trace), `torch.autograd.backward(loss)`.
 */
export function backwardCallText(model: TraceModel, backward: number): string {
  const root = rootLabel(model, backward);
  const api = model.backward(backward)?.start.api;
  if (api === "autograd.grad") return `torch.autograd.grad(${root}, …)`;
  if (api === "autograd.backward") return `torch.autograd.backward(${root})`;
  return `${attrOf(root)}.backward()`;
}

/** A tensor's `.grad`, written as Python reads it: `x.grad`, `(x * 4).grad`. */
export function gradOf(model: TraceModel, id: number | null | undefined): string {
  return `${attrOf(tensorExpr(model, id))}.grad`;
}

/**
 * Tell apart backward calls that read alike (a training loop calls `loss.backward()` on
 * one line every step): each repeated label gets its count, `#2 loss.backward() · line 9`.
 */
export function callLabels(texts: string[]): string[] {
  const total = new Map<string, number>();
  for (const t of texts) total.set(t, (total.get(t) ?? 0) + 1);
  const seen = new Map<string, number>();
  return texts.map((t) => {
    if (total.get(t) === 1) return t;
    const k = (seen.get(t) ?? 0) + 1;
    seen.set(t, k);
    return `#${k} ${t}`;
  });
}

/**
 * An element set as it was written, `y[0] = 0`: its key and value where they were numbers
 * (a tensor value is named, anything else is `…`), not `y, 0, 0`.
 */
export function elementSetText(m: TraceModel, op: OpRecorded): string {
  const at = (position: number) => op.constants?.find((c) => c.position === position);
  const texts = positionalTexts(op);
  const key = at(1);
  const value = at(2);
  // a key or value kept as text (a slice, a tuple of them, a list) holds its place as a number does
  const heldKey = texts.get(1);
  const valueHeld = value ? numberText(value.value) : texts.get(2);
  const [target, ...rest] = op.inputs;
  const valueText = valueHeld ?? (rest.length ? tensorExpr(m, rest[rest.length - 1]) : "…");
  // the key's tensors (a mask; `y[range(8), idx]`'s idx) come before a tensor value among the inputs
  const keyTensors = rest.slice(0, valueHeld !== undefined ? rest.length : rest.length - 1);
  const keyHeld = key
    ? numberText(key.value)
    : heldKey !== undefined
      ? keyWithTensors(heldKey, keyTensors.slice(0, heldKey.split(KEY_TENSOR).length - 1).map((t) => tensorExpr(m, t)))
      : null;
  const keyText = keyHeld ?? (keyTensors.length ? tensorExpr(m, keyTensors[0]) : "…");
  return `${tensorExpr(m, target)}[${keyText}] = ${valueText}`;
}

/**
 * A subscript as it was written, `x[:, 0]`, `h[1]`, `probs[range(8), Y]`, `x[mask]`, when
 * its key was a number or is kept as text (a slice, a tuple of them, the tensors it holds
 * read by their names); null where the trace kept no text of a key holding a tensor (traces
 * older than that), whose row's arguments name the tensors instead.
 */
export function subscriptText(m: TraceModel, op: OpRecorded): string | null {
  if (!op.inputs.length) return null;
  const number = op.constants?.find((c) => c.position === 1);
  const held = positionalTexts(op).get(1);
  const [subscripted, ...keyTensors] = op.inputs;
  const key =
    number && !keyTensors.length ? numberText(number.value) : held !== undefined ? keyWithTensors(held, keyTensors.map((t) => tensorExpr(m, t))) : null;
  if (key === null) return null;
  const target = tensorExpr(m, subscripted);
  const plain = /^[\p{L}\p{N}_.]+(\[[^\]]*\]|\([^)]*\))*$/u.test(target);
  return `${plain ? target : `(${target})`}[${key}]`;
}

/**
 * The arguments a tape row writes after the op's name: its input tensors, then its other
 * positional arguments in their order (the Python numbers, and the text the trace keeps of
 * the rest: a dtype, a string, a tuple), then what it was passed by keyword (`h, 1.01`;
 * `randn 2, 3`; `x, dim=1`; `x, torch.float64`; `x, x, 'ij,jk->ik'`). A True or False passed
 * by position after arguments the trace does not hold is left out: with its neighbours
 * unseen nothing says what it switches (`p.to(device, None, False)` read `to p, False` in a
 * trace that kept no texts). Where the trace says where each input was passed, all of them
 * come in the call's order instead ({@link placedArgumentsText}: `gather x, 1, idx`).
 */
export function argumentsText(model: TraceModel, op: OpRecorded, most = Infinity): string {
  const texts = positionalTexts(op);
  const others = [
    ...(op.constants ?? []).map((c) => ({ position: c.position, text: numberText(c.value), flag: typeof c.value === "boolean" })),
    ...[...texts].map(([position, text]) => ({ position, text, flag: false })),
  ].sort((a, b) => a.position - b.position);
  const inputs = op.inputs.map((t) => tensorExpr(model, t));
  const placed = op.inputs.length <= most ? placedInputs(op, inputs) : null;
  if (placed) return placedArgumentsText(op, placed, others);
  const shown = others.filter((a, i) => !a.flag || a.position <= op.inputs.length + i);
  const tensors = listed(inputs, most);
  return [...tensors, ...shown.map((a) => a.text), ...keywordTexts(op)].join(", ");
}

/**
 * The arguments of an op whose trace says where each input was passed
 * (`OpRecorded.input_positions`): all in the call's order, `gather x, 1, idx`, and a tensor
 * passed by keyword under its name, `layer_norm x, (8,), weight=ln.weight, bias=ln.bias`.
 */
function placedArgumentsText(
  op: OpRecorded,
  placed: { positional: [number, string][]; keywords: [string, string][] },
  others: { position: number; text: string; flag: boolean }[],
): string {
  const positional = [...others, ...placed.positional.map(([position, text]) => ({ position, text, flag: false }))];
  const keywords = placed.keywords.map(([name, text]) => `${name}=${text}`);
  positional.sort((a, b) => a.position - b.position); // stable: a list's tensors keep their order
  // a True or False after a position the trace does not hold says nothing on its own
  const held = new Set(positional.map((a) => a.position));
  let firstGap = 0;
  while (held.has(firstGap)) firstGap++;
  const shown = positional.filter((a) => !a.flag || a.position < firstGap);
  return [...shown.map((a) => a.text), ...keywords, ...keywordTexts(op)].join(", ");
}

/**
 * What a tape row writes between the op's name and its arrow: an element set or a
 * subscript as it was written (`y[0] = 0`, `x[:, 0]`), else the op's arguments
 * ({@link argumentsText}), naming `most` tensors before it counts the rest.
 */
export function rowArgumentsText(m: TraceModel, op: OpRecorded, most: number): string {
  if (op.name === "setitem" && op.inputs.length) return elementSetText(m, op);
  return (op.name === "getitem" ? subscriptText(m, op) : null) ?? argumentsText(m, op, most);
}

/** Tensors a tape row names before it counts the rest: `_foreach_mul_` of twenty gradients, a
 * `torch.cat` of a list, `clip_grad_norm_` (its gradients in and out) filled the row. */
export const TENSORS_LISTED = 4;

/**
 * The outputs a tape row writes after its arrow. An op that hands back several of its inputs
 * as they were, in their order (`model.to(device)` on the device the model is on), says so
 * rather than naming them twice: `to model.0.weight, … +6 more → the same 9, unchanged`.
 */
export function outputsText(model: TraceModel, op: OpRecorded, most = Infinity): string {
  const { inputs, outputs } = op;
  if (outputs.length > 1 && outputs.length === inputs.length && outputs.every((t, i) => t === inputs[i])) {
    return `the same ${outputs.length}, unchanged`;
  }
  return listed(outputs.map((t) => tensorExpr(model, t)), most).join(", ");
}

/**
 * The shapes of what `op` made (see {@link shapesText}): its inputs handed back, and new
 * versions of them it hands on besides (batch_norm's running statistics), are left out,
 * unless they are all it made (an in-place op, `model.double()`).
 */
export function madeShapesText(model: TraceModel, op: OpRecorded): string {
  const { inputs, outputs } = op;
  const made = outputs.filter((t) => !inputs.includes(t) && !inputs.includes(model.tensor(t)?.ev.version_of ?? -1));
  return shapesText((made.length ? made : outputs).map((t) => model.tensor(t)?.ev.shape));
}

/**
 * What kind of tensor `op` made, when that is news: its dtype and device where they differ
 * from its first tensor input's (`float64` for `x.to(torch.float64)`, `int64` for `x.long()`,
 * `cuda:0` for `x.to("cuda")`); for an op with no tensor input (a factory), a dtype other
 * than float32 and a device other than the CPU (`torch.zeros(3, dtype=torch.float64)`,
 * `torch.randint(…)`'s int64). Empty when nothing changed.
 */
export function madeKindText(model: TraceModel, op: OpRecorded): string {
  const { inputs, outputs } = op;
  const madeId = outputs.find((t) => !inputs.includes(t) && !inputs.includes(model.tensor(t)?.ev.version_of ?? -1));
  const made = model.tensor(madeId)?.ev;
  if (!made) return "";
  const from = model.tensor(inputs[0])?.ev;
  const dtype = from ? made.dtype !== from.dtype : made.dtype !== "float32";
  const device = from ? made.device !== from.device : made.device !== "cpu";
  return [dtype ? made.dtype : "", device ? made.device : ""].filter(Boolean).join(" ");
}

/** `texts`, or past `most` of them the first `most - 1` and a count (`a, b, c, … +5 more`). */
export function listed(texts: string[], most = TENSORS_LISTED): string[] {
  return texts.length <= most ? texts : [...texts.slice(0, most - 1), `${ELIDED} +${texts.length - most + 1} more`];
}
