// Writes test/setup/spec-durations.json, how long each spec file took, from the
// durations vitest cached in its last full run (node_modules/.vite/vitest).
// The sequencer orders a clean checkout's specs by it (test/setup/sequencer.ts).
// Run after `npm test` when specs were added or grew: node scripts/spec-durations.mjs
import fs from "node:fs";
import path from "node:path";

const root = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const cacheDir = path.join(root, "node_modules", ".vite", "vitest");
const caches = fs.existsSync(cacheDir) ? fs.readdirSync(cacheDir).map((dir) => path.join(cacheDir, dir, "results.json")) : [];
const newest = caches.filter((file) => fs.existsSync(file)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
if (!newest) {
  process.stderr.write("no vitest results cached: run npm test first\n");
  process.exit(1);
}
const { results } = JSON.parse(fs.readFileSync(newest, "utf8"));
const durations = Object.fromEntries(
  results
    .map(([key, { duration }]) => [key.slice(key.indexOf(":") + 1), Math.round(duration)])
    .filter(([file]) => fs.existsSync(path.join(root, file)))
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);
fs.writeFileSync(path.join(root, "test", "setup", "spec-durations.json"), JSON.stringify(durations, null, 2) + "\n");
process.stdout.write(`${Object.keys(durations).length} spec durations written\n`);
