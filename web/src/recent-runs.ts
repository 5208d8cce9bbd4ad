// "Open…" in the header's tools (under "More" where the header is crowded): a dialog
// listing this server's latest runs (GET /api/runs), newest first, each with its title (or
// its first line of code), its status, when it was made and its counts, and under them the
// header's "Open a trace file…" (one tool for both, so the header's row at 1440 px has room
// for it; a room's page keeps the file's own tool and has no list). A row is a link to
// `?run=ID`: Enter or a click opens the run as that link would (Back returns to the run
// before), Ctrl/⌘-click opens it in a new tab, ↑ ↓ Home End move between the rows. The run
// open now is marked. A room's page has no list: its viewers follow the presenter, and the
// projector would show every run on the server.
import "./styles/recent-runs.css";
import { ApiError } from "./api";
import type { App } from "./app";
import { h } from "./dom";
import { STATUS_WORDS } from "./output";
import { readUrl } from "./url-state";

/** A run as `GET /api/runs` lists it (server/models.py `RunSummary`). */
export interface RunSummary {
  id: string;
  status: string;
  created_at: string;
  finished_at?: string | null;
  device?: string;
  title?: string | null;
  /** Its first line of code past the imports, for a run with no title. */
  first_line?: string;
  message?: string;
  counts?: { ops: number; nodes: number; backward_calls: number; optimizer_steps: number } | null;
}

/** How many runs the list shows. */
export const RECENT_LIMIT = 30;
/** How long the list waits for the server before saying it did not answer. */
const WAIT_MS = 10_000;

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/** A run's status in the app's words (the header's, output.ts); a live one's too. */
export function statusWord(status: string): string {
  const words: Record<string, string> = { queued: "queued", running: "running", ...STATUS_WORDS };
  return words[status] ?? status;
}

/**
 * When a run was made, as a list reads it: "just now", "5 min ago", "today 14:02",
 * "yesterday 14:02", "Mon 14:02" within the week, "3 Mar 14:02" within the year, else
 * "3 Mar 2024" (local time; a clock a little ahead of the server's reads "just now").
 */
export function whenMade(made: Date, now: Date = new Date()): string {
  const minutes = Math.floor((now.getTime() - made.getTime()) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const clock = `${String(made.getHours()).padStart(2, "0")}:${String(made.getMinutes()).padStart(2, "0")}`;
  const day = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const daysAgo = Math.round((day(now) - day(made)) / 86_400_000);
  if (daysAgo <= 0) return `today ${clock}`;
  if (daysAgo === 1) return `yesterday ${clock}`;
  if (daysAgo < 7) return `${DAYS[made.getDay()]} ${clock}`;
  const date = `${made.getDate()} ${MONTHS[made.getMonth()]}`;
  return made.getFullYear() === now.getFullYear() ? `${date} ${clock}` : `${date} ${made.getFullYear()}`;
}

function plural(n: number, one: string, many: string): string {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many}`;
}

/** A finished run's counts in a few words ("12 ops · 9 nodes · 100 optimizer steps"); "" while unknown. */
export function countsText(counts: RunSummary["counts"]): string {
  if (!counts) return "";
  const parts = [plural(counts.ops, "op", "ops"), plural(counts.nodes, "node", "nodes")];
  if (counts.backward_calls > 1) parts.push(plural(counts.backward_calls, "backward call", "backward calls"));
  if (counts.optimizer_steps > 0) parts.push(plural(counts.optimizer_steps, "optimizer step", "optimizer steps"));
  return parts.join(" · ");
}

/** Why the list could not be fetched, in words. */
function failureText(err: unknown): string {
  if (err instanceof ApiError) return `The server would not list its runs: ${err.message}`;
  if (err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError")) {
    return `The server did not answer within ${WAIT_MS / 1000} s, so its runs cannot be listed now.`;
  }
  return "Could not reach the server to list its runs: it may have stopped, or the network is down.";
}

export class RecentRuns {
  readonly dialog: HTMLDialogElement;
  private readonly list = h("ul", { class: "gw-recent-list", "aria-labelledby": "gw-recent-title", data: { gw: "recent-list" } });
  private readonly note = h("p", { class: "gw-recent-note", role: "status", data: { gw: "recent-note" } });
  private readonly retry = h("button", { type: "button", class: "gw-btn", text: "Try again", hidden: true, on: { click: () => void this.refresh() } });
  private asked = 0;

  constructor(private readonly app: App) {
    const close = h("button", { type: "button", class: "gw-btn", "aria-label": "Close", text: "✕", on: { click: () => this.dialog.close() } });
    this.dialog = h(
      "dialog",
      { class: "gw-dialog gw-recent-dialog", "aria-labelledby": "gw-recent-title", data: { gw: "recent-dialog" } },
      h("div", { class: "gw-dialog-head" }, h("h2", { id: "gw-recent-title", text: "Open a run" }), close),
      h("p", { class: "gw-dialog-intro", text: "The latest runs on this server, newest first: anyone's who ran code here, not only yours." }),
      h("div", { class: "gw-recent-state" }, this.note, this.retry),
      this.list,
      this.traceFile(),
    );
    this.dialog.addEventListener("click", (ev) => {
      if (ev.target === this.dialog) this.dialog.close(); // a click on the backdrop
    });
    this.list.addEventListener("keydown", (ev) => this.onKey(ev));
    app.root.append(this.dialog);
  }

  /**
   * The header's trace file tool, taken into the dialog under the list ("Open a trace
   * file…"): picking a file closes the dialog, as the app loads it (trace-file.ts).
   */
  private traceFile(): HTMLElement | null {
    const label = this.app.root.querySelector<HTMLLabelElement>(".gw-header .gw-file");
    if (!label) return null;
    for (const node of [...label.childNodes]) if (node.nodeType === Node.TEXT_NODE) node.remove();
    label.prepend("Open a trace file…");
    label.querySelector("input")?.addEventListener("change", () => this.dialog.close());
    return h("div", { class: "gw-recent-foot" }, label, h("span", { text: "a trace recorded with gradwalk record" }));
  }

  /** Open the dialog and fetch the list afresh. */
  async open(): Promise<void> {
    if (!this.dialog.open) this.dialog.showModal();
    await this.refresh();
  }

  private async refresh(): Promise<void> {
    const ticket = ++this.asked;
    this.retry.hidden = true;
    this.note.hidden = false;
    this.note.textContent = "Loading the runs…";
    this.list.replaceChildren();
    let runs: RunSummary[];
    try {
      const body = await this.app.api.request<{ runs: RunSummary[] }>(`/runs?limit=${RECENT_LIMIT}`, { signal: AbortSignal.timeout(WAIT_MS) });
      runs = body.runs;
    } catch (err) {
      if (ticket !== this.asked) return;
      this.note.textContent = failureText(err);
      this.note.dataset.state = "error";
      this.retry.hidden = false;
      if (this.dialog.open) this.retry.focus();
      return;
    }
    if (ticket !== this.asked) return;
    delete this.note.dataset.state;
    if (!runs.length) {
      this.note.textContent = "No runs yet on this server. Press ▶ Run, and your runs will be listed here.";
      return;
    }
    this.note.hidden = true;
    this.note.textContent = "";
    const now = new Date();
    this.list.replaceChildren(...runs.map((run) => h("li", {}, this.row(run, now))));
    if (this.dialog.open) (this.list.querySelector<HTMLElement>("[aria-current=true]") ?? this.list.querySelector<HTMLElement>("a"))?.focus();
  }

  private row(run: RunSummary, now: Date): HTMLAnchorElement {
    const current = run.id === this.app.runId;
    const made = new Date(run.created_at);
    const named = run.title || run.first_line || `run ${run.id}`;
    const counts = countsText(run.counts);
    const link = h(
      "a",
      {
        class: "gw-recent-run",
        href: `${location.pathname}?run=${encodeURIComponent(run.id)}`,
        "aria-current": current ? "true" : undefined,
        data: { run: run.id },
        on: { click: (ev) => this.go(run.id, ev) },
      },
      h("span", { class: run.title ? "gw-recent-title" : "gw-recent-title gw-recent-code", title: named, text: named }),
      h("span", { class: "gw-recent-status", data: { state: run.status }, title: run.message || undefined, text: statusWord(run.status) }),
      h(
        "span",
        { class: "gw-recent-meta" },
        h("time", { datetime: run.created_at, title: made.toLocaleString(), text: whenMade(made, now) }),
        counts && ` · ${counts}`,
        run.device === "cuda" && " · CUDA",
      ),
      current && h("span", { class: "gw-recent-current", text: "open now" }),
    );
    return link;
  }

  /**
   * Open run `id` as its `?run=` link would, so that Back returns: with a run on screen the
   * app loads it and pushes it onto the history; with none (the starter example, a trace
   * file) the link loads the page, as the app keeps no history entry of its own for that.
   * A click with a modifier (a new tab or window) is the link's own.
   */
  private go(id: string, ev: MouseEvent): void {
    if (ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
    this.dialog.close();
    if (id === this.app.runId) {
      ev.preventDefault(); // already open
      return;
    }
    if (this.app.runId === null) return;
    ev.preventDefault();
    // as a link opens it: the tape, the charts' choices at their defaults, no step of the run left
    void this.app.applyUrl({ ...readUrl(`?run=${encodeURIComponent(id)}&view=tape`), yscale: "auto", perParam: false, hide: [], compare: null }).then(() => {
      if (this.app.runId === id && this.app.store.state.step !== null) this.app.store.set({ step: null });
    });
  }

  /** ↑ ↓ Home End move between the rows (Tab and Shift+Tab do too). */
  private onKey(ev: KeyboardEvent): void {
    const rows = [...this.list.querySelectorAll<HTMLElement>("a.gw-recent-run")];
    const at = rows.indexOf(document.activeElement as HTMLElement);
    const to: Record<string, number> = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: rows.length - 1 };
    if (!(ev.key in to) || !rows.length) return;
    ev.preventDefault();
    rows[Math.max(0, Math.min(rows.length - 1, to[ev.key]))].focus();
  }
}

/** Wire the header's "Open…" (none on a room's page: the button is hidden there, and the
 * header keeps its "Open trace…"). */
export function bindRecentRuns(app: App): RecentRuns | null {
  const button = app.root.querySelector<HTMLButtonElement>("[data-gw=recent-runs]");
  if (!button) return null;
  if (app.root.dataset.room !== undefined) {
    button.hidden = true;
    return null;
  }
  const recent = new RecentRuns(app);
  button.addEventListener("click", () => void recent.open());
  return recent;
}
