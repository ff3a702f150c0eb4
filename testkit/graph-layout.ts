// The README's layout for custom graphs, in a folder of its own outside the
// repository (so no package.json above it says "module"): graphs/research.ts
// (test/fixtures/graphs/two-node.ts) with no package.json, graphs/split.ts that
// takes its graph from research.ts (a module's own import), and
// legacy/graphs/echo.js (echo.mjs) in a folder whose package.json says
// "commonjs". node_modules links to the project's, as an installation has it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./processes.ts";

export interface GraphLayout {
  dir: string;
  /** Writes agents.json with `default` and these agents; returns its path. */
  config(agents: Record<string, unknown>): string;
  remove(): void;
}

export function graphModuleLayout(): GraphLayout {
  const fixtures = path.join(ROOT, "test", "fixtures", "graphs");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-graph-layout-"));
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  fs.mkdirSync(path.join(dir, "graphs"));
  fs.copyFileSync(path.join(fixtures, "two-node.ts"), path.join(dir, "graphs", "research.ts"));
  fs.writeFileSync(path.join(dir, "graphs", "split.ts"), 'import { makeGraph } from "./research.ts";\n\nexport default makeGraph;\n');
  fs.mkdirSync(path.join(dir, "legacy", "graphs"), { recursive: true });
  fs.writeFileSync(path.join(dir, "legacy", "package.json"), JSON.stringify({ type: "commonjs" }));
  fs.copyFileSync(path.join(fixtures, "echo.mjs"), path.join(dir, "legacy", "graphs", "echo.js"));
  return {
    dir,
    config(agents) {
      const file = path.join(dir, "agents.json");
      fs.writeFileSync(file, JSON.stringify({ agents: { default: { type: "chat" }, ...agents } }));
      return file;
    },
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
