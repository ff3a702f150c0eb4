// Writes schema.graphql and possibleTypes.json (beside it) from the code; with
// --check, fails when either is stale.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { printSchemaSdl, schema } from "../src/schema/index.ts";
import { printPossibleTypes } from "./possible-types.ts";

// `--check [file]` compares another copy of schema.graphql and the possibleTypes.json
// beside it (the tests use one); the default is the committed pair.
const checkIndex = process.argv.indexOf("--check");
const fileArg = checkIndex >= 0 ? process.argv[checkIndex + 1] : undefined;
const schemaFile = fileArg ?? fileURLToPath(new URL("../schema.graphql", import.meta.url));
const files = new Map([
  [schemaFile, printSchemaSdl()],
  [path.join(path.dirname(schemaFile), "possibleTypes.json"), printPossibleTypes(schema)],
]);

if (process.argv.includes("--check")) {
  const stale = [...files].filter(([file, text]) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "") !== text).map(([file]) => path.basename(file));
  if (stale.length) {
    process.stderr.write(
      `${stale.join(" and ")} ${stale.length > 1 ? "are" : "is"} stale: run \`npm run schema:print\` and commit ${stale.length > 1 ? "them" : "it"}\n`,
    );
    process.exit(1);
  }
  process.stdout.write("schema.graphql and possibleTypes.json are up to date\n");
} else {
  for (const [file, text] of files) {
    fs.writeFileSync(file, text);
    process.stdout.write(`wrote ${file}\n`);
  }
}
