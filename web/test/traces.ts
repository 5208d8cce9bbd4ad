// Real recorded traces for the unit tests: `gradwalk record` outputs of server/examples,
// written to GRADWALK_TRACES by tests/web/test_unit.py.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TraceModel } from "../src/trace-model";
import type { GradwalkTrace } from "../src/types/events";

const dir = process.env.GRADWALK_TRACES ?? "/tmp";

/** The recorded trace of example `name`. */
export function loadTrace(name: string): GradwalkTrace {
  return JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as GradwalkTrace;
}

/** The trace model of example `name`, as the app builds it. */
export function loadModel(name: string): TraceModel {
  const trace = loadTrace(name);
  return TraceModel.from(trace.events, trace.source);
}
