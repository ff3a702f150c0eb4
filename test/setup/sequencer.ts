// The order vitest gives the spec files: its own (failed first, then longest
// first, from the durations it cached) once it has durations. A clean checkout
// has none, and vitest then runs larger files first; but a conformance spec is
// a one-line file that runs a suite written beside it (api.spec.ts runs
// api.ts, the longest of all), so it would start last and leave the other
// worker idle at the end. Without durations, a spec counts the size of the
// module of the same name beside it too.
import fs from "node:fs";
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

function weight(spec: TestSpecification): number {
  const size = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);
  return size(spec.moduleId) + size(spec.moduleId.replace(/\.spec\.ts$/, ".ts"));
}

export class WeightedSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const known = files.some((spec) => this.ctx.cache.getFileTestResults(`${spec.project.name}:${path.relative(root, spec.moduleId)}`));
    return known ? sorted : [...files].sort((a, b) => weight(b) - weight(a));
  }
}
