// Try it: the lesson's change made once, recognised once made, refused where the code moved on.
import assert from "node:assert/strict";
import { test } from "node:test";
import { applyTry } from "../src/lesson-try";

test("the first occurrence of the text is replaced, as it stands (a $ is no pattern)", () => {
  assert.deepEqual(applyTry("lr=0.5\nprint(lr)\n", { replace: "lr=0.5", with: "lr=0.05" }, false), { source: "lr=0.05\nprint(lr)\n" });
  assert.deepEqual(applyTry("x = 1\n", { replace: "x = 1", with: "x = '$&$1'" }, false), { source: "x = '$&$1'\n" });
});

test("a line inserted before the text it keeps is not inserted twice", () => {
  const edit = { replace: "out = bn(x)\n", with: "bn.eval()\nout = bn(x)\n" };
  const once = applyTry("bn = 1\nout = bn(x)\n", edit, false);
  assert.deepEqual(once, { source: "bn = 1\nbn.eval()\nout = bn(x)\n" });
  assert.deepEqual(applyTry("bn = 1\nbn.eval()\nout = bn(x)\n", edit, true), { why: "made" });
});

test("a deletion is known as made only where Try it made it; otherwise the code moved on", () => {
  const edit = { replace: "for p in ps:\n    p.requires_grad_(False)\n", with: "" };
  assert.deepEqual(applyTry("model = 1\n", edit, true), { why: "made" });
  assert.deepEqual(applyTry("model = 1\n", edit, false), { why: "gone" });
  assert.deepEqual(applyTry("momentum=0.5)\n", { replace: "momentum=0.9)", with: "momentum=0.0)" }, false), { why: "gone" });
});
