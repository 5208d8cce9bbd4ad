// Run the frontend's unit tests (web/test/*.test.ts) with Node's test runner.
//
// Each test file is bundled by esbuild to a temporary folder, then `node --test` runs them.
// Tests that need real traces read them from GRADWALK_TRACES (a folder of
// `gradwalk record` outputs, written by tests/web/test_unit.py).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const web = resolve(dirname(fileURLToPath(import.meta.url)), "..");
if (!process.env.GRADWALK_TRACES) {
  // without the traces most tests would fail one by one on a missing file
  console.error(
    "npm test reads traces recorded with PyTorch from the folder GRADWALK_TRACES names, and it is not set.\n" +
      "From the repository root, `.venv/bin/python -m pytest tests/web/test_unit.py` records them " +
      "into a temporary folder and runs these tests with it.",
  );
  process.exit(2);
}
const files = readdirSync(join(web, "test")).filter((f) => f.endsWith(".test.ts"));
const out = mkdtempSync(join(tmpdir(), "gradwalk-unit-"));
try {
  await esbuild.build({
    absWorkingDir: web,
    entryPoints: files.map((f) => join("test", f)),
    outdir: out,
    bundle: true,
    platform: "node",
    format: "esm",
    outExtension: { ".js": ".mjs" },
    logLevel: "warning",
  });
  // the tests' bundles (a module that imports its CSS bundles that beside them: not a test)
  const outputs = readdirSync(out).filter((f) => f.endsWith(".mjs")).map((f) => join(out, f));
  const run = spawnSync(process.execPath, ["--test", ...outputs], { stdio: "inherit" });
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
