// Open trace…: a file written by `gradwalk record` (or Download trace), read and checked
// before the app shows it with no server run behind it.
import type { GradwalkTrace } from "./types/events";

/** Show the trace file chosen in `input` with `show`; a file that is not a trace is said with `say`. */
export function bindOpenTrace(input: HTMLInputElement | null, show: (trace: GradwalkTrace) => void, say: (message: string) => void): void {
  input?.addEventListener("change", async () => {
    const file = input.files?.[0];
    input.value = "";
    if (!file) return;
    try {
      const trace = JSON.parse(await file.text()) as GradwalkTrace;
      if (!Array.isArray(trace.events)) throw new Error("not a gradwalk trace (no events)");
      const bad = trace.events.findIndex((e) => typeof e !== "object" || e === null || typeof e.seq !== "number" || typeof e.type !== "string");
      if (bad >= 0) throw new Error(`not a gradwalk trace (event ${bad} has no seq and type)`);
      show(trace);
    } catch (err) {
      say(`Could not open ${file.name}: ${(err as Error).message}`);
    }
  });
}
