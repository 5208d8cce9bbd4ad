// Try it: the lesson's changes made a step a press, recognised once made, refused where the code moved on.
import assert from "node:assert/strict";
import { test } from "node:test";
import { applyTry, type TryStep } from "../src/lesson-try";

const one = (replace: string, text: string): TryStep[] => [[{ replace, with: text }]];

test("the first occurrence of the text is replaced, as it stands (a $ is no pattern)", () => {
  assert.deepEqual(applyTry("lr=0.5\nprint(lr)\n", one("lr=0.5", "lr=0.05"), 0), { source: "lr=0.05\nprint(lr)\n", step: 0 });
  assert.deepEqual(applyTry("x = 1\n", one("x = 1", "x = '$&$1'"), 0), { source: "x = '$&$1'\n", step: 0 });
});

test("a line inserted before the text it keeps is not inserted twice", () => {
  const steps = one("out = bn(x)\n", "bn.eval()\nout = bn(x)\n");
  const once = applyTry("bn = 1\nout = bn(x)\n", steps, 0);
  assert.deepEqual(once, { source: "bn = 1\nbn.eval()\nout = bn(x)\n", step: 0 });
  assert.deepEqual(applyTry("bn = 1\nbn.eval()\nout = bn(x)\n", steps, 1), { why: "made" });
});

test("a deletion is known as made only where Try it made it; otherwise the code moved on", () => {
  const steps = one("for p in ps:\n    p.requires_grad_(False)\n", "");
  assert.deepEqual(applyTry("model = 1\n", steps, 1), { why: "made" });
  assert.deepEqual(applyTry("model = 1\n", steps, 0), { why: "gone", missing: "for p in ps:\n    p.requires_grad_(False)\n" });
  assert.deepEqual(applyTry("momentum=0.5)\n", one("momentum=0.9)", "momentum=0.0)"), 0), { why: "gone", missing: "momentum=0.9)" });
});

test("a step's edits are made together, each on the code the one before it left", () => {
  const steps: TryStep[] = [
    [
      { replace: "import torch\n", with: "import math\nimport torch\n" },
      { replace: "w = make()\n", with: "w = make()\ninit(w, math.sqrt(5))\n" },
    ],
  ];
  const code = "import torch\nw = make()\n";
  const done = applyTry(code, steps, 0);
  assert.deepEqual(done, { source: "import math\nimport torch\nw = make()\ninit(w, math.sqrt(5))\n", step: 0 });
  // one text missing: nothing is made, and the missing text is named
  assert.deepEqual(applyTry("import torch\nw = other()\n", steps, 0), { why: "gone", missing: "w = make()\n" });
  assert.deepEqual(applyTry("source" in done ? done.source : "", steps, 1), { why: "made" });
});

test("a try of steps makes the next step a press: the move after the first change", () => {
  const clamp = "    p.data.clamp_(-1, 1)\n";
  const checked = "    with torch.no_grad(): p.clamp_(-1, 1)\n";
  const steps: TryStep[] = [
    [{ replace: clamp, with: checked }],
    [
      { replace: checked, with: "" },
      { replace: "opt.step()\n", with: `opt.step()\n${checked}` },
    ],
  ];
  const code = `loss = f()\n${clamp}loss.backward()\nopt.step()\n`;
  const first = applyTry(code, steps, 0);
  assert.deepEqual(first, { source: `loss = f()\n${checked}loss.backward()\nopt.step()\n`, step: 0 });
  const second = applyTry("source" in first ? first.source : "", steps, 1);
  assert.deepEqual(second, { source: `loss = f()\nloss.backward()\nopt.step()\n${checked}`, step: 1 });
  assert.deepEqual(applyTry("source" in second ? second.source : "", steps, 2), { why: "made" });
  // the first change made by hand: the first press makes the second step
  assert.deepEqual(applyTry("source" in first ? first.source : "", steps, 0), second);
});
