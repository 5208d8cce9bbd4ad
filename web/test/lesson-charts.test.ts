// Opening a lesson sets the training charts only as far as it says: one without `charts`
// (`charts: null` from the server) keeps the learner's own choices and undoes what the lesson before imposed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LessonChartMemory, saysSomething } from "../src/lesson-charts";

const NOTHING = null;
const DEFAULTS = { per_param: false, yscale: "auto", hide: [] };
const DEAD_RELU = { per_param: true, yscale: "log", hide: ["loss", "lr"] };

test("null says nothing; any charts entry says something, the defaults written out too", () => {
  assert.equal(saysSomething(undefined), false);
  assert.equal(saysSomething(NOTHING), false);
  assert.equal(saysSomething(DEFAULTS), true);
  assert.equal(saysSomething(DEAD_RELU), true);
  assert.equal(saysSomething({ per_param: false, yscale: "linear", hide: [] }), true);
  assert.equal(saysSomething({ per_param: false, yscale: "auto", hide: ["lr"] }), true);
});

test("a lesson without charts keeps the learner's own; with, it imposes, and the next one undoes it", () => {
  const memory = new LessonChartMemory();
  const own = { perParam: true, yscale: "linear" as const, hide: [] };
  assert.deepEqual(memory.choicesFor(NOTHING, own), {});
  assert.deepEqual(memory.choicesFor(DEAD_RELU, own), { perParam: true, yscale: "log", hide: ["loss", "lr"] });
  // the learner picks auto in dead-relu: theirs to keep; the rest goes back
  assert.deepEqual(memory.choicesFor(NOTHING, { perParam: true, yscale: "auto", hide: ["loss", "lr"] }), { perParam: true, hide: [] });
  assert.deepEqual(memory.choicesFor(NOTHING, { perParam: true, yscale: "auto", hide: [] }), {});
});

test("two imposing lessons in a row go back to the choices from before the first", () => {
  const memory = new LessonChartMemory();
  memory.choicesFor(DEAD_RELU, { perParam: false, yscale: "auto", hide: [] });
  memory.choicesFor({ per_param: true, yscale: "linear", hide: [] }, { perParam: true, yscale: "log", hide: ["loss", "lr"] });
  assert.deepEqual(memory.choicesFor(undefined, { perParam: true, yscale: "linear", hide: [] }), { perParam: false, yscale: "auto", hide: [] });
});

test("a reload on a lesson that imposed: the next lesson puts the defaults back", () => {
  const memory = new LessonChartMemory();
  memory.resumed(DEAD_RELU);
  assert.deepEqual(memory.choicesFor(NOTHING, { perParam: true, yscale: "log", hide: ["loss", "lr"] }), { perParam: false, yscale: "auto", hide: [] });
});
