// The URL holds what is worth sharing: the run, the open view, the stepper's step, the
// scrubber's op, the selection, the backward call the graph draws (call=2: the second;
// call=all: every call; none: the run's default) and the charts' choices (?run=ID&view=stepper&step=3,
// ?view=charts&yscale=log&norms=per-parameter&compare=ID2&hide=grad,lr). A link reopens exactly that, and reloading
// lands on the same step.
import { Y_SCALES, type YScale } from "./chart-scales";
import { type GraphCall, type Selection, VIEWS, type ViewName, type ViewState } from "./store";

/** The charts' choices a query string can carry (embeds and exports read the same names). */
export interface ChartChoices {
  yscale: YScale | null;
  perParam: boolean | null;
  /** The run drawn dashed under this one; null: none (an id that cannot be one is none). */
  compare: string | null;
  /** The ids of the charts hidden; null where not said. */
  hide: string[] | null;
}

/** A run id as the server makes them (letters, digits, - and _). */
const RUN_ID = /^[\w-]{1,64}$/;
/** A chart id as a `hide` writes it (the server's chart_choices.HIDE_ID_PATTERN: up to 128
 * characters, none a comma, which separates them, or a control character), and how many. */
const CHART_ID = /^[^,\x00-\x1f\x7f]{1,128}$/;
const MAX_HIDDEN = 32;

/** Chart `id` as a `hide` writes it: its `%` and `,` as `%25` and `%2C` (a metric named
 * `top-1, top-5` is `metric:top-1%2C top-5`), as the server's chart_choices.hide_text does. */
export function hideIdText(id: string): string {
  return id.replace(/%/g, "%25").replace(/,/g, "%2C");
}

/** Whether a link can carry chart `id` in its `hide` (any id up to 128 characters written so,
 * none a control character). */
export function canHide(id: string): boolean {
  return CHART_ID.test(hideIdText(id));
}

/** The chart ids of a `hide` (comma-separated: `grad,metric:val_acc`; `%2C` and `%25` in an
 * id are its `,` and `%`), each once; what cannot be a chart id is left out. */
export function parseHide(text: string): string[] {
  const ids = text
    .split(",")
    .map((id) => id.replace(/^ +| +$/g, ""))
    .filter((id) => CHART_ID.test(id))
    .map((id) => id.replace(/%(25|2C)/gi, (_, code: string) => (code === "25" ? "%" : ",")));
  return [...new Set(ids)].slice(0, MAX_HIDDEN);
}

/** A `yscale` (auto, linear, log), a `norms` (together, per-parameter), a `compare` (a
 * run id) and a `hide` (chart ids, comma-separated) as written in a query string or a room's
 * state; null where absent or unknown. */
export function parseChartChoices(
  yscale: string | null | undefined,
  norms: string | null | undefined,
  compare?: string | null,
  hide?: string | null,
): ChartChoices {
  return {
    yscale: Y_SCALES.includes(yscale as YScale) ? (yscale as YScale) : null,
    perParam: norms === "per-parameter" ? true : norms === "together" ? false : null,
    compare: compare && RUN_ID.test(compare) ? compare : null,
    hide: typeof hide === "string" ? parseHide(hide) : null,
  };
}

/** The charts' choices of a query string (`?yscale=log&norms=per-parameter&compare=ID&hide=grad`). */
export function readChartChoices(q: URLSearchParams): ChartChoices {
  return parseChartChoices(q.get("yscale"), q.get("norms"), q.get("compare"), q.get("hide"));
}

/** The view state's charts' choices: what links, embeds, exports and rooms carry besides the run and step. */
export const CHART_CHOICE_KEYS = ["yscale", "perParam", "compare", "hide"] as const;

/** Whether a store change touched any of the charts' choices. */
export function chartChoicesChanged(changed: ReadonlySet<keyof ViewState>): boolean {
  return CHART_CHOICE_KEYS.some((key) => changed.has(key));
}

type ChartState = Pick<ViewState, (typeof CHART_CHOICE_KEYS)[number]>;

/** The charts' choices in the words a query string and a room's state use. */
export function chartChoiceWords(state: ChartState): {
  yscale: YScale;
  norms: "together" | "per-parameter";
  compare: string | null;
  hide: string;
} {
  return { yscale: state.yscale, norms: state.perParam ? "per-parameter" : "together", compare: state.compare, hide: state.hide.map(hideIdText).join(",") };
}

/** Add the charts' choices to `q` where they differ from the defaults (auto, together, none, none). */
export function writeChartChoices(q: URLSearchParams, state: ChartState): void {
  const { yscale, norms, compare, hide } = chartChoiceWords(state);
  if (yscale !== "auto") q.set("yscale", yscale);
  if (norms !== "together") q.set("norms", norms);
  if (compare) q.set("compare", compare);
  else q.delete("compare");
  if (hide) q.set("hide", hide);
  else q.delete("hide");
}

/** What a link points at; the charts' choices are left as they are where undefined or null. */
export interface UrlState extends Partial<ChartChoices> {
  run: string | null;
  view: ViewName | null;
  step: number | null;
  op: number | null;
  selection: Selection | null;
  /** The backward call the graph draws (its index, 0-based; "all": every call; null: the run's default). */
  call: GraphCall;
}

function int(value: string | null): number | null {
  if (value === null || !/^\d+$/.test(value)) return null;
  return Number(value);
}

/** The graph's backward call `choice` as links and rooms say it: a call counted from 1, as the
 * app numbers calls; "all" (every call) and null (the run's default) as they are. */
export function callNumber(choice: GraphCall): number | "all" | null {
  return typeof choice === "number" ? choice + 1 : choice;
}

/** The choice of call `n` names (a call counted from 1, or "all"); null for none or anything else. */
export function callIndex(n: unknown): GraphCall {
  if (n === "all") return "all";
  return typeof n === "number" && Number.isInteger(n) && n >= 1 ? n - 1 : null;
}

/** The graph's backward call a query string names: `call=2` is index 1, `call=all` every call
 * (see callIndex); none, or anything else, the run's default. */
export function readCall(q: URLSearchParams): GraphCall {
  const value = q.get("call");
  return callIndex(value === "all" ? value : int(value));
}

/** Write the graph's backward call `choice` as `call` (counted from 1, or `all`); none for null. */
export function writeCall(q: URLSearchParams, choice: GraphCall): void {
  const n = callNumber(choice);
  if (n !== null) q.set("call", String(n));
}

/** The node or tensor `sel` names (`n12`: node 12, `t3`: tensor 3); null for none or anything else. */
export function readSelection(q: URLSearchParams): Selection | null {
  return selectionOf(q.get("sel"));
}

/** The selection a `sel` names (`n12`: node 12, `t3`: tensor 3); null for none or another text. */
export function selectionOf(text: string | null | undefined): Selection | null {
  const m = /^([nt])(\d+)$/.exec(text ?? "");
  return m ? { kind: m[1] === "n" ? "node" : "tensor", id: Number(m[2]) } : null;
}

/** `selection` as a `sel` writes it (`n12`, `t3`); null for none. */
export function selectionText(selection: Selection | null): string | null {
  return selection ? `${selection.kind === "node" ? "n" : "t"}${selection.id}` : null;
}

/** Write `selection` as `sel` (`n12`, `t3`); none for null. */
export function writeSelection(q: URLSearchParams, selection: Selection | null): void {
  const text = selectionText(selection);
  if (text) q.set("sel", text);
  else q.delete("sel");
}

export function readUrl(search = location.search): UrlState {
  const q = new URLSearchParams(search);
  const view = q.get("view");
  const selection = readSelection(q);
  return {
    run: q.get("run"),
    view: VIEWS.includes(view as ViewName) ? (view as ViewName) : null,
    step: int(q.get("step")),
    op: int(q.get("op")),
    selection,
    call: readCall(q),
    ...readChartChoices(q),
  };
}

/** The link to run `run` at `state`, on page `path` (this page's by default). */
export function urlFor(run: string | null, state: ViewState, path = location.pathname): string {
  const q = new URLSearchParams();
  if (run) q.set("run", run);
  q.set("view", state.view);
  if (state.step !== null) q.set("step", String(state.step));
  if (state.op !== null) q.set("op", String(state.op));
  writeSelection(q, state.selection);
  writeCall(q, state.graphCall);
  writeChartChoices(q, state);
  return `${path}?${q.toString()}`;
}

/**
 * Mirror the state into the address bar: a new run pushes history, the rest replaces it.
 * Back and Forward (navigate, then arrived) push nothing: the run they load replaces its
 * own entry, so the entries after it stay for Forward (a push there had cut them off, and
 * Back had to be pressed twice).
 */
export class UrlSync {
  private timer = 0;
  private lastRun: string | null = null;
  /** The run of the history entry Back or Forward went to, until it is shown (undefined: none). */
  private goingTo: string | null | undefined = undefined;
  private navigations = 0;

  write(run: string | null, state: ViewState): void {
    // the run left behind, still shown while the one gone back to loads: its entry is not this one
    if (this.goingTo !== undefined && run !== this.goingTo) return;
    clearTimeout(this.timer);
    const url = urlFor(run, state);
    if (run !== this.lastRun && this.lastRun !== null) {
      history.pushState(null, "", url);
      this.lastRun = run;
      return;
    }
    this.lastRun = run;
    this.timer = window.setTimeout(() => {
      if (`${location.pathname}${location.search}` !== url) history.replaceState(null, "", url);
    }, 120);
  }

  /** Back or Forward went to an entry of run `run`: until arrived(), writes replace that entry. Returns the ticket arrived() takes. */
  navigate(run: string | null): number {
    clearTimeout(this.timer); // a write of the entry left must not land on this one
    this.goingTo = run;
    this.lastRun = run;
    return ++this.navigations;
  }

  /** The navigation `ticket` is over, run `shown` on screen (another, where the entry's run could not be loaded). */
  arrived(ticket: number, shown: string | null): void {
    if (ticket !== this.navigations) return; // Back pressed again meanwhile: that one goes on
    this.goingTo = undefined;
    this.lastRun = shown;
  }
}
