// Where a process's CPU went within a window of time: the V8 profile that
// --cpu-prof writes is stamped in microseconds of CLOCK_MONOTONIC, the clock the
// client reads (nowMs() in testkit/clock.ts), so the samples of one
// batch's run start can be cut out of a profile that covers the whole benchmark.
import fs from "node:fs";
import path from "node:path";
import { ROOT } from "../../testkit/processes.ts";
import { mainProfile, origin, readProfile, top } from "../lib/profile.ts";

/** A script's location without the machine's folders: from node_modules/ on, or relative to the project. */
function shortUrl(url: string): string {
  const file = url.replace(/^file:\/\//, "");
  const at = file.lastIndexOf("node_modules/");
  if (at >= 0) return file.slice(at + "node_modules/".length);
  return file.startsWith(ROOT) ? path.relative(ROOT, file) : file;
}

/** Self time by module and by function for the samples between fromMs and toMs (monotonic ms). */
export function summarizeWindow(file: string, fromMs: number, toMs: number, count = 20): string {
  const profile = readProfile(file);
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
      const o = origin(url, 3);
      if (o !== "(native / V8)" && o !== "node: internals") return o;
    }
    return origin(byId.get(id)!.callFrame.url, 3);
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
    const where = url ? ` ${shortUrl(url)}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"}${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byOrigin.set(origin(url, 3), (byOrigin.get(origin(url, 3)) ?? 0) + us);
  });
  return [
    `${path.basename(file)}, window of ${(toMs - fromMs).toFixed(0)} ms: ${(busy / 1000).toFixed(0)} ms on the CPU, ${(idle / 1000).toFixed(0)} ms idle (main thread; % of CPU time)`,
    "self time by module:",
    ...top(byOrigin, busy, 15, 1),
    "by module, Node internals and native code charged to the package or project file that called them:",
    ...top(byCaller, busy, 15, 1),
    "self time by function:",
    ...top(byFunction, busy, count, 1),
  ].join("\n");
}

// node --import tsx bench/outside/profile-window.ts [dir]: summarizes a profiled run again from the window.json beside it.
if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join("bench", "outside", "profile-window.ts"))) {
  const dir = process.argv[2] ?? path.join(ROOT, "bench", "results", "profiles", "outside-runledger");
  const window = JSON.parse(fs.readFileSync(path.join(dir, "window.json"), "utf8")) as { from: number; to: number; end: number };
  const file = mainProfile(dir);
  if (!file) throw new Error(`no profile in ${dir}`);
  process.stdout.write(`${summarizeWindow(file, window.from, window.to)}\n\nthe whole batch:\n${summarizeWindow(file, window.from, window.end, 10)}\n`);
}
