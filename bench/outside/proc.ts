// CPU time and resident memory of a server's whole process tree, from /proc.
// runledger is one process (a primary and its workers with WORKERS > 1); `langgraph dev` is a launcher, the tsx launcher it
// spawns, the API server under that and tsx's esbuild service, so both are
// read the same way: the process and every descendant, summed.
import fs from "node:fs";

/** USER_HZ: 100 on every Linux build Node supports. */
const TICKS_PER_SECOND = 100;

interface Stat {
  pid: number;
  ppid: number;
  /** utime + stime, in clock ticks. */
  ticks: number;
  name: string;
}

function readStat(pid: number): Stat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null; // gone
  }
  // The command name is in parentheses and may contain spaces.
  const close = text.lastIndexOf(")");
  const name = text.slice(text.indexOf("(") + 1, close);
  const fields = text.slice(close + 2).split(" ");
  return { pid, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), name };
}

/** The process and all its descendants, as they are now. */
export function processTree(root: number): Stat[] {
  const all: Stat[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const s = readStat(Number(entry));
    if (s) all.push(s);
  }
  const children = new Map<number, Stat[]>();
  for (const s of all) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const rootStat = all.find((s) => s.pid === root);
  if (!rootStat) return [];
  const out: Stat[] = [];
  const queue = [rootStat];
  while (queue.length) {
    const s = queue.shift()!;
    out.push(s);
    queue.push(...(children.get(s.pid) ?? []));
  }
  return out;
}

/** CPU time (user + system) the tree has used so far, in ms; 10 ms resolution per process. */
export function treeCpuMs(root: number): number {
  return (processTree(root).reduce((sum, s) => sum + s.ticks, 0) * 1000) / TICKS_PER_SECOND;
}

export function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export interface TreeRss {
  total: number;
  /** Each process's share, largest first, for the notes. */
  parts: { pid: number; name: string; bytes: number }[];
}

export function treeRss(root: number): TreeRss {
  const parts = processTree(root)
    .map((s) => ({ pid: s.pid, name: s.name, bytes: rssBytes(s.pid) }))
    .sort((a, b) => b.bytes - a.bytes);
  return { total: parts.reduce((sum, p) => sum + p.bytes, 0), parts };
}

export const MiB = 2 ** 20;
