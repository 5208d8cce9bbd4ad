// Generate src/types/events.ts from the event contract's JSON Schema (`make schema`).
//
// The schema is exported from engine/events.py in serialization mode. Every event on the
// wire carries all of its fields (the engine serializes whole models), so this script
// marks every property required: the `type` tag then narrows the union in TypeScript.
// `--check` compares instead of writing, and exits 1 when the committed file is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = resolve(here, "../../engine/schema/trace.schema.json");
const outPath = resolve(here, "../src/types/events.ts");

// Titles on properties would each become a type alias (Seq1, Seq2, ...): keep only the
// titles of the named models.
function normalize(node, isModel = false) {
  if (Array.isArray(node)) {
    node.forEach((child) => normalize(child));
  } else if (node && typeof node === "object") {
    if (!isModel) delete node.title;
    if (node.type === "object" && node.properties) {
      node.required = Object.keys(node.properties).sort();
    }
    for (const [key, child] of Object.entries(node)) {
      if (key === "$defs") {
        Object.values(child).forEach((model) => normalize(model, true));
      } else if (key === "properties") {
        // A mapping of field names (one may be called "title"), not a schema.
        Object.values(child).forEach((prop) => normalize(prop));
      } else {
        normalize(child);
      }
    }
  }
}

export async function render() {
  const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
  normalize(schema, true);
  const body = await compile(schema, "GradwalkTrace", {
    bannerComment:
      "/* Generated from engine/schema/trace.schema.json by `npm run types` (`make schema`); do not edit. */",
    additionalProperties: false,
    unreachableDefinitions: true,
    declareExternallyReferenced: true,
    format: true,
    style: { printWidth: 100, singleQuote: false },
  });
  return (
    body +
    "\n/** Any event of the stream (the union tagged by `type`). */\n" +
    'export type GradwalkEvent = GradwalkTrace["events"][number];\n' +
    "/** A tensor's values as they travel: whole, or summarized. */\n" +
    "export type TensorValue = FullValue | SummaryValue;\n"
  );
}

const text = await render();
if (process.argv.includes("--check")) {
  const current = readFileSync(outPath, "utf8");
  if (current !== text) {
    console.error("web/src/types/events.ts is stale: run `make schema`");
    process.exit(1);
  }
} else {
  writeFileSync(outPath, text);
  console.log(outPath);
}
