// Sharing a run from the app: "Copy embed code" (an <iframe> of /embed/ID at the current
// view and step, with the charts' y scale, norms and compared run when not the defaults,
// for a course page) and "Download HTML" (the run as one self-contained file from /api/runs/ID/export,
// for disk, a static host or an LMS).
import "./styles/share.css";
import type { ViewState } from "./store";
import { writeCall, writeChartChoices, writeSelection } from "./url-state";

export interface ShareState {
  runId: string | null;
  state: ViewState;
  finished: boolean;
  title?: string | null;
}

/** The embed's view for the app's open panel (an inspector with nothing picked would ask for a click: show the graph). */
function embedView(state: ViewState): string {
  return state.view === "inspector" && !state.selection ? "graph" : state.view;
}

function query(state: ViewState): string {
  const q = new URLSearchParams({ view: embedView(state) });
  if (state.step !== null) q.set("step", String(state.step));
  writeSelection(q, state.selection);
  writeCall(q, state.graphCall);
  writeChartChoices(q, state);
  return q.toString();
}

/** The <iframe> that shows run `runId` from `origin` at the given view and step. */
export function embedCode(origin: string, runId: string, state: ViewState, title?: string | null): string {
  const attr = (text: string) => text.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`).replace(/&#38;/g, "&amp;");
  const src = attr(`${origin}/embed/${encodeURIComponent(runId)}?${query(state)}`);
  const label = attr(`gradwalk: ${title || `run ${runId}`}`);
  return `<iframe src="${src}" title="${label}" width="100%" height="560" style="border:1px solid #d9dee6;border-radius:8px" loading="lazy"></iframe>`;
}

/** The URL that downloads run `runId` as one HTML file opening at the given view and step. */
export function exportUrl(api: string, runId: string, state: ViewState): string {
  return `${api}/runs/${encodeURIComponent(runId)}/export?${query(state)}`;
}

/**
 * Wire `[data-gw=copy-embed]` and `[data-gw=download-html]` inside `root`. `current` is read
 * at each click; `say` explains why nothing happened (no run yet, a run still going).
 */
export function bindShareButtons(root: ParentNode, api: string, current: () => ShareState, say: (message: string) => void): void {
  const embed = root.querySelector<HTMLButtonElement>("[data-gw=copy-embed]");
  const download = root.querySelector<HTMLAnchorElement>("[data-gw=download-html]");
  embed?.addEventListener("click", () => {
    const { runId, state, title } = current();
    if (!runId) {
      say("Run the code (or open a stored run) first: an embed shows a run stored on this server.");
      return;
    }
    void copyText(embed, embedCode(location.origin, runId, state, title), "Embed code copied: paste it into your page's HTML.", "Copy this embed code into your page", say);
  });
  download?.addEventListener("click", (ev) => {
    const { runId, state, finished } = current();
    if (!runId || !finished) {
      ev.preventDefault();
      say(runId ? "The run is still going: download it once it has finished." : "Run the code (or open a stored run) first, then download it as one HTML file.");
      return;
    }
    download.href = exportUrl(api, runId, state);
  });
}

/**
 * Put `text` on the clipboard and say so under the output (`say`): the button's own tick is
 * not seen where it sits in the header's "More" menu, which closes on the click. Where the
 * clipboard is refused, `prompt` shows the text to copy by hand.
 */
export async function copyText(button: HTMLElement, text: string, done: string, prompt: string, say: (message: string) => void): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    window.prompt(prompt, text);
    return;
  }
  button.dataset.done = "copied";
  window.setTimeout(() => delete button.dataset.done, 1500);
  say(done);
}
