// Bundle the app with esbuild into server/static/dist/ (served at /static/dist/).
//
// Output: app.js + app.css (the app), viewer.js + viewer.css (the read-only viewer of
// embeds, exports and notebooks), elk-worker.js (the graph layout runs off the main
// thread). `--watch` rebuilds on change; `--dev` skips minification.
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const web = resolve(here, "..");
const outdir = resolve(web, "../server/static/dist");
const watch = process.argv.includes("--watch");
const dev = watch || process.argv.includes("--dev");
const require = createRequire(import.meta.url);

rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
copyFileSync(require.resolve("elkjs/lib/elk-worker.min.js"), resolve(outdir, "elk-worker.js"));

const options = {
  absWorkingDir: web,
  entryPoints: { app: "src/main.ts", viewer: "src/viewer.ts" },
  outdir,
  bundle: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  minify: !dev,
  sourcemap: "linked",
  legalComments: "linked",
  logLevel: "warning",
  metafile: true,
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
  console.log(`watching web/src -> ${outdir}`);
} else {
  const result = await esbuild.build(options);
  const out = result.metafile.outputs;
  for (const [file, info] of Object.entries(out)) {
    if (!file.endsWith(".map")) console.log(`${file.replace(/^.*server\//, "server/")}  ${(info.bytes / 1024).toFixed(0)} KiB`);
  }
}
