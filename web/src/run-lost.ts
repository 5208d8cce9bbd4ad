// A run followed live that ended while the page was cut off from it. A server killed mid-run
// and started again on the same database has the run as crashed ("server restarted"), with
// none of the events the page saw, and refuses the page's reconnect with how the run ended
// (server/routes/events.py, _past_the_end): "the run ended crashed; no event after seq 1
// (asked for after=469). server restarted". The page says that in words, and shows the run
// as ended: its status had read "ready" over "running on cpu…".
import type { OutputView } from "./output";
import type { TraceModel } from "./trace-model";

const ENDED = /^the run ended (\w+); no event after seq \d+ \(asked for after=\d+\)(?:\. ([\s\S]*))?$/;

/**
 * Say in `output` why the event stream of `model`'s run failed (`reason`: the server's close
 * reason, or the stream's own words); return how the run ended where the server said so
 * (its status, for the header), else null.
 */
export function sayStreamFailed(model: TraceModel, reason: string | undefined, output: OutputView): string | null {
  const ended = reason ? ENDED.exec(reason) : null;
  if (!ended) {
    output.say(reason ?? "The event stream failed.", "error");
    return null;
  }
  const [, status, message = ""] = ended;
  if (message === "server restarted") {
    output.endedUnseen(status, "the server restarted while it ran");
    output.say(`The server restarted while this run was going${lostAfter(model)}. Press ▶ Run to run it again.`, "error");
  } else {
    output.endedUnseen(status, "while the page was not connected");
    output.say(`This run ended while the page was not connected to the server${message ? `: ${message}` : ""}. Press ▶ Run to run it again.`, "error");
  }
  return status;
}

/** How far the run had got, as the page saw it: "; it was lost after 320 optimizer steps". */
function lostAfter(model: TraceModel): string {
  const count = (n: number, what: string) => `; it was lost after ${n} ${what}${n === 1 ? "" : "s"}`;
  const steps = model.optimizerSteps.length;
  if (steps) return count(steps, "optimizer step");
  const calls = model.backwards.length;
  return calls ? count(calls, "backward() call") : ", and it was lost";
}
