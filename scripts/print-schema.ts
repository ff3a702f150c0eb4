// Writes schema.graphql from the code; with --check, fails when the file is stale.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { printSchemaSdl } from "../src/schema/index.ts";

// `--check [file]` compares another copy (the tests use one); the default is the committed file.
const checkIndex = process.argv.indexOf("--check");
const fileArg = checkIndex >= 0 ? process.argv[checkIndex + 1] : undefined;
const file = fileArg ?? fileURLToPath(new URL("../schema.graphql", import.meta.url));
const printed = printSchemaSdl();

if (process.argv.includes("--check")) {
  const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
  if (current !== printed) {
    process.stderr.write("schema.graphql is stale: run `npm run schema:print` and commit it\n");
    process.exit(1);
  }
  process.stdout.write("schema.graphql is up to date\n");
} else {
  fs.writeFileSync(file, printed);
  process.stdout.write(`wrote ${file}\n`);
}
