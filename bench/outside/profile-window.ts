// Where a process's CPU went within a window of time: the V8 profile that
// --cpu-prof writes is stamped in microseconds of CLOCK_MONOTONIC, the clock the
// client's monoMs() reads, so the samples of one batch's run start can be cut
// out of a profile that covers the whole benchmark.
import fs from "node:fs";
import path from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The main thread's profile among a process's files: the one with the most CPU time (tsx's loader thread writes one too, mostly idle). */
export function mainProfile(dir: string): string | null {
  if (!fs.existsSync(dir)) return null;
  let best: { file: string; busy: number } | null = null;
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
    const p = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as CpuProfile;
    const idle = new Set(p.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
    const busy = p.samples.reduce((sum, id, i) => sum + (idle.has(id) ? 0 : (p.timeDeltas[i] ?? 0)), 0);
    if (!best || busy > best.busy) best = { file: path.join(dir, f), busy };
  }
  return best?.file ?? null;
}

/** npm package, a file of the project, Node's internals, or V8 itself. */
function origin(url: string, root: string): string {
  if (!url) return "(native / V8)";
  if (url.startsWith("node:")) return "node: internals";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const file = url.replace(/^file:\/\//, "");
  return file.startsWith(root) ? path.relative(root, file).split("/").slice(0, 3).join("/") : file;
}

/** A script's location without the machine's folders: from node_modules/ on, or relative to the project. */
function shortUrl(url: string, root: string): string {
  const file = url.replace(/^file:\/\//, "");
  const at = file.lastIndexOf("node_modules/");
  if (at >= 0) return file.slice(at + "node_modules/".length);
  return file.startsWith(root) ? path.relative(root, file) : file;
}

function table(map: Map<string, number>, busy: number, count: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => `  ${((us / busy) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(1).padStart(7)} ms  ${name}`);
}

/** Self time by module and by function for the samples between fromMs and toMs (monotonic ms). */
export function summarizeWindow(file: string, fromMs: number, toMs: number, root: string, count = 20): string {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  // Node's internals and V8's native code charged to the nearest package or project frame that called them
  // (a socket's writev to the library that sent the frame), so the table says whose work it was.
  const byCaller = new Map<string, number>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const caller = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { url } = byId.get(at)!.callFrame;
      const o = origin(url, root);
      if (o !== "(native / V8)" && o !== "node: internals") return o;
    }
    return origin(byId.get(id)!.callFrame.url, root);
  };
  const from = fromMs * 1000;
  const to = toMs * 1000;
  let t = profile.startTime;
  let busy = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t < from || t > to) return;
    // A sample's weight is the time until the next one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === "(idle)") {
      idle += us;
      return;
    }
    busy += us;
    if (functionName === "(program)" || functionName === "(garbage collector)") {
      byOrigin.set(functionName, (byOrigin.get(functionName) ?? 0) + us);
      byFunction.set(functionName, (byFunction.get(functionName) ?? 0) + us);
      byCaller.set(functionName, (byCaller.get(functionName) ?? 0) + us);
      return;
    }
    byCaller.set(caller(id), (byCaller.get(caller(id)) ?? 0) + us);
    const where = url ? ` ${shortUrl(url, root)}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"}${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byOrigin.set(origin(url, root), (byOrigin.get(origin(url, root)) ?? 0) + us);
  });
  return [
    `${path.basename(file)}, window of ${(toMs - fromMs).toFixed(0)} ms: ${(busy / 1000).toFixed(0)} ms on the CPU, ${(idle / 1000).toFixed(0)} ms idle (main thread; % of CPU time)`,
    "self time by module:",
    ...table(byOrigin, busy, 15),
    "by module, Node internals and native code charged to the package or project file that called them:",
    ...table(byCaller, busy, 15),
    "self time by function:",
    ...table(byFunction, busy, count),
  ].join("\n");
}

// node --import tsx bench/outside/profile-window.ts [dir]: summarizes a profiled run again from the window.json beside it.
if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join("bench", "outside", "profile-window.ts"))) {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
  const dir = process.argv[2] ?? path.join(root, "bench", "results", "profiles", "outside-runledger");
  const window = JSON.parse(fs.readFileSync(path.join(dir, "window.json"), "utf8")) as { from: number; to: number; end: number };
  const file = mainProfile(dir);
  if (!file) throw new Error(`no profile in ${dir}`);
  process.stdout.write(`${summarizeWindow(file, window.from, window.to, root)}\n\nthe whole batch:\n${summarizeWindow(file, window.from, window.end, root, 10)}\n`);
}
