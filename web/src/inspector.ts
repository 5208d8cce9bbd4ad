// The inspector: what a clicked tensor or graph node holds. Values as a table (a heatmap for
// matrices) or as statistics and a histogram for large tensors; the gradient; what a node
// saved; shape, dtype, device; and the line of code it came from.
import { breakAtDots, fill, h } from "./dom";
import { nodeLabel, numberText, outputTensors, tensorExpr } from "./naming";
import { WRAPPED_NUMBER_OPS, wrappedNumber } from "./rule-context";
import {
  linksOfLine,
  type Selection,
  type Store,
  type ViewState,
} from "./store";
import type { TraceModel } from "./trace-model";
import type { NodeCreated, TensorValue } from "./types/events";
import {
  asMatrix,
  bytesText,
  fmt,
  fmtAddend,
  fmtValue,
  num,
  shapeText,
  stats,
} from "./values";

const MAX_CELLS = 400;
const MAX_LINKS = 6;

export class InspectorView {
  private readonly body: HTMLElement;
  private unsubscribe: () => void = () => {};

  constructor(
    readonly root: HTMLElement,
    private model: TraceModel,
    private readonly store: Store,
  ) {
    root.classList.add("gw-inspector");
    this.body = h("div", { class: "gw-scroll gw-inspector-body" });
    root.append(this.body);
    store.subscribe((state, changed) => {
      if (changed.has("selection") || (changed.has("step") && state.selection))
        this.render(state);
    });
    this.setModel(model);
  }

  setModel(model: TraceModel): void {
    this.unsubscribe();
    this.model = model;
    this.unsubscribe = model.subscribe((batch) => {
      if (
        this.store.state.selection &&
        batch.some(
          (e) => e.type === "tensor_final" || e.type === "grad_accumulated",
        )
      )
        this.render(this.store.state);
    });
    this.render(this.store.state);
  }

  private render(state: ViewState): void {
    const sel = state.selection;
    if (!sel) {
      this.body.replaceChildren(
        h("p", {
          class: "gw-empty",
          text: "Click a node in the graph, or an op in the tape, to inspect its values, gradient and saved tensors.",
        }),
      );
      return;
    }
    fill(
      this.body,
      sel.kind === "tensor" ? this.tensor(sel.id) : this.node(sel.id),
    );
  }

  private lineLink(line: number | null): HTMLElement | null {
    if (!line) return null;
    const b = h("button", {
      type: "button",
      class: "gw-line-link",
      text: `line ${line}`,
      title: "Light up this line in the code",
    });
    b.addEventListener("click", () =>
      this.store.set({ hover: linksOfLine(this.model, line) }),
    );
    return b;
  }

  /** Links to graph nodes, `node 0 (line 7), node 4 (line 8)`; `withLines` false: `node 4`. */
  private nodeLinks(
    ids: readonly number[],
    withLines = ids.length > 1,
  ): HTMLElement {
    const link = (id: number): HTMLElement => {
      const line = withLines ? this.model.nodeLine(id) : null;
      return this.select(
        { kind: "node", id },
        line ? `node ${id} (line ${line})` : `node ${id}`,
      );
    };
    const shown = ids
      .slice(0, MAX_LINKS)
      .flatMap((id, i) => (i ? [", ", link(id)] : [link(id)]));
    const more =
      ids.length > MAX_LINKS ? ` and ${ids.length - MAX_LINKS} more` : "";
    return h("span", {}, ...shown, more);
  }

  /**
   * For a leaf's AccumulateGrad when the leaf has had several (two boxes for `a` on the
   * graph): why, and the others.
   */
  private otherAccumulators(node: NodeCreated): HTMLElement | null {
    if (node.name !== "AccumulateGrad" || node.tensor === null) return null;
    const all = this.model.accumulatorsOf(node.tensor);
    if (all.length < 2) return null;
    const leaf = this.model.tensorLabel(node.tensor);
    return h(
      "p",
      { class: "gw-inspect-note" },
      `${leaf} has ${all.length} AccumulateGrad nodes; this is number ${all.indexOf(node.id) + 1}. PyTorch keeps a leaf's ` +
        `AccumulateGrad only while some graph holds it: once the graphs that used it were freed, the next op on ${leaf} ` +
        `made a new one. Each adds into the same ${leaf}.grad. The others: `,
      this.nodeLinks(
        all.filter((id) => id !== node.id),
        true,
      ),
      ".",
    );
  }

  private select(sel: Selection, text: string): HTMLElement {
    const b = h("button", { type: "button", class: "gw-ref", text });
    b.addEventListener("click", () => this.store.set({ selection: sel }));
    return b;
  }

  private facts(rows: [string, Node | string | null][]): HTMLElement {
    return h(
      "dl",
      { class: "gw-facts" },
      rows
        .filter(([, v]) => v !== null && v !== "")
        .flatMap(([k, v]) => [h("dt", { text: k }), h("dd", {}, v)]),
    );
  }

  private tensor(id: number): (Node | null)[] {
    const m = this.model;
    const t = m.tensor(id);
    if (!t)
      return [
        h("p", {
          class: "gw-empty",
          text: `Tensor t${id} is not in this trace.`,
        }),
      ];
    const ev = t.ev;
    const gradFn = m.gradFnOfTensor(id);
    const acc = m.accumulatorOf(id);
    const kind = ev.is_param
      ? "parameter"
      : ev.is_leaf
        ? ev.requires_grad
          ? "leaf (requires grad)"
          : "plain input (no grad)"
        : "intermediate";
    // a leaf's .grad over the run, across the versions its in-place changes made (each
    // optimizer step makes one): the accumulations into any of them, and the end's state
    const history = ev.is_leaf
      ? m.gradHistoryOf(id)
      : { accs: m.accumulationsOf(id), final: m.finals.get(id) };
    const final = history.final;
    const accs = history.accs;
    // As the run left it: a .grad cleared after its last accumulation (zero_grad) is None.
    const grad = final
      ? final.grad
      : accs.length
        ? accs[accs.length - 1].after
        : null;
    return [
      h(
        "h3",
        { class: "gw-inspect-title" },
        h("span", { class: "gw-chip", text: kind }),
        ` ${tensorExpr(m, id)}`,
      ),
      this.facts([
        ["shape", shapeText(ev.shape)],
        ["dtype", ev.dtype],
        ["device", ev.device],
        ["requires_grad", String(ev.requires_grad)],
        ["parameter", t.paramName],
        ["made by", m.op(ev.op) ? `${m.op(ev.op)!.api}` : null],
        ["line", this.lineLink(ev.line)],
        [
          "grad_fn",
          gradFn !== undefined
            ? this.select({ kind: "node", id: gradFn }, m.node(gradFn)!.name)
            : null,
        ],
        [
          "AccumulateGrad",
          acc !== undefined ? this.nodeLinks(m.accumulatorsOf(id)) : null,
        ],
      ]),
      h("h4", {
        text: final?.value
          ? "value (at the end of the run)"
          : "value (when it was made)",
      }),
      valueView(final?.value ?? ev.value),
      // an intermediate has a .grad only when it called retain_grad(): the run's end says
      !ev.is_leaf && final?.grad
        ? h("h4", {
            text: ".grad (kept by retain_grad(), at the end of the run)",
          })
        : null,
      !ev.is_leaf && final?.grad ? valueView(final.grad) : null,
      ev.is_leaf && ev.requires_grad
        ? h("h4", {
            text: final
              ? ".grad (at the end of the run)"
              : ".grad (after its last accumulation)",
          })
        : null,
      ev.is_leaf && ev.requires_grad
        ? grad
          ? valueView(grad)
          : h("p", {
              class: "gw-muted",
              text: accs.length
                ? "None (cleared after its last accumulation)"
                : "None (no backward reached it)",
            })
        : null,
      accs.length ? h("h4", { text: "accumulations" }) : null,
      accs.length
        ? h(
            "ol",
            { class: "gw-acc-list" },
            accs.map((a) =>
              h("li", {
                text: `backward ${a.backward + 1}: ${a.before ? `${fmtValue(a.before)} + ${fmtAddend(a.added)}` : "None"} → ${fmtValue(a.after)}`,
              }),
            ),
          )
        : null,
    ];
  }

  private node(id: number): (Node | null)[] {
    const m = this.model;
    const node = m.node(id);
    if (!node)
      return [
        h("p", { class: "gw-empty", text: `Node ${id} is not in this trace.` }),
      ];
    const runs = m.backwards.map((b) => b.byNode.get(id)).filter((e) => !!e);
    const pieces = (outputTensors(m, id) ?? []).filter((t): t is number => t !== null);
    const made = pieces.length > 1 ? pieces : node.tensor !== null ? [node.tensor] : [];
    return [
      h(
        "h3",
        { class: "gw-inspect-title" },
        h("span", { class: "gw-chip", text: "grad_fn node" }),
        ` ${nodeLabel(m, id)}`,
      ),
      this.facts([
        // AccumulateGrad outputs nothing: it stands for the leaf whose .grad it writes;
        // a node with several outputs made each (q, k, v = qkv.chunk(3))
        [
          node.name === "AccumulateGrad" ? "leaf" : made.length > 1 ? "outputs" : "output",
          made.length ? h("span", {}, made.flatMap((t, i) => [i ? ", " : "", this.select({ kind: "tensor", id: t }, tensorExpr(m, t))])) : null,
        ],
        ["module", node.module_path],
        ["line", this.lineLink(m.nodeLine(id))],
        ["saved", node.saved_bytes ? bytesText(node.saved_bytes) : null],
      ]),
      this.otherAccumulators(node),
      node.edges.length
        ? h("h4", { text: "next_functions (where its gradients go)" })
        : null,
      node.edges.length
        ? h(
            "ol",
            { class: "gw-edge-list", start: 0 },
            node.edges.map((e) =>
              h(
                "li",
                {},
                e.node === null
                  ? h("span", {
                      class: "gw-muted",
                      text: "None (input needs no grad)",
                    })
                  : this.select(
                      { kind: "node", id: e.node },
                      nodeLabel(m, e.node),
                    ),
              ),
            ),
          )
        : null,
      node.saved.length ? h("h4", { text: "saved for backward" }) : null,
      node.saved.length
        ? h(
            "table",
            { class: "gw-table" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ["name", "what", "shape", "bytes"].map((c) =>
                  h("th", { scope: "col", text: c }),
                ),
              ),
            ),
            h(
              "tbody",
              {},
              node.saved.map((s) =>
                h(
                  "tr",
                  {},
                  h("td", {}, breakAtDots(s.name)),
                  h(
                    "td",
                    {},
                    s.tensor !== null
                      ? this.select(
                          { kind: "tensor", id: s.tensor },
                          tensorExpr(m, s.tensor),
                        )
                      : (s.scalar ?? savedNumberText(m, node, s.dtype, s.shape)),
                  ),
                  h("td", { text: s.shape ? shapeText(s.shape) : "" }),
                  h("td", { text: s.bytes ? bytesText(s.bytes) : "" }),
                ),
              ),
            ),
          )
        : null,
      ...runs.flatMap((e) => [
        h("h4", {
          text: `in backward ${e!.backward + 1} (step ${e!.index + 1})`,
        }),
        this.facts([
          ["grad in", e!.exec!.grad_in.map((v) => fmtValue(v)).join(", ")],
          ...e!.exec!.grad_out.map((v, i): [string, string] => [
            `grad out ${i}`,
            fmtValue(v),
          ]),
        ]),
        ...e!
          .exec!.grad_in.filter(
            (v): v is TensorValue =>
              !!v && (v.kind === "summary" || v.flat.length > 1),
          )
          .map((v) => valueView(v)),
      ]),
    ];
  }
}

/**
 * A saved value the trace holds no value of: a tensor made inside the op (`a float32 tensor,
 * made inside the op`: addmm's transposed weight, batch norm's statistics), the Python number
 * the op was passed where that is known (`4`, for `x / 4`), else its dtype (`an int64 number`).
 */
function savedNumberText(
  m: TraceModel,
  node: NodeCreated,
  dtype: string | null | undefined,
  shape?: readonly number[] | null,
): string {
  const article = dtype?.startsWith("int") ? "an" : "a";
  if (shape && shape.length > 0) return `${article} ${dtype ?? ""} tensor, made inside the op`.replace("  ", " ");
  const v = wrappedNumber(m, node, WRAPPED_NUMBER_OPS);
  if (v !== null) return `${numberText(v, 17)} (a Python number)`;
  if (!dtype) return "—";
  return `${article} ${dtype} number`;
}

/** A value as a table (heatmap for matrices), or statistics and a histogram when summarized. */
export function valueView(v: TensorValue | null | undefined): HTMLElement {
  if (!v) return h("p", { class: "gw-muted", text: "not recorded" });
  if (v.kind === "summary") return summaryView(v);
  const xs = v.flat.map(num);
  if (xs.length === 1)
    return h("p", { class: "gw-big-number", text: fmt(xs[0]) });
  const { rows, cols } = asMatrix(v.shape);
  const st = stats(v)!;
  const span = Math.max(Math.abs(st.min ?? 0), Math.abs(st.max ?? 0)) || 1;
  const shown = Math.min(
    rows,
    Math.max(1, Math.floor(MAX_CELLS / Math.max(cols, 1))),
  );
  const table = h(
    "table",
    {
      class: `gw-values ${rows > 1 ? "gw-heatmap" : ""}`,
      "aria-label": `values, ${shapeText(v.shape)}`,
    },
    h(
      "tbody",
      {},
      Array.from({ length: shown }, (_, r) =>
        h(
          "tr",
          {},
          Array.from({ length: Math.min(cols, MAX_CELLS) }, (_, c) => {
            const x = xs[r * cols + c];
            const td = h("td", { text: fmt(x), title: String(x) });
            if (rows > 1 || cols > 1) paint(td, x / span);
            return td;
          }),
        ),
      ),
    ),
  );
  const more =
    shown < rows
      ? h("p", { class: "gw-muted", text: `${rows - shown} more rows` })
      : null;
  return h(
    "div",
    { class: "gw-value" },
    h("div", { class: "gw-table-wrap" }, table),
    more,
    statsLine(st),
  );
}

function statsLine(st: NonNullable<ReturnType<typeof stats>>): HTMLElement {
  const parts = [
    st.min !== null ? `min ${fmt(st.min)}` : "",
    st.max !== null ? `max ${fmt(st.max)}` : "",
    st.mean !== null ? `mean ${fmt(st.mean)}` : "",
    st.std !== null ? `std ${fmt(st.std)}` : "",
    st.norm !== null ? `‖·‖ ${fmt(st.norm)}` : "",
    st.nan ? `${st.nan} NaN` : "",
    st.inf ? `${st.inf} inf` : "",
  ].filter(Boolean);
  return h("p", { class: "gw-stats", text: parts.join(" · ") });
}

function summaryView(
  v: Extract<TensorValue, { kind: "summary" }>,
): HTMLElement {
  const top = Math.max(1, ...v.hist);
  const bars = v.hist.map((c) => {
    const bar = h("span", { class: "gw-hist-bar", title: String(c) });
    bar.style.height = `${Math.max(2, (c / top) * 100)}%`;
    return bar;
  });
  return h(
    "div",
    { class: "gw-value" },
    h("p", {
      class: "gw-muted",
      text: `${v.numel} elements, shape ${shapeText(v.shape)}, summarized${v.of === "abs" ? ": complex, the statistics are of each |z|" : ""}`,
    }),
    v.hist.length
      ? h("div", { class: "gw-hist", "aria-label": "histogram" }, bars)
      : null,
    v.hist.length
      ? h(
          "div",
          { class: "gw-hist-axis" },
          h("span", { text: fmt(v.min ?? 0) }),
          h("span", { text: fmt(v.max ?? 0) }),
        )
      : null,
    statsLine(v),
  );
}

/** Diverging heatmap colour: blue for negative, red for positive (theme colours via CSS vars). */
function paint(td: HTMLElement, t: number): void {
  if (!Number.isFinite(t)) {
    td.classList.add("gw-nonfinite");
    return;
  }
  const a = Math.min(1, Math.abs(t));
  td.style.setProperty("--heat", String(Math.round(a * 85)));
  td.classList.add(t < 0 ? "gw-neg" : "gw-pos");
}
