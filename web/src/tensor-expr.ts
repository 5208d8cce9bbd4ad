// A short expression for an unnamed tensor, rebuilt from the op that made it, its inputs'
// labels and the Python numbers it was passed: `x * 2 + 1`, `x[:2]`, `x − 2 * w`,
// `arange(5)`, `max(x).values`, `x > 0`, `w.T`, `sum(x, dim=1)`. Written as Python would read it (operators by precedence,
// parentheses only where needed), with `−` for minus. naming.ts decides when one is used.
import type { TraceModel } from "./trace-model";
import type { OpRecorded } from "./types/events";

/** An expression's text and how tightly it binds, to know when it needs parentheses. */
interface Expr {
  text: string;
  prec: number;
}

// Python's precedence, loosest first
const COMPARE = 0; // > < >= <= == !=
const SUM = 1; // + −
const PRODUCT = 2; // * / // % @
const UNARY = 3; // −x
const POWER = 4; // x**2
const ATOM = 5; // a name, a call, a subscript, a number

const INFIX: Record<string, [string, number]> = {
  add: ["+", SUM],
  sub: ["−", SUM],
  mul: ["*", PRODUCT],
  div: ["/", PRODUCT],
  true_divide: ["/", PRODUCT],
  floordiv: ["//", PRODUCT],
  floor_divide: ["//", PRODUCT],
  remainder: ["%", PRODUCT],
  matmul: ["@", PRODUCT],
  mm: ["@", PRODUCT],
  pow: ["**", POWER],
  gt: [">", COMPARE],
  lt: ["<", COMPARE],
  ge: [">=", COMPARE],
  le: ["<=", COMPARE],
  eq: ["==", COMPARE],
  ne: ["!=", COMPARE],
};

// Reflected operators (`1 - x` runs x.__rsub__(1)): the tensor is the right operand.
const REFLECTED: Record<string, string> = {
  rsub: "sub",
  rdiv: "div",
  rtruediv: "div",
  rfloordiv: "floordiv",
  rmod: "remainder",
  rpow: "pow",
  rmul: "mul",
  radd: "add",
  rmatmul: "matmul",
};

/** Ops that take their tensors as one list (`torch.cat([a, b], 1)`). */
const TAKES_LIST = new Set(["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"]);

/** Ops that return (values, indices), read as `.values` and `.indices`. */
const VALUES_INDICES = new Set(["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "aminmax"]);

/** Transposes and a complex tensor's parts, read as attributes (`w.T`, `z.real`; NOTE
 * [Transposes read as attributes] in engine/tape.py). */
const ATTRIBUTES = new Set(["T", "mT", "H", "mH", "real", "imag"]);

/** A subscript key longer than this, read from the source, is written `…`. */
const MAX_KEY = 12;

/** What stands for an operand left out to keep a label short. */
export const ELIDED = "…";

/** Significant digits of a number written into a label or a tape row (`math.pi` reads 3.14159). */
const LABEL_DIGITS = 6;

/**
 * A Python number as the snippet would write it (`4`, `0.1`, `1e-8`): a float to `digits`
 * significant digits, so a computed one (`-math.pi`, `1 / 3`) does not take a tape row's
 * width in digits; pass 17 for the number exactly (its shortest form that reads back the same).
 */
export function numberText(value: number | boolean, digits = LABEL_DIGITS): string {
  if (typeof value === "boolean") return value ? "True" : "False";
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(digits)));
}

const atom = (text: string): Expr => ({ text, prec: ATOM });
const numberExpr = (value: number | boolean): Expr => ({ text: numberText(value), prec: typeof value === "number" && value < 0 ? UNARY : ATOM });

/** `e`'s text, in parentheses when it binds looser than `prec`. */
function at(e: Expr, prec: number): string {
  return e.prec < prec ? `(${e.text})` : e.text;
}

/**
 * The op's positional arguments that are neither tensors nor numbers, as text by position
 * (`torch.float64`, `'ij,jk->ik'`, `(0, 1)`): what the trace keeps of them (older traces
 * keep none).
 */
export function positionalTexts(op: OpRecorded): Map<number, string> {
  const texts = new Map<number, string>();
  for (const a of op.arguments ?? []) if (a.position !== null) texts.set(a.position, a.text);
  return texts;
}

/**
 * The op's positional arguments in order: its input tensors, the Python numbers it was
 * passed and the text of its other arguments; a position that held none of these (an
 * argument with no short text, or a trace that kept no text) reads `…`. With `placed`, the
 * tensors go where the trace says the call passed them (`OpRecorded.input_positions`:
 * `gather(x, 1, idx)`, not `gather(x, idx, 1)`), those passed by keyword left to
 * {@link keywordTensors}; without it, or in a trace that does not say, first and in order.
 */
function positional(op: OpRecorded, inputs: Expr[], placed = false): Expr[] {
  const constants = op.constants ?? [];
  const byPosition = new Map(constants.map((c) => [c.position, c.value]));
  const texts = positionalTexts(op);
  const where = placed ? inputsByPosition(op, inputs) : null;
  const last = Math.max(
    (where ? where.size : inputs.length) + constants.length + texts.size,
    ...constants.map((c) => c.position + 1),
    ...[...texts.keys()].map((p) => p + 1),
    ...[...(where?.keys() ?? [])].map((p) => p + 1),
  );
  const out: Expr[] = [];
  let next = 0;
  for (let pos = 0; pos < last; pos++) {
    const constant = byPosition.get(pos);
    const text = texts.get(pos);
    const held = where?.get(pos);
    if (constant !== undefined) out.push(numberExpr(constant));
    else if (text !== undefined) out.push(atom(text));
    else if (held) out.push(held.length === 1 ? held[0] : atom(`[${held.map((e) => e.text).join(", ")}]`));
    else if (!where && next < inputs.length) out.push(inputs[next++]);
    else out.push(atom(ELIDED));
  }
  return out;
}

/**
 * Where the call passed each of the op's inputs, as the trace says (`OpRecorded.input_positions`),
 * with `items` (one per input: its expression, its text) attached: those passed by position
 * (a list's tensors share its position), in input order, and those passed by keyword. Null
 * where the trace does not say.
 */
export function placedInputs<T>(op: OpRecorded, items: T[]): { positional: [number, T][]; keywords: [string, T][] } | null {
  const placed = op.input_positions;
  if (!placed || placed.length !== items.length) return null;
  const positional: [number, T][] = [];
  const keywords: [string, T][] = [];
  placed.forEach((at, i) => {
    if (typeof at === "number") positional.push([at, items[i]]);
    else keywords.push([at, items[i]]);
  });
  return { positional, keywords };
}

/** The op's input tensors by the position the call passed them at, where the trace says (null where not). */
function inputsByPosition(op: OpRecorded, inputs: Expr[]): Map<number, Expr[]> | null {
  const placed = placedInputs(op, inputs);
  if (!placed) return null;
  const where = new Map<number, Expr[]>();
  for (const [at, e] of placed.positional) where.set(at, [...(where.get(at) ?? []), e]);
  return where;
}

/** The input tensors the call passed by keyword, `weight=w` (none where the trace does not say). */
function keywordTensors(op: OpRecorded, inputs: Expr[]): string[] {
  return (placedInputs(op, inputs)?.keywords ?? []).map(([name, e]) => `${name}=${e.text}`);
}

/**
 * What the op was passed by keyword, in the call's order: the Python numbers (`dim=1`) and
 * the other arguments the trace keeps as text (`reduction='sum'`, `dtype=torch.float64`),
 * each text after the numbers its `after` counts (after them all in a trace without it).
 */
export function keywordTexts(op: OpRecorded): string[] {
  const numbers = (op.keywords ?? []).map((k) => `${k.name}=${numberText(k.value)}`);
  const out: string[] = [];
  let taken = 0;
  for (const a of op.arguments ?? []) {
    if (a.name === null) continue;
    const at = Math.min(a.after ?? numbers.length, numbers.length);
    if (at > taken) out.push(...numbers.slice(taken, at));
    taken = Math.max(taken, at);
    out.push(`${a.name}=${a.text}`);
  }
  return [...out, ...numbers.slice(taken)];
}

/** A scalar the op's grad_fn node saved (`alpha` of SubBackward0, `exponent` of PowBackward0). */
function savedScalar(model: TraceModel, op: OpRecorded, name: string): string | null {
  for (const nodeId of op.nodes) {
    const saved = model.node(nodeId)?.saved.find((s) => s.name === name && s.scalar !== null);
    if (saved?.scalar) return saved.scalar;
  }
  return null;
}

const sourceLines = new WeakMap<TraceModel, { source: string; lines: string[] }>();

/**
 * The key of `tensor[…]` as line `line` of the source wrote it (`:2`, `..., 1`), when the
 * line subscripts `tensor` one way only: the trace keeps a key only when it is a number.
 */
function keyInSource(model: TraceModel, line: number | null, tensor: string): string | null {
  if (line === null || !model.source) return null;
  let kept = sourceLines.get(model);
  if (kept?.source !== model.source) {
    kept = { source: model.source, lines: model.source.split("\n") };
    sourceLines.set(model, kept);
  }
  const text = kept.lines[line - 1] ?? "";
  const escaped = tensor.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const keys = new Set<string>();
  for (const m of text.matchAll(new RegExp(`(?<![\\p{L}\\p{N}_.\\])])${escaped}\\[`, "gu"))) {
    let depth = 1;
    let i = m.index + m[0].length;
    for (; i < text.length && depth > 0; i++) {
      if ("[({".includes(text[i])) depth++;
      else if ("])}".includes(text[i])) depth--;
    }
    if (depth !== 0) return null;
    keys.add(text.slice(m.index + m[0].length, i - 1).trim());
  }
  const [key] = keys;
  return keys.size === 1 && key.length <= MAX_KEY ? key : null;
}

/** A key kept as text, as a subscript writes it: a tuple's parentheses are the brackets' (`(:, 0)` → `:, 0`). */
export function subscriptKey(text: string): string {
  return /^\(.*\)$/.test(text) ? text.slice(1, -1).replace(/,$/, "") : text;
}

/** How the trace writes a tensor its subscript's key holds (`(range(8), ⬚)`; the engine's KEY_TENSOR). */
export const KEY_TENSOR = "⬚";

/**
 * A subscript's key kept as text, as the subscript writes it ({@link subscriptKey}), each
 * tensor it holds ({@link KEY_TENSOR}) read as the next of `tensors`, in order:
 * `probs[range(8), Y]`. Null when the key holds more or fewer tensors than that.
 */
export function keyWithTensors(text: string, tensors: string[]): string | null {
  const parts = subscriptKey(text).split(KEY_TENSOR);
  if (parts.length - 1 !== tensors.length) return null;
  return parts.reduce((out, part, i) => out + tensors[i - 1] + part);
}

/** `x[1]`, `x[:, 0]`, `x[range(8), y]` (the key's text the trace keeps), `x[mask]`, `x[:2]` (from the source line), else `x[…]`. */
function subscript(model: TraceModel, op: OpRecorded, inputs: Expr[]): Expr {
  const [target, ...tensorKeys] = inputs;
  const constants = op.constants ?? [];
  const keyText = positionalTexts(op).get(1);
  let key: string | null = null;
  if (constants.length === 1 && constants[0].position === 1 && tensorKeys.length === 0) key = numberText(constants[0].value);
  // a key kept as text: `x[1:3]`, `x[:, 0]` (a tuple's parentheses are the brackets'), `x[0, idx]`
  else if (keyText !== undefined) key = keyWithTensors(keyText, tensorKeys.map((k) => k.text));
  if (key === null && target.prec === ATOM) key = keyInSource(model, op.line, target.text);
  if (key === null && constants.length === 0 && tensorKeys.length === 1) key = tensorKeys[0].text;
  return atom(`${at(target, ATOM)}[${key ?? ELIDED}]`);
}

/** `a op b`, with the alpha an add or sub was given (`x − 2 * w`). */
function infix(model: TraceModel, op: OpRecorded, name: string, args: Expr[]): Expr {
  const [symbol, prec] = INFIX[name];
  let [left, right] = args;
  const alpha = name === "add" || name === "sub" ? savedScalar(model, op, "alpha") : null;
  // a negative alpha in brackets, with the minus the labels use (`a − (−2) * b`, not `a − -2 * b`)
  const factorText = alpha?.startsWith("-") ? `(−${alpha.slice(1)})` : alpha;
  if (alpha !== null && alpha !== "1") right = { text: `${factorText} * ${at(right, PRODUCT + 1)}`, prec: PRODUCT };
  if (prec === POWER) return { text: `${at(left, POWER + 1)}**${at(right, UNARY)}`, prec };
  return { text: `${at(left, prec)} ${symbol} ${at(right, prec + 1)}`, prec };
}

/**
 * The expression op `op` computes for its output `output`, with its input tensors read as
 * `inputs`, and the numbers it was passed by keyword unless `keywords` is false; null when
 * there is nothing to write (a multi-output op's output it does not name).
 */
export function opExpr(model: TraceModel, op: OpRecorded, inputs: Expr[], output: number, keywords = true): Expr | null {
  const named = keywords ? keywordTexts(op) : [];
  const raw = op.name.replace(/_$/, "");
  const reflected = REFLECTED[raw];
  const name = reflected ?? raw;
  let expr: Expr;
  if (name === "getitem" && inputs.length >= 1) expr = subscript(model, op, inputs);
  else if (INFIX[name] && (inputs.length === 2 || (inputs.length === 1 && (op.constants ?? []).length >= 1))) {
    const args = positional(op, inputs).slice(0, 2);
    if (reflected) args.reverse();
    // a division that rounds reads as it rounds (it read `x / 2` for rounding_mode='floor')
    const rounding = name === "div" || name === "divide" ? savedScalar(model, op, "rounding_mode") : null;
    expr = infix(model, op, rounding === "'floor'" ? "floordiv" : name, args);
    if (rounding === "'trunc'") expr = atom(`trunc(${expr.text})`);
  } else if (name === "pow" && !reflected && inputs.length === 1) {
    // a trace without constants: the exponent PowBackward0 saved
    expr = infix(model, op, name, [inputs[0], atom(savedScalar(model, op, "exponent") ?? ELIDED)]);
  } else if (INFIX[name] && inputs.length === 1) {
    expr = { text: `${at(inputs[0], ATOM)} ${INFIX[name][0]} ${ELIDED}`, prec: INFIX[name][1] };
  } else if (name === "neg" && inputs.length === 1) expr = { text: `−${at(inputs[0], UNARY)}`, prec: UNARY };
  else if (name === "t" && inputs.length === 1) expr = atom(`${at(inputs[0], ATOM)}ᵀ`);
  else if (ATTRIBUTES.has(name) && inputs.length === 1) expr = atom(`${at(inputs[0], ATOM)}.${name}`);
  else if (TAKES_LIST.has(name)) {
    const rest = [...positional(op, []).slice(1).map((e) => e.text), ...named].map((text) => `, ${text}`);
    expr = atom(`${name}([${inputs.map((e) => e.text).join(", ")}]${rest.join("")})`);
  } else {
    const args = [...positional(op, inputs, true).map((e) => e.text), ...keywordTensors(op, inputs), ...named];
    expr = atom(`${name}(${args.length ? args.join(", ") : ELIDED})`);
  }
  if (op.outputs.length === 1) return expr;
  const i = op.outputs.indexOf(output);
  if (VALUES_INDICES.has(name) && (i === 0 || i === 1)) return atom(`${expr.text}.${i === 0 ? "values" : "indices"}`);
  return atom(`${expr.text}[${i}]`);
}

/** How a name reads with a count after it: `h₃`. */
const SUBSCRIPT_DIGITS = "₀₁₂₃₄₅₆₇₈₉";

interface Rebindings {
  /** the model's event count when this was worked out (a live run names tensors late) */
  events: number;
  /** tensor id -> its name with its count, for the tensors a line rebinds (`h₃`) */
  names: Map<number, string>;
}

const rebindingsOf = new WeakMap<TraceModel, Rebindings>();

/**
 * NOTE [Rebound names are counted]
 * A line that rebinds a variable to a tensor made from that variable's last value (an RNN
 * unrolled by hand, `for t in range(5): h = torch.tanh(h @ W + x[t])`) makes tensors that
 * all carry one name: every loop node read `h`, step 1 as step 5. So each tensor in such a
 * chain gets its place in it as a subscript, as a recurrence is written on paper:
 * `h₁ = tanh(h @ W + x[0])`, `h₂ = tanh(h₁ @ W + x[1])`. Only tensors with a grad_fn count:
 * the `torch.zeros` the loop started from keeps its plain name, a training loop's `loss` on
 * one line each step is not made from the last step's loss and keeps its name, and so does
 * a weight updated in place under no_grad (`w -= lr * w.grad`); a version an in-place op
 * made is the variable changed, not rebound. The count follows the variable, not the line:
 * `h = x * 2`, `h = h + 1`, `h = torch.tanh(h)` on three lines read `h₁`, `h₂`, `h₃` (all
 * three read `h`), and a loop body of two lines that both rebind `h` counts on through both,
 * where each line counted from 1 and two tensors read `h₁`.
 */
function rebindings(model: TraceModel): Map<number, string> {
  const kept = rebindingsOf.get(model);
  if (kept?.events === model.events.length) return kept.names;
  const lineOf = (t: { ev: { line: number | null; op: number | null } }) => t.ev.line ?? model.op(t.ev.op)?.top_line ?? null;
  // the tensors that could be counted: a name another such tensor shares, a grad_fn, a line
  const keyOf = new Map<number, string>();
  const sharing = new Map<string, number>();
  for (const t of model.tensors.values()) {
    const line = lineOf(t);
    // a version an in-place op made (`y[0] = 0`, `h += 1`) is the same variable changed, not rebound
    if (!t.name || t.ev.grad_fn === null || line === null || model.op(t.ev.op)?.inplace) continue;
    const key = t.name;
    keyOf.set(t.id, key);
    sharing.set(key, (sharing.get(key) ?? 0) + 1);
  }
  // each tensor's ancestors of a counted key, by their place in their chain (ids grow as tensors are made)
  const reach = new Map<number, Map<string, number>>();
  const place = new Map<number, number>();
  for (const t of model.tensors.values()) {
    const op = model.op(t.ev.op);
    let seen: Map<string, number> | undefined;
    for (const input of op?.inputs ?? []) {
      if (input >= t.id) continue;
      const from = reach.get(input);
      const key = keyOf.get(input);
      const own = key !== undefined && (sharing.get(key) ?? 0) > 1 ? place.get(input) : undefined;
      if (!from && own === undefined) continue;
      seen ??= new Map();
      for (const [k, n] of from ?? []) seen.set(k, Math.max(seen.get(k) ?? 0, n));
      if (key !== undefined && own !== undefined) seen.set(key, Math.max(seen.get(key) ?? 0, own));
    }
    const key = keyOf.get(t.id);
    if (key !== undefined && (sharing.get(key) ?? 0) > 1) place.set(t.id, (seen?.get(key) ?? 0) + 1);
    if (seen) reach.set(t.id, seen);
  }
  // a chain of one is no chain: its tensor keeps its plain name
  const chained = new Set<string>();
  for (const [id, n] of place) if (n > 1) chained.add(keyOf.get(id) as string);
  const names = new Map<number, string>();
  for (const [id, n] of place) {
    if (!chained.has(keyOf.get(id) as string)) continue;
    const count = [...String(n)].map((c) => SUBSCRIPT_DIGITS[Number(c)]).join("");
    names.set(id, `${model.tensor(id)?.name}${count}`);
  }
  rebindingsOf.set(model, { events: model.events.length, names });
  return names;
}

/**
 * The name tensor `id` goes by: its variable, counted when a line rebinds that variable
 * from itself (`h₃`, NOTE [Rebound names are counted]); else its parameter name; else null.
 */
export function nameOf(model: TraceModel, id: number): string | null {
  const t = model.tensor(id);
  if (!t) return null;
  if (t.name) return rebindings(model).get(id) ?? t.name;
  return t.paramName;
}

/**
 * A module path by its own name (`enc.layers.0.norm1` -> `norm1`), with its parent's where
 * that name is a number (`net.0` stays `net.0`, `enc.layers.0` is `layers.0`).
 */
export function shortModule(path: string): string {
  const parts = path.split(".");
  return /^\d+$/.test(parts[parts.length - 1]) ? parts.slice(-2).join(".") : parts[parts.length - 1];
}

/**
 * Tensor `id` as the op that made it with every operand left out (`… + …`, `relu(…)`, a
 * call's numbers too: `multi_head_attention_forward(…)`); null without an op.
 */
export function bareExprOf(model: TraceModel, id: number): string | null {
  const op = model.op(model.tensor(id)?.ev.op);
  const text = op ? opExpr(model, op, op.inputs.map(() => atom(ELIDED)), id, false)?.text : null;
  if (!text) return null;
  const call = /^([\p{L}\p{N}_.]+)\(.*\)(\[\d+\]|\.values|\.indices)?$/u.exec(text);
  return call ? `${call[1]}(${ELIDED})${call[2] ?? ""}` : text;
}

/**
 * Tensor `id` as an expression, its operands written `depth` ops deep: an operand past that
 * depth reads `…`, a named one its name, a module's output the call it came out of
 * (`net.fc1(…)`, or by its own name, `fc1(…)`, when `shortModules`); the numbers ops were
 * passed by keyword (`dim=1`) unless `keywords` is false. Null for a tensor no recorded op made.
 */
export function exprOf(model: TraceModel, id: number, depth: number, keywords = true, shortModules = false): Expr | null {
  const t = model.tensor(id);
  const op = model.op(t?.ev.op);
  if (!t || !op) return null;
  const operand = (i: number): Expr => {
    const named = nameOf(model, i);
    if (named) return atom(named);
    const module = model.moduleOutputOf(i);
    if (module !== undefined) return atom(`${shortModules ? shortModule(module) : module}(…)`);
    if (depth <= 1) return atom(ELIDED);
    return exprOf(model, i, depth - 1, keywords, shortModules) ?? atom(`t${i}`);
  };
  return opExpr(model, op, op.inputs.map(operand), id, keywords);
}
