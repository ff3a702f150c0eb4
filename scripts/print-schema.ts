// Writes schema.graphql from the code; with --check, fails when the file is stale.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { printSchemaSdl } from "../src/schema/index.ts";

const file = fileURLToPath(new URL("../schema.graphql", import.meta.url));
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
