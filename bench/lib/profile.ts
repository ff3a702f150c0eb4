// Summarizes the V8 CPU profiles that --cpu-prof leaves in
// bench/results/profiles: self time by package and by function, so a missed
// target comes with where the time went.
import fs from "node:fs";
import path from "node:path";
import { ROOT } from "../../testkit/processes.ts";

/** Where --cpu-prof leaves each process's profiles, a folder per process. */
export const PROFILE_DIR = path.join(ROOT, "bench", "results", "profiles");

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export function readProfile(file: string): CpuProfile {
  return JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
}

/** Where a script comes from: an npm package, runledger's folder (its first `depth` path segments), Node's internals, or V8. */
export function origin(url: string, depth = 2): string {
  if (!url) return "(native / V8)";
  if (url.startsWith("node:")) return "node: internals";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const file = url.replace(/^file:\/\//, "");
  return file.startsWith(ROOT) ? path.relative(ROOT, file).split("/").slice(0, depth).join("/") : file;
}

/** The `count` largest entries, each as its share of `total` and its time in ms. */
export function top(map: Map<string, number>, total: number, count: number, msDigits = 0): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => `  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(msDigits).padStart(6 + msDigits)} ms  ${name}`);
}

export function summarizeProfile(file: string, count = 25): string {
  const profile = readProfile(file);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  let busy = 0;
  const wall = profile.endTime - profile.startTime;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const us = profile.timeDeltas[i] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)" || functionName === "(program)" || functionName === "(garbage collector)") {
      byOrigin.set(functionName, (byOrigin.get(functionName) ?? 0) + us);
      if (functionName !== "(idle)") busy += us;
      return;
    }
    busy += us;
    const where = url ? `${url.replace(/^file:\/\//, "").replace(ROOT, "")}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"} ${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byOrigin.set(origin(url), (byOrigin.get(origin(url)) ?? 0) + us);
  });
  // Inclusive time per runledger function: what each of our calls costs with everything below it.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      if (!url.includes("/src/") || url.includes("node_modules")) continue;
      const key = `${functionName || "(anonymous)"} ${url.replace(/^file:\/\//, "").replace(ROOT, "")}:${lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  });
  return [
    `${path.basename(file)}: ${(wall / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(1)} s on the CPU`,
    "self time by origin:",
    ...top(byOrigin, wall, 15),
    "self time by function:",
    ...top(byFunction, wall, count),
    "inclusive time by runledger function:",
    ...top(inclusive, wall, count),
  ].join("\n");
}

/** CPU time of a profile outside (idle). */
function busyMicros(profile: CpuProfile): number {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
  return profile.samples.reduce((sum, id, i) => sum + (idle.has(id) ? 0 : (profile.timeDeltas[i] ?? 0)), 0);
}

/** The main thread's profile among a process's files: the busiest one (tsx's loader thread writes one too, mostly idle). */
export function mainProfile(dir: string): string | null {
  if (!fs.existsSync(dir)) return null;
  let best: { file: string; busy: number } | null = null;
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
    const busy = busyMicros(readProfile(path.join(dir, f)));
    if (!best || busy > best.busy) best = { file: path.join(dir, f), busy };
  }
  return best?.file ?? null;
}

/**
 * Summarizes the profiles of these scenarios' processes: each one's main-thread profile (the busiest of its threads'
 * files; the others are tsx's module loader) into <name>/summary.txt.
 */
export function summarizeProfiles(scenarios: string[]): string {
  const summaries: string[] = [];
  const names = fs.existsSync(PROFILE_DIR) ? fs.readdirSync(PROFILE_DIR).filter((d) => scenarios.some((s) => d.startsWith(`${s}-`))) : [];
  for (const name of names) {
    const dir = path.join(PROFILE_DIR, name);
    const busiest = mainProfile(dir);
    if (!busiest) continue;
    const summary = `${name}\n${summarizeProfile(busiest)}`;
    fs.writeFileSync(path.join(dir, "summary.txt"), summary + "\n");
    summaries.push(summary);
  }
  return summaries.length ? summaries.join("\n\n") : "no profiles";
}
