// The read-only viewer's entry point (viewer.js + viewer.css): mount the views on
// `#gradwalk-viewer` from a trace the page carries, or from a run on the server that
// served the page.
//
// A page gives it, in JSON script elements (never executed, so any CSP allows them):
//   #gradwalk-trace    the trace itself ({source, events}): a self-contained export;
//   #gradwalk-options  viewer options ({view, step, controls, theme, title, appUrl, yscale, perParam, compare, hide});
//   #gradwalk-compare  the trace of the run `compare` names, drawn dashed on the charts (an export);
//   #bootstrap         the server's data with `run_id` and `api` (/embed/ID): the trace is
//                      fetched, and followed live when the run is still going;
//   #gradwalk-elk-worker (text/plain) the graph layout worker's code, run from a blob when
//                      there is no elk-worker.js to load (an export opened from disk).
// The query string overrides the options: ?view=stepper&step=3&controls=hide&theme=dark,
// ?presenter=on (presenter type; the app's remembered choice never carries into a viewer),
// and the charts' ?yscale=auto|linear|log&norms=together|per-parameter&compare=RUN_ID (a run on
// the same server, drawn dashed under this one).
// `window.gradwalkViewer` is the mounted viewer, for scripting the page (tests, notebooks).
import "./styles/app.css";
import "./styles/viewer.css";
import { Api, RunStream } from "./api";
import { h } from "./dom";
import { useElkWorker } from "./layout";
import { initTheme } from "./theme";
import { TraceModel } from "./trace-model";
import type { GradwalkTrace } from "./types/events";
import { readCall, readChartChoices, readSelection } from "./url-state";
import { DEFAULT_OPTIONS, VIEWER_TABS, type TraceData, Viewer, type ViewerOptions, type ViewerTab } from "./viewer-shell";

declare global {
  interface Window {
    gradwalkViewer?: Viewer;
  }
}

function json<T>(id: string): T | null {
  const text = document.getElementById(id)?.textContent;
  if (!text) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

/** Read options from the page, then let the query string override them. */
function readOptions(search = location.search, given: Partial<ViewerOptions> = {}): ViewerOptions {
  const q = new URLSearchParams(search);
  const out: ViewerOptions = { ...DEFAULT_OPTIONS, ...given };
  const view = q.get("view");
  if (view !== null) out.view = VIEWER_TABS.includes(view as ViewerTab) ? (view as ViewerTab) : null;
  const step = q.get("step");
  if (step !== null && /^\d+$/.test(step)) out.step = Number(step);
  const controls = q.get("controls");
  if (controls !== null) out.controls = !/^(hide|hidden|off|no|false|0)$/i.test(controls);
  const theme = q.get("theme");
  if (theme === "light" || theme === "dark") out.theme = theme;
  const { yscale, perParam, compare, hide } = readChartChoices(q);
  if (yscale !== null) out.yscale = yscale;
  if (perParam !== null) out.perParam = perParam;
  if (q.has("compare")) out.compare = compare;
  if (hide !== null) out.hide = hide;
  const call = readCall(q);
  if (call !== null) out.call = call;
  const selection = readSelection(q);
  if (selection) out.selection = selection;
  return out;
}

function inlineElkWorker(): void {
  const code = document.getElementById("gradwalk-elk-worker")?.textContent;
  if (!code) return;
  let url: string | null = null;
  useElkWorker(() => {
    url ??= URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    return new Worker(url);
  });
}

function fail(root: HTMLElement, message: string): void {
  root.replaceChildren(h("div", { class: "gw-viewer-failed", role: "alert" }, h("strong", { text: "gradwalk: " }), message));
}

interface Bootstrap {
  api?: string;
  run_id?: string;
  /** The server has no run with this id (the page itself answered 404). */
  run_missing?: boolean;
}

/** Fetch a stored run's trace; a run still going is followed over its websocket. */
async function mountRun(root: HTMLElement, boot: Bootstrap, options: ViewerOptions): Promise<void> {
  const api = new Api(boot.api ?? "/api");
  const id = boot.run_id!;
  if (boot.run_missing) {
    fail(root, `there is no run ${id} on this server. The link may be mistyped, or the run may have been deleted.`);
    return;
  }
  let trace: GradwalkTrace;
  let title: string | null = null;
  try {
    const [info, got] = await Promise.all([api.run(id).catch(() => null), api.trace(id)]);
    trace = got;
    title = (info as { title?: string | null } | null)?.title ?? null;
  } catch (err) {
    fail(root, `could not load run ${id}: ${(err as Error).message}`);
    return;
  }
  const model = TraceModel.from(trace.events, trace.source);
  const viewer = new Viewer(root, model, { ...options, title: options.title ?? title }, (other) => api.trace(other));
  window.gradwalkViewer = viewer;
  if (!model.isFinished) {
    new RunStream(api, id, {
      onEvents: (events) => model.ingest(events),
      lastSeq: () => model.lastSeq,
      onEnd: (reason, message) => {
        if (reason === "failed") viewer.output.say(message ?? "The event stream failed.", "error");
      },
    });
  }
}

function main(): void {
  const root = document.getElementById("gradwalk-viewer");
  if (!root) return;
  // the app's remembered presenter type stays the app's: a course page's frame is read at
  // the page's size unless its link says ?presenter=on (a projector)
  initTheme(new URLSearchParams(location.search).get("presenter") === "on");
  inlineElkWorker();
  const options = readOptions(location.search, json<Partial<ViewerOptions>>("gradwalk-options") ?? {});
  const trace = json<TraceData>("gradwalk-trace");
  if (trace) {
    if (!Array.isArray(trace.events)) {
      fail(root, "this page's trace has no events.");
      return;
    }
    // an export carries the run it compares with in the page: no server to fetch it from
    const compared = json<TraceData>("gradwalk-compare");
    const fetchRun = (id: string) =>
      compared && id === options.compare ? Promise.resolve(compared) : Promise.reject(new Error(`this page does not carry run ${id}`));
    window.gradwalkViewer = new Viewer(root, trace, options, fetchRun);
    return;
  }
  const boot = json<Bootstrap>("bootstrap");
  if (boot?.run_id) {
    void mountRun(root, boot, options);
    return;
  }
  fail(root, "this page carries no trace.");
}

main();
