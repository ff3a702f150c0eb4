// Vitest global setup: `npm run build` once per run, before any spec starts.
// Specs that start runledger as a process of its own run this build
// (`node dist/main.js`) instead of the sources under tsx: the same code, without
// transpiling it and bundling the console at every start (about 2 s of CPU a
// process, and a run starts well over a hundred). production.spec and the tools
// soak test this build as a deployment runs it. Specs that test `npm start`
// itself, or load a probe into the server, still start the sources.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export default async function setup(): Promise<void> {
  await promisify(execFile)("npm", ["run", "-s", "build"], { cwd: ROOT });
  // Read by testkit/processes.ts (serverCommand) and testkit/built.ts in the workers, which inherit this environment.
  process.env.RUNLEDGER_TEST_SERVER_BUILD = path.join(ROOT, "dist", "main.js");
}
