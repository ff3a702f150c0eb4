// The order vitest gives the spec files: its own (failed first, then longest
// first, from the durations it cached) once it has durations. A clean checkout
// has none: the specs then start longest first by spec-durations.json (each
// file's time in a full run, written by scripts/spec-durations.mjs), so the two
// workers end together instead of one running a long spec alone at the end.
// A spec not listed there (a new one) starts first, its time unknown.
import fs from "node:fs";
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const DURATIONS = path.join(path.dirname(new URL(import.meta.url).pathname), "spec-durations.json");

export class WeightedSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const known = files.some((spec) => this.ctx.cache.getFileTestResults(`${spec.project.name}:${path.relative(root, spec.moduleId)}`));
    if (known) return sorted;
    const durations = (fs.existsSync(DURATIONS) ? JSON.parse(fs.readFileSync(DURATIONS, "utf8")) : {}) as Record<string, number>;
    const duration = (spec: TestSpecification) => durations[path.relative(root, spec.moduleId)] ?? Infinity;
    return [...files].sort((a, b) => duration(b) - duration(a));
  }
}
