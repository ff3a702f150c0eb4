// The source reads top-down: every import of a file in src/ points to its own
// folder or to a layer below it, and no files import each other in a cycle.
// The layers, top first (docs/design.md, section 5, "Layers").
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../testkit/app.ts";

const LAYERS = [
  ["cli", "main.ts", "app.ts"],
  ["cluster"],
  ["server"],
  ["schema"],
  ["context.ts"],
  ["read"],
  ["schedules", "retention"],
  ["runs"],
  ["webhooks"],
  ["agent"],
  ["storage"],
  ["correlation"],
  ["telemetry"],
  ["domain"],
  ["config.ts", "config", "logger.ts", "turns.ts"],
];

const SRC = path.join(ROOT, "src");

/**
 * src/storage has layers of its own, top first: the files that assemble a
 * backend, the Storage type, the seams (an interface and one file per backend
 * each), and the plumbing and codecs they share. No module imports the one that
 * assembles it.
 */
const STORAGE_LAYERS = [
  ["index.ts", "open-sqlite.ts", "open-postgres.ts", "migration-status.ts", "wal.ts"],
  ["types.ts"],
  ["run-store", "conversation-list", "checkpoint-reads", "event-bus", "api-keys", "tool-journal", "run-events", "schedules", "webhooks", "retention"],
  ["sqlite", "postgres", "outbox", "rows.ts", "batch.ts", "page.ts"],
];
const STORAGE = path.join(SRC, "storage");

function storageLayerOf(file: string): number {
  const top = path.relative(STORAGE, file).split(path.sep)[0]!;
  const layer = STORAGE_LAYERS.findIndex((names) => names.includes(top));
  if (layer < 0) throw new Error(`${path.relative(ROOT, file)} is in no storage layer: add it to STORAGE_LAYERS and to docs/design.md`);
  return layer;
}

/**
 * src/runs is the run service, in two sides that meet at one seam, and the
 * services beside it. RunService (service.ts) is a facade composing both
 * sides. The API side (start, resume, cancel, fork, edit: validate, record,
 * hand over) reaches the execution side (execution/: claim, execute, record
 * the outcome, stop) only through the seam, so execution can move to another
 * thread or process; the execution side never imports the API side. Both use
 * the shared modules, which import neither.
 */
const RUNS_PARTS: Record<string, string[]> = {
  facade: ["service.ts"],
  api: ["start-run.ts", "resume-run.ts", "cancel-run.ts", "fork-conversation.ts", "edit-state.ts", "api-context.ts", "idempotent-replay.ts"],
  execution: ["execution"],
  seam: ["execution-seam.ts"],
  shared: [
    "options.ts",
    "start-point.ts",
    "admission.ts",
    "adaptive-limit.ts",
    "classify.ts",
    "stored-events.ts",
    "message-counts.ts",
    "idempotency.ts",
    "conversation-notices.ts",
  ],
  beside: ["conversations.ts", "ownership.ts"],
};
const RUNS_MAY_IMPORT: Record<string, string[]> = {
  facade: ["api", "execution", "seam", "shared"],
  api: ["api", "seam", "shared"],
  execution: ["execution", "seam", "shared"],
  seam: [],
  shared: ["shared"],
  beside: ["shared"],
};
/** The longest a file in src/runs may be, in lines: one use case, or one part of one, per file. */
const RUNS_MAX_LINES = 300;
const RUNS = path.join(SRC, "runs");

function runsPartOf(file: string): string {
  const top = path.relative(RUNS, file).split(path.sep)[0]!;
  const part = Object.keys(RUNS_PARTS).find((name) => RUNS_PARTS[name]!.includes(top));
  if (!part) throw new Error(`${path.relative(ROOT, file)} is in no part of src/runs: add it to RUNS_PARTS and to docs/design.md`);
  return part;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

/** The files of ours a file imports (static, re-exports and dynamic imports with a literal path). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const found = new Set<string>();
  for (const match of text.matchAll(/(?:import|export)\s[^'"]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)|import\s+["'](\.[^"']+)["']/g)) {
    const spec = match[1] ?? match[2] ?? match[3]!;
    found.add(path.resolve(path.dirname(file), spec));
  }
  return [...found];
}

function layerOf(file: string): number {
  const top = path.relative(SRC, file).split(path.sep)[0]!;
  const layer = LAYERS.findIndex((names) => names.includes(top));
  if (layer < 0) throw new Error(`${path.relative(ROOT, file)} is in no layer: add its folder to LAYERS and to docs/design.md`);
  return layer;
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => target.startsWith(SRC))]));

describe("the layout of src/", () => {
  it("has every file in a layer, and every import pointing to its own layer or one below", () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        if (!fs.existsSync(target)) throw new Error(`${path.relative(ROOT, file)} imports a missing file ${path.relative(ROOT, target)}`);
        if (layerOf(target) < layerOf(file)) upward.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("holds src/storage to its own layers: assembly, the Storage type, seams, then plumbing and codecs", () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      if (!file.startsWith(STORAGE + path.sep)) continue;
      for (const target of targets) {
        if (!target.startsWith(STORAGE + path.sep)) continue;
        const [from, to] = [storageLayerOf(file), storageLayerOf(target)];
        // A seam's backends may import their own seam's files; never a layer above.
        if (to < from) upward.push(`${path.relative(STORAGE, file)} → ${path.relative(STORAGE, target)}`);
        if (from === 2 && to === 2 && path.relative(STORAGE, file).split(path.sep)[0] !== path.relative(STORAGE, target).split(path.sep)[0]) {
          upward.push(`${path.relative(STORAGE, file)} → ${path.relative(STORAGE, target)} (another seam)`);
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it("holds src/runs to its parts: the API side reaches the execution side only through the seam, and neither imports the other", () => {
    const forbidden: string[] = [];
    for (const [file, targets] of graph) {
      if (!file.startsWith(RUNS + path.sep)) continue;
      const from = runsPartOf(file);
      for (const target of targets) {
        if (!target.startsWith(RUNS + path.sep)) continue;
        const to = runsPartOf(target);
        if (!RUNS_MAY_IMPORT[from]!.includes(to)) forbidden.push(`${path.relative(RUNS, file)} (${from}) → ${path.relative(RUNS, target)} (${to})`);
      }
    }
    expect(forbidden).toEqual([]);
  });

  it("keeps the execution side below the API: it never imports src/schema, src/server, src/read or src/context.ts", () => {
    const above: string[] = [];
    for (const [file, targets] of graph) {
      if (!file.startsWith(RUNS + path.sep) || runsPartOf(file) !== "execution") continue;
      for (const target of targets) if (layerOf(target) < layerOf(RUNS)) above.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)}`);
    }
    expect(above).toEqual([]);
  });

  it(`keeps every file in src/runs at ${RUNS_MAX_LINES} lines or fewer`, () => {
    const long = files
      .filter((file) => file.startsWith(RUNS + path.sep))
      .map((file) => ({ file: path.relative(SRC, file), lines: fs.readFileSync(file, "utf8").split("\n").length - 1 }))
      .filter(({ lines }) => lines > RUNS_MAX_LINES);
    expect(long).toEqual([]);
  });

  it("has no import cycles", () => {
    // Tarjan's strongly connected components: any component of more than one file is a cycle.
    let index = 0;
    const indexes = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    const visit = (file: string) => {
      indexes.set(file, index);
      low.set(file, index);
      index += 1;
      stack.push(file);
      onStack.add(file);
      for (const target of graph.get(file) ?? []) {
        if (!indexes.has(target)) {
          visit(target);
          low.set(file, Math.min(low.get(file)!, low.get(target)!));
        } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, indexes.get(target)!));
      }
      if (low.get(file) === indexes.get(file)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(path.relative(SRC, member));
        } while (member !== file);
        if (component.length > 1) cycles.push(component.sort());
      }
    };
    for (const file of files) if (!indexes.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });
});
