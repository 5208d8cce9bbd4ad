/* Generated from engine/schema/trace.schema.json by `npm run types` (`make schema`); do not edit. */

/**
 * A run's source and its ordered events: what is stored, streamed and exported.
 */
export interface GradwalkTrace {
  events: (
    | RunStarted
    | RunFinished
    | TensorIntroduced
    | TensorNamed
    | OpRecorded
    | NodeCreated
    | MemoryChanged
    | BackwardStarted
    | NodeExecuted
    | GradAccumulated
    | BackwardFinished
    | TensorFinal
    | OptimizerStep
    | BackwardCounted
    | MetricLogged
    | PitfallFound
    | HookRegistered
    | OutputWritten
    | ErrorRaised
    | LimitReached
  )[];
  format: "gradwalk-trace";
  source: string;
  version: number;
}
/**
 * A run began: what is being run and where.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "RunStarted".
 */
export interface RunStarted {
  cuda_available: boolean;
  device: string;
  filename: string;
  limits: Limits;
  python_version: string;
  schema_version: number;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  source: string;
  /**
   * seconds since the run started
   */
  t: number;
  torch_version: string;
  type: "run_started";
}
/**
 * Caps on one run. The engine enforces the recording caps; the runner the rest.
 *
 * Past a recording cap the snippet keeps running, a ``limit`` event says what was
 * dropped, and the counts in ``run_finished`` stay exact.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "Limits".
 */
export interface Limits {
  /**
   * backward() calls recorded in full while no optimizer has stepped (a loop that steps by hand); each later one sends its loss and memory only (detail_every applies to them too)
   */
  detail_calls: number;
  /**
   * also record every k-th step in full (0: never)
   */
  detail_every: number;
  /**
   * optimizer steps recorded in full detail at the start
   */
  detail_steps: number;
  /**
   * events in one trace
   */
  max_events: number;
  /**
   * grad_fn nodes recorded
   */
  max_nodes: number;
  /**
   * ops recorded on the tape
   */
  max_ops: number;
  /**
   * stdout+stderr kept
   */
  max_output_bytes: number;
  /**
   * tensors up to this size travel whole
   */
  max_value_elements: number;
  /**
   * address-space limit (runner)
   */
  memory_mb: number;
  /**
   * wall-clock limit (runner)
   */
  timeout_s: number;
}
/**
 * The run ended; always the last event of a trace.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "RunFinished".
 */
export interface RunFinished {
  counts: Counts;
  duration_s: number;
  message: string;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  status: "ok" | "error" | "timeout" | "cancelled" | "crashed" | "limit";
  /**
   * seconds since the run started
   */
  t: number;
  type: "run_finished";
}
/**
 * Exact totals of a run, including what a cap kept out of the trace.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "Counts".
 */
export interface Counts {
  backward_calls: number;
  dropped_events: number;
  dropped_nodes: number;
  dropped_ops: number;
  events: number;
  nodes: number;
  ops: number;
  optimizer_steps: number;
  tensors: number;
  /**
   * observations gradwalk gave up on (a tensor it could not read, a detector or metric that failed); the run itself was not affected
   */
  unrecorded: number;
}
/**
 * A tensor appeared for the first time (as an op's input or output, or a backward root).
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "TensorIntroduced".
 */
export interface TensorIntroduced {
  device: string;
  dtype: string;
  grad_fn: number | null;
  id: number;
  is_leaf: boolean;
  is_param: boolean;
  line: number | null;
  /**
   * snippet variable or qualified parameter name
   */
  name: string | null;
  /**
   * index of the op that produced it
   */
  op: number | null;
  /**
   * name inside its module, e.g. fc1.weight
   */
  param_name: string | null;
  requires_grad: boolean;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  shape: number[];
  /**
   * seconds since the run started
   */
  t: number;
  type: "tensor";
  value: (FullValue | SummaryValue) | null;
  /**
   * the id this tensor is a new version of: the same object, changed in place (by an op, by backward adding into a .grad, or by code not recorded), or the object that took its place in a module (a buffer a conversion replaced)
   */
  version_of: number | null;
}
/**
 * A small tensor's values, whole: ``flat`` is row-major, reshape with ``shape``.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "FullValue".
 */
export interface FullValue {
  flat: (number | boolean)[];
  kind: "full";
  shape: number[];
}
/**
 * A large tensor described by statistics; its elements never enter a trace.
 *
 * ``hist`` counts elements in ``len(hist)`` equal bins over ``[min, max]``, taken over an
 * evenly strided sample of at most 256 elements (read it as a shape, not exact counts).
 * Statistics are exact, over finite elements; ``nan`` and ``inf`` count the others.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "SummaryValue".
 */
export interface SummaryValue {
  hist: number[];
  inf: number;
  kind: "summary";
  max: number | null;
  mean: number | null;
  min: number | null;
  nan: number;
  norm: number | null;
  numel: number;
  /**
   * what the statistics are of: the elements, or (abs) each element's magnitude |z|, for a complex tensor, small ones too
   */
  of: "value" | "abs";
  shape: number[];
  std: number | null;
}
/**
 * A name became known for a tensor (the variable it was bound to), or, with ``name``
 * None, a name given before no longer holds (a function's local that the module level
 * later bound to another tensor: NOTE [A local name that hides another tensor]).
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "TensorNamed".
 */
export interface TensorNamed {
  id: number;
  name: string | null;
  param_name: string | null;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "tensor_named";
}
/**
 * One forward operation at the Python API level, in execution order.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "OpRecorded".
 */
export interface OpRecorded {
  /**
   * what was called, e.g. Tensor.__rmul__, torch.tanh, F.linear
   */
  api: string;
  /**
   * the other arguments with a short text (a dtype, a string, a tuple of numbers), positional ones first; absent when there are none. Positions neither these nor constants hold are the inputs'
   */
  arguments: OpArgument[];
  /**
   * Python numbers among the positional arguments; the other positions hold the inputs, in order, or an argument of `arguments`
   */
  constants: OpConstant[];
  grad_mode: "grad" | "no_grad" | "inference_mode";
  index: number;
  /**
   * the op wrote into an input (add_, F.relu(x, inplace=True)); one that hands an input back unchanged (x.float() of a float tensor) is not in-place, and its output keeps the input's id
   */
  inplace: boolean;
  /**
   * for each input, where the call passed it: the index of the positional argument that held it (the tensors of one list share one) or the keyword's name; only where an argument that is not a tensor comes before a tensor (x.gather(1, idx)) or a tensor was passed by keyword (F.layer_norm(x, (8,), weight=w)); absent otherwise: the inputs come first, in order
   */
  input_positions: (number | string)[] | null;
  inputs: number[];
  /**
   * Python numbers passed by keyword (dim=1, keepdim=True, p=0.5), in the order given
   */
  keywords: OpKeyword[];
  line: number | null;
  module_path: string | null;
  /**
   * short name, e.g. mul, linear, cross_entropy
   */
  name: string;
  /**
   * grad_fn nodes this op created
   */
  nodes: number[];
  outputs: number[];
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  /**
   * the module-level line that led here
   */
  top_line: number | null;
  type: "op";
}
/**
 * An argument that is neither a tensor nor a Python number, as text a call could write, for
 * reading only: ``torch.float64`` in ``x.to(torch.float64)``, ``'ij,jk->ik'`` in
 * ``torch.einsum``, ``(0, 1)`` in ``x.sum(dim=(0, 1))``, ``'sum'`` in ``reduction='sum'``,
 * ``1:3`` in ``x[1:3]`` (a slice reads as in a subscript). A subscript's key that holds
 * tensors writes each as ``⬚``: they are the op's inputs after the subscripted tensor, in
 * order (``(range(8), ⬚)`` in ``probs[range(8), Y]``; a long key ending ``…`` writes fewer).
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "OpArgument".
 */
export interface OpArgument {
  /**
   * for a keyword: how many of the op's keywords that were numbers (OpRecorded.keywords) came before it in the call; None in traces older than this field (read it after them all)
   */
  after: number | null;
  /**
   * the keyword it was passed by; None for a positional one
   */
  name: string | null;
  /**
   * index among the positional arguments; None for a keyword
   */
  position: number | null;
  text: string;
}
/**
 * A Python number passed to an op: ``4`` in ``4 * x``, ``0.1`` in ``h + 0.1``.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "OpConstant".
 */
export interface OpConstant {
  /**
   * index among the op's positional arguments (self is 0 for methods)
   */
  position: number;
  value: number | boolean;
}
/**
 * A Python number passed to an op by keyword: ``dim=1`` in ``x.sum(dim=1)``.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "OpKeyword".
 */
export interface OpKeyword {
  name: string;
  value: number | boolean;
}
/**
 * A ``grad_fn`` node entered the graph.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "NodeCreated".
 */
export interface NodeCreated {
  edges: Edge[];
  /**
   * shape of each gradient the node receives (an edge's input_nr picks one), when ``tensor`` does not tell it: the node's op made several outputs, or a tensor made inside the op and never recorded (the weight.t() of F.linear)
   */
  grad_shapes: number[][] | null;
  id: number;
  line: number | null;
  module_path: string | null;
  /**
   * type(node).__name__, e.g. MulBackward0, AccumulateGrad
   */
  name: string;
  op: number | null;
  saved: SavedValue[];
  saved_bytes: number;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  /**
   * output tensor, or the leaf of AccumulateGrad
   */
  tensor: number | null;
  type: "node";
}
/**
 * A ``next_functions`` entry: gradient for this node's input ``input_nr`` flows to ``node``.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "Edge".
 */
export interface Edge {
  input_nr: number;
  node: number | null;
}
/**
 * Something a node saved for backward.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "SavedValue".
 */
export interface SavedValue {
  bytes: number;
  dtype: string | null;
  name: string;
  /**
   * repr of a non-tensor saved value
   */
  scalar: string | null;
  shape: number[] | null;
  tensor: number | null;
}
/**
 * Bytes held by tensors saved for backward changed (distinct storages counted once).
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "MemoryChanged".
 */
export interface MemoryChanged {
  cuda_allocated: number | null;
  delta: number;
  line: number | null;
  saved_bytes: number;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "memory";
}
/**
 * A backward call began.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "BackwardStarted".
 */
export interface BackwardStarted {
  api: "Tensor.backward" | "autograd.backward" | "autograd.grad";
  create_graph: boolean;
  index: number;
  line: number | null;
  retain_graph: boolean;
  roots: number[];
  seed: ((FullValue | SummaryValue) | null)[];
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "backward_started";
}
/**
 * The autograd engine ran one node, in the engine's real order.
 *
 * ``grad_in`` are the gradients arriving for the node's outputs; ``grad_out`` the
 * gradients it sends along its edges (aligned with the node's ``edges``).
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "NodeExecuted".
 */
export interface NodeExecuted {
  backward: number;
  grad_in: ((FullValue | SummaryValue) | null)[];
  grad_out: ((FullValue | SummaryValue) | null)[];
  node: number;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  step: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "node_executed";
}
/**
 * A gradient was added into a leaf's ``.grad``: ``before + added = after``, unless a
 * ``register_post_accumulate_grad_hook`` changed ``.grad`` (``after`` is what it left).
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "GradAccumulated".
 */
export interface GradAccumulated {
  added: (FullValue | SummaryValue) | null;
  after: (FullValue | SummaryValue) | null;
  backward: number;
  before: (FullValue | SummaryValue) | null;
  node: number;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  step: number;
  /**
   * seconds since the run started
   */
  t: number;
  tensor: number;
  type: "grad_accumulated";
}
/**
 * A backward call returned (or raised).
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "BackwardFinished".
 */
export interface BackwardFinished {
  graph_freed: boolean;
  index: number;
  nodes_executed: number;
  ok: boolean;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "backward_finished";
}
/**
 * A named leaf or parameter, or a tensor that called ``retain_grad()``, as the run left
 * it: its value and its ``.grad``.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "TensorFinal".
 */
export interface TensorFinal {
  grad: (FullValue | SummaryValue) | null;
  id: number;
  name: string;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "tensor_final";
  value: (FullValue | SummaryValue) | null;
}
/**
 * An optimizer finished ``step()``, with its training metrics.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "OptimizerStep".
 */
export interface OptimizerStep {
  cuda_allocated: number | null;
  /**
   * this step's tape, graph and backward were recorded
   */
  detail: boolean;
  grad_norm: number | null;
  /**
   * bytes held by tensors saved for backward after the step
   */
  graph_bytes: number;
  /**
   * the most bytes saved tensors held at any moment since the previous optimizer step (or the run's start): with graph_bytes, each step's rise and fall
   */
  graph_peak_bytes: number;
  line: number | null;
  /**
   * root of the last backward, when scalar
   */
  loss: number | null;
  /**
   * per param group
   */
  lr: number[];
  /**
   * the optimizer's label, e.g. opt (SGD)
   */
  optimizer: string;
  param_norm: number;
  params: ParamStat[];
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * 1-based step of this optimizer
   */
  step: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "optimizer_step";
  update_norm: number;
  wall_s: number;
}
/**
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "ParamStat".
 */
export interface ParamStat {
  grad_norm: number | null;
  name: string;
  param_norm: number;
  tensor: number;
  update_norm: number;
}
/**
 * A backward() call of a loop that steps by hand, recorded metrics-only: no optimizer has
 * stepped and the first ``Limits.detail_calls`` calls were recorded in full (NOTE [Loops that
 * step by hand] in engine/hand_loops.py). No tape, graph or walk: its loss and memory.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "BackwardCounted".
 */
export interface BackwardCounted {
  /**
   * bytes held by tensors saved for backward after the call
   */
  graph_bytes: number;
  /**
   * the most bytes saved tensors held at any moment since the previous such event
   */
  graph_peak_bytes: number;
  /**
   * 0-based among all backward calls, as backward_started's
   */
  index: number;
  line: number | null;
  /**
   * the root's value, when it has one element
   */
  loss: number | null;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "backward_counted";
  /**
   * seconds since the previous backward call returned
   */
  wall_s: number;
}
/**
 * A metric the snippet logged with ``gradwalk.log(name, value)``.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "MetricLogged".
 */
export interface MetricLogged {
  line: number | null;
  name: string;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  step: number | null;
  /**
   * seconds since the run started
   */
  t: number;
  type: "metric";
  value: number;
}
/**
 * A silent mistake, explained.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "PitfallFound".
 */
export interface PitfallFound {
  fix: string;
  kind: string;
  line: number | null;
  message: string;
  metrics_only_after: number | null;
  nodes: number[];
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  tensors: number[];
  title: string;
  type: "pitfall";
}
/**
 * The snippet hooked a tensor's gradient (``y.register_hook(fn)``): in backward, ``fn``
 * sees the gradient that reaches the tensor and may return another in its place.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "HookRegistered".
 */
export interface HookRegistered {
  line: number | null;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  tensor: number;
  type: "hook_registered";
}
/**
 * Text the snippet wrote to stdout or stderr.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "OutputWritten".
 */
export interface OutputWritten {
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  stream: "stdout" | "stderr";
  /**
   * seconds since the run started
   */
  t: number;
  text: string;
  type: "output";
}
/**
 * An exception escaped the snippet.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "ErrorRaised".
 */
export interface ErrorRaised {
  exc_type: string;
  hint: string | null;
  line: number | null;
  message: string;
  metrics_only_after: number | null;
  metrics_only_calls: number | null;
  node: number | null;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  traceback: string;
  type: "error";
}
/**
 * A recording cap was reached; what follows of that kind is counted, not recorded.
 *
 * This interface was referenced by `GradwalkTrace`'s JSON-Schema
 * via the `definition` "LimitReached".
 */
export interface LimitReached {
  cap: number;
  message: string;
  /**
   * position in the run's stream, from 0, no gaps
   */
  seq: number;
  /**
   * seconds since the run started
   */
  t: number;
  type: "limit";
  what: "ops" | "nodes" | "events" | "output";
}

/** Any event of the stream (the union tagged by `type`). */
export type GradwalkEvent = GradwalkTrace["events"][number];
/** A tensor's values as they travel: whole, or summarized. */
export type TensorValue = FullValue | SummaryValue;
