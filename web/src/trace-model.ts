// The trace model: ingests a run's events one at a time and answers every view's questions.
//
// Every view (graph, tape, stepper, inspector, output, charts) reads from one TraceModel,
// and a live stream, a stored trace and a static export all feed it the same events, so
// they render the same way. Ingesting is O(1) per event; the indexes below are built as
// events arrive, so queries are lookups.
import type {
  BackwardFinished,
  BackwardStarted,
  ErrorRaised,
  GradAccumulated,
  GradwalkEvent,
  LimitReached,
  MemoryChanged,
  MetricLogged,
  NodeCreated,
  NodeExecuted,
  OpRecorded,
  OptimizerStep,
  OutputWritten,
  PitfallFound,
  RunFinished,
  RunStarted,
  TensorFinal,
  TensorIntroduced,
} from "./types/events";

export interface TensorInfo {
  id: number;
  ev: TensorIntroduced;
  /** The snippet variable (or qualified parameter name) once known. */
  name: string | null;
  paramName: string | null;
}

/** One position of the backward stepper: a node the engine ran, or the end of a call. */
export interface StepEntry {
  /** Position in the run's timeline (all backward calls, in order). */
  index: number;
  backward: number;
  kind: "node" | "end";
  exec: NodeExecuted | null;
  /** Gradients added into leaves while this node ran (AccumulateGrad). */
  accs: GradAccumulated[];
  finished: BackwardFinished | null;
}

export interface BackwardCall {
  index: number;
  start: BackwardStarted;
  entries: StepEntry[];
  finished: BackwardFinished | null;
  /** node id -> the entry that executed it in this call */
  byNode: Map<number, StepEntry>;
}

/** Where gradient for a node comes from: node `from`'s edge number `slot` points here. */
export interface Incoming {
  from: number;
  slot: number;
}

export type ModelListener = (batch: readonly GradwalkEvent[]) => void;

/**
 * Work the tape has no rows for: optimizer steps and backward() calls recorded metrics-only
 * (past `Limits.detail_steps` / `detail_calls`) between two ops, or after the last one.
 */
export interface TapeGap {
  steps: number;
  calls: number;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export class TraceModel {
  events: GradwalkEvent[] = [];
  lastSeq = -1;
  run: RunStarted | null = null;
  finished: RunFinished | null = null;
  /** Source of the run (from run_started, or given with a stored trace). */
  source = "";

  readonly tensors = new Map<number, TensorInfo>();
  readonly ops: OpRecorded[] = [];
  readonly nodes = new Map<number, NodeCreated>();
  readonly backwards: BackwardCall[] = [];
  readonly timeline: StepEntry[] = [];
  readonly outputs: OutputWritten[] = [];
  readonly errors: ErrorRaised[] = [];
  readonly limits: LimitReached[] = [];
  readonly pitfalls: PitfallFound[] = [];
  readonly memory: MemoryChanged[] = [];
  readonly optimizerSteps: OptimizerStep[] = [];
  readonly metrics: MetricLogged[] = [];
  readonly finals = new Map<number, TensorFinal>();
  readonly modulePaths = new Set<string>();
  /** op index -> the metrics-only work between the op before it and it */
  readonly gapsBefore = new Map<number, TapeGap>();
  /** the metrics-only work since the last op (the whole run's, before any op) */
  gapAtEnd: TapeGap = { steps: 0, calls: 0 };

  private readonly opByIndex = new Map<number, OpRecorded>();
  private readonly incoming = new Map<number, Incoming[]>();
  private readonly gradFnOf = new Map<number, number>();
  private readonly accOf = new Map<number, number>();
  private readonly accsOf = new Map<number, number[]>();
  private readonly opsByLine = new Map<number, number[]>();
  private readonly nodesByLine = new Map<number, number[]>();
  private readonly accsByTensor = new Map<number, GradAccumulated[]>();
  /** tensor id -> the first id of its object (a version made in place points back to it) */
  private readonly firstVersion = new Map<number, number>();
  /** first id -> every id of that object, oldest first */
  private readonly versions = new Map<number, number[]>();
  /** tensor id -> the lines that hooked its gradient (register_hook) */
  private readonly hooksOf = new Map<number, (number | null)[]>();
  /** tensor id -> the module whose output it is (made inside it, read by an op outside it) */
  private readonly moduleOutput = new Map<number, string>();
  private readonly listeners = new Set<ModelListener>();

  /** Build a model from a whole list of events (a stored trace or an export). */
  static from(events: readonly GradwalkEvent[], source?: string): TraceModel {
    const model = new TraceModel();
    if (source) model.source = source;
    model.ingest(events);
    return model;
  }

  subscribe(listener: ModelListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Add events in stream order; ones already seen (seq <= lastSeq) are ignored. */
  ingest(batch: readonly GradwalkEvent[]): void {
    const fresh: GradwalkEvent[] = [];
    for (const ev of batch) {
      if (ev.seq <= this.lastSeq) continue;
      this.lastSeq = ev.seq;
      this.events.push(ev);
      this.apply(ev);
      fresh.push(ev);
    }
    if (fresh.length) for (const listener of this.listeners) listener(fresh);
  }

  get isFinished(): boolean {
    return this.finished !== null;
  }

  private apply(ev: GradwalkEvent): void {
    switch (ev.type) {
      case "run_started":
        this.run = ev;
        this.source = ev.source;
        break;
      case "run_finished":
        this.finished = ev;
        break;
      case "tensor": {
        this.tensors.set(ev.id, { id: ev.id, ev, name: ev.name, paramName: ev.param_name });
        const first = ev.version_of != null ? (this.firstVersion.get(ev.version_of) ?? ev.version_of) : ev.id;
        this.firstVersion.set(ev.id, first);
        push(this.versions, first, ev.id);
        break;
      }
      case "tensor_named": {
        const t = this.tensors.get(ev.id);
        if (t) {
          t.name = ev.name;
          if (ev.param_name) t.paramName = ev.param_name;
        }
        break;
      }
      case "op":
        if (this.gapAtEnd.steps || this.gapAtEnd.calls) {
          this.gapsBefore.set(ev.index, this.gapAtEnd);
          this.gapAtEnd = { steps: 0, calls: 0 };
        }
        this.ops.push(ev);
        this.opByIndex.set(ev.index, ev);
        if (ev.line !== null) push(this.opsByLine, ev.line, ev.index);
        if (ev.top_line !== null && ev.top_line !== ev.line) push(this.opsByLine, ev.top_line, ev.index);
        this.noteModuleOutputs(ev);
        break;
      case "node":
        this.addNode(ev);
        break;
      case "backward_started":
        this.backwards.push({ index: ev.index, start: ev, entries: [], finished: null, byNode: new Map() });
        break;
      case "node_executed": {
        const call = this.backward(ev.backward);
        if (!call) break;
        const entry: StepEntry = {
          index: this.timeline.length,
          backward: ev.backward,
          kind: "node",
          exec: ev,
          accs: [],
          finished: null,
        };
        call.entries.push(entry);
        call.byNode.set(ev.node, entry);
        this.timeline.push(entry);
        break;
      }
      case "grad_accumulated": {
        const call = this.backward(ev.backward);
        const entry = call?.byNode.get(ev.node);
        if (entry) entry.accs.push(ev);
        push(this.accsByTensor, ev.tensor, ev);
        break;
      }
      case "backward_finished": {
        const call = this.backward(ev.index);
        if (!call) break;
        call.finished = ev;
        const entry: StepEntry = {
          index: this.timeline.length,
          backward: ev.index,
          kind: "end",
          exec: null,
          accs: [],
          finished: ev,
        };
        call.entries.push(entry);
        this.timeline.push(entry);
        break;
      }
      case "tensor_final":
        this.finals.set(ev.id, ev);
        break;
      case "output":
        this.outputs.push(ev);
        break;
      case "error":
        this.errors.push(ev);
        break;
      case "limit":
        this.limits.push(ev);
        break;
      case "pitfall":
        this.pitfalls.push(ev);
        break;
      case "memory":
        this.memory.push(ev);
        break;
      case "optimizer_step":
        this.optimizerSteps.push(ev);
        if (!ev.detail) this.gapAtEnd.steps += 1;
        break;
      case "backward_counted":
        this.gapAtEnd.calls += 1;
        break;
      case "metric":
        this.metrics.push(ev);
        break;
      case "hook_registered":
        push(this.hooksOf, ev.tensor, ev.line ?? null);
        break;
    }
  }

  private addNode(ev: NodeCreated): void {
    this.nodes.set(ev.id, ev);
    ev.edges.forEach((edge, slot) => {
      if (edge.node !== null) push(this.incoming, edge.node, { from: ev.id, slot });
    });
    if (ev.tensor !== null) {
      if (ev.name === "AccumulateGrad") {
        this.accOf.set(ev.tensor, ev.id);
        push(this.accsOf, ev.tensor, ev.id);
      } else this.gradFnOf.set(ev.tensor, ev.id);
    }
    if (ev.line !== null) push(this.nodesByLine, ev.line, ev.id);
    if (ev.module_path) {
      const parts = ev.module_path.split(".");
      for (let i = 1; i <= parts.length; i++) this.modulePaths.add(parts.slice(0, i).join("."));
    }
  }

  /** Mark the inputs of `op` that were made inside a module `op` is not part of: its outputs. */
  private noteModuleOutputs(op: OpRecorded): void {
    const here = op.module_path ?? null;
    for (const id of op.inputs) {
      const made = this.opByIndex.get(this.tensors.get(id)?.ev.op ?? -1)?.module_path;
      if (!made || this.moduleOutput.has(id)) continue;
      if (here === made || here?.startsWith(`${made}.`)) continue; // still inside, or handed to a submodule
      this.moduleOutput.set(id, made);
    }
  }

  // --- queries -------------------------------------------------------------------------

  tensor(id: number | null | undefined): TensorInfo | undefined {
    return id === null || id === undefined ? undefined : this.tensors.get(id);
  }

  op(index: number | null | undefined): OpRecorded | undefined {
    return index === null || index === undefined ? undefined : this.opByIndex.get(index);
  }

  node(id: number | null | undefined): NodeCreated | undefined {
    return id === null || id === undefined ? undefined : this.nodes.get(id);
  }

  backward(index: number): BackwardCall | undefined {
    // Backward calls arrive numbered 0, 1, 2...; look up by position, then search.
    const call = this.backwards[index];
    return call && call.index === index ? call : this.backwards.find((b) => b.index === index);
  }

  /** The nodes whose edges send gradient into `nodeId`. */
  incomingOf(nodeId: number): readonly Incoming[] {
    return this.incoming.get(nodeId) ?? [];
  }

  /** The grad_fn node that produced tensor `id` (not AccumulateGrad). */
  gradFnOfTensor(id: number): number | undefined {
    return this.gradFnOf.get(id);
  }

  /** The AccumulateGrad node of leaf tensor `id`. */
  accumulatorOf(id: number): number | undefined {
    return this.accOf.get(id);
  }

  /**
   * Every AccumulateGrad node of leaf tensor `id`, oldest first. PyTorch keeps a leaf's
   * AccumulateGrad only while some graph holds it, so a leaf whose graphs were all freed
   * gets a new one from the next op that uses it.
   */
  accumulatorsOf(id: number): readonly number[] {
    return this.accsOf.get(id) ?? [];
  }

  opsOnLine(line: number): readonly number[] {
    return this.opsByLine.get(line) ?? [];
  }

  nodesOnLine(line: number): readonly number[] {
    return this.nodesByLine.get(line) ?? [];
  }

  accumulationsOf(tensor: number): readonly GradAccumulated[] {
    return this.accsByTensor.get(tensor) ?? [];
  }

  /** Every id of tensor `id`'s object, oldest first: itself, and the versions in-place
   * changes made of it (a parameter an optimizer stepped, a `.grad` backward added into). */
  versionsOf(id: number): readonly number[] {
    return this.versions.get(this.firstVersion.get(id) ?? id) ?? [id];
  }

  /**
   * A leaf's `.grad` over the whole run, whichever of its versions is asked about: every
   * accumulation into it, in order, and its state at the end of the run (the final of its
   * newest version). An optimizer's step makes a new version of each parameter, so each
   * step's accumulation lands on a different id.
   */
  gradHistoryOf(id: number): { accs: GradAccumulated[]; final: TensorFinal | undefined } {
    const ids = this.versionsOf(id);
    const accs = ids.flatMap((v) => this.accsByTensor.get(v) ?? []).sort((a, b) => a.seq - b.seq);
    let final: TensorFinal | undefined;
    for (const v of ids) final = this.finals.get(v) ?? final;
    return { accs, final };
  }

  /**
   * The module tensor `id` came out of (`net.fc1` for the output of `self.fc1(x)` inside
   * `net`): the innermost module its op ran in, once an op outside that module has read it.
   */
  moduleOutputOf(id: number): string | undefined {
    return this.moduleOutput.get(id);
  }

  /** The lines where the snippet hooked tensor `id`'s gradient (`register_hook`), in order. */
  hookLines(id: number | null | undefined): readonly (number | null)[] {
    return id === null || id === undefined ? [] : (this.hooksOf.get(id) ?? []);
  }

  /** A tensor's readable name: its variable, its parameter name, or t<id>. */
  tensorLabel(id: number | null | undefined): string {
    const t = this.tensor(id);
    if (!t) return id === null || id === undefined ? "?" : `t${id}`;
    return t.name ?? t.paramName ?? `t${t.id}`;
  }

  /** The tensor a node stands for: its output, or for AccumulateGrad its leaf. */
  nodeTensor(nodeId: number): TensorInfo | undefined {
    return this.tensor(this.node(nodeId)?.tensor);
  }

  /**
   * The shape of the gradient flowing into `nodeId` at its input `inputNr` (an edge's
   * `input_nr`), when known: what the node was recorded to receive, else its tensor's shape.
   */
  nodeShape(nodeId: number, inputNr = 0): number[] | null {
    return this.node(nodeId)?.grad_shapes?.[inputNr] ?? this.nodeTensor(nodeId)?.ev.shape ?? null;
  }

  /** The source line a node came from, falling back to its op's module-level line. */
  nodeLine(nodeId: number): number | null {
    const node = this.node(nodeId);
    if (!node) return null;
    return node.line ?? this.op(node.op)?.line ?? null;
  }

  /** The backward call a timeline position belongs to. */
  callAt(step: number): BackwardCall | undefined {
    const entry = this.timeline[step];
    return entry ? this.backward(entry.backward) : undefined;
  }

  /** Output written so far, as one string per stream. */
  outputText(): string {
    return this.outputs.map((o) => o.text).join("");
  }

  errorLines(): { line: number; message: string; hint: string | null }[] {
    return this.errors
      .filter((e) => e.line !== null)
      .map((e) => ({ line: e.line as number, message: `${e.exc_type}: ${e.message}`, hint: e.hint ?? null }));
  }
}

/** A title for a trace: its first comment line, else its file name (the viewer's heading, an embed's frame title). */
export function traceTitle(model: TraceModel): string {
  const source = model.source || model.run?.source || "";
  for (const raw of source.split(/\r\n|\r|\n/).slice(0, 20)) {
    const title = commentTitle(raw);
    if (title) return title;
  }
  return model.run?.filename ?? "";
}

/**
 * The title a comment line gives its snippet (its text, at most 80 characters); null for code,
 * a shebang, an encoding line (`# -*- coding: utf-8 -*-`), a notebook's cell mark without
 * words (`# %%`, `# In[3]:`) and a rule of dashes. Mirrors `comment_title` in server/library.py.
 */
export function commentTitle(raw: string): string | null {
  const line = raw.trim();
  if (!line.startsWith("#") || line.startsWith("#!") || /^#.*?coding[:=]/.test(line)) return null;
  const text = line.replace(/^#+/, "").trim().replace(/^%%(\s*\[\w+\])?|^In\s*\[[\d ]*\]:?$/, "").trim();
  return /\p{L}/u.test(text) ? text.slice(0, 80) : null;
}
