// Child processes for the specs and the benchmark: runledger started as
// `npm start` starts it (src/main.ts under tsx), ready once it logs that it
// listens, and helper servers (the fake Ollama, the benchmark's floor relay)
// that print {"url": ...} on stdout once they listen. Every child is kept in a
// list until it exits, so whatever a spec file or a benchmark run leaves
// running is killed: killLeftovers() after a file's tests, and at exit always.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** A fresh database file in a temporary folder of its own. */
export function tempDatabaseUrl(prefix = "runledger-test-"): { dir: string; url: string; file: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const file = path.join(dir, "runledger.db");
  return { dir, url: `file:${file}`, file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export interface ChildOptions {
  env?: Record<string, string>;
  /** A module (path from the repository root) loaded before the entry (--import); the child gets an IPC channel for it to answer on. */
  probe?: string;
  /** Start Node with --expose-gc, so the process can be asked to collect before a memory reading. */
  exposeGc?: boolean;
  /** Write V8 CPU profiles into this folder, emptied first, when the process exits (one file per thread: tsx runs its loader in a worker). */
  cpuProfileDir?: string;
  /** After stop()'s signal, SIGKILL the process if it still runs this long after. */
  killAfterMs?: number;
}

export interface Child {
  child: ChildProcess;
  pid: number;
  /** Everything it wrote so far, stdout and stderr together. */
  output(): string;
  /** Resolves with the exit code (null when a signal ended it). */
  exited: Promise<number | null>;
  /** Sends the signal (SIGTERM unless told) if the process still runs; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** CPU time (user + system) used so far, in ms, from /proc/<pid>/stat (10 ms resolution): the process's and its children's (a cluster's workers). */
  cpuMs(): number;
  /** Resident set size in bytes, from /proc/<pid>/status. */
  rssBytes(): number;
  /** The resident set size of the process and of each process below it (a cluster's primary, then its workers), in bytes. */
  rssBytesEach(): number[];
}

const live = new Set<ChildProcess>();
// A harness that dies must not leave servers behind.
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/** Kills (SIGKILL) every child started here that still runs, and waits until they have exited. */
export async function killLeftovers(): Promise<void> {
  await Promise.all(
    [...live].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.kill("SIGKILL");
        }),
    ),
  );
}

/**
 * Node's arguments that start the server: the build this test run made
 * (test/setup/server-build.ts) when there is one, else src/main.ts under tsx.
 * A build whose agents file (RUNLEDGER_CONFIG in `env`) names a TypeScript
 * graph module runs with tsx's loader, as `npm start` would: the build itself
 * is plain JavaScript, the module is not.
 */
export function serverCommand(env: Record<string, string | undefined> = {}): string[] {
  const built = process.env.RUNLEDGER_TEST_SERVER_BUILD;
  if (!built) return ["--import", "tsx", "src/main.ts"];
  const agents = env.RUNLEDGER_CONFIG ?? process.env.RUNLEDGER_CONFIG;
  const typescriptModules = agents !== undefined && fs.existsSync(agents) && /\.[cm]?tsx?"/.test(fs.readFileSync(agents, "utf8"));
  return typescriptModules ? ["--import", "tsx", built] : [built];
}

/** Starts a TypeScript entry point of this repository (path from the root) under Node with tsx; src/main.ts as its build when this run has one, unless a probe is loaded. */
export function spawnTs(entry: string, options: ChildOptions = {}): Child {
  const fromBuild = entry === "src/main.ts" && !options.probe && process.env.RUNLEDGER_TEST_SERVER_BUILD !== undefined;
  const nodeArgs = fromBuild ? [] : ["--import", "tsx"];
  if (options.probe) nodeArgs.push("--import", pathToFileURL(path.join(ROOT, options.probe)).href);
  if (options.exposeGc) nodeArgs.push("--expose-gc");
  if (options.cpuProfileDir) {
    fs.rmSync(options.cpuProfileDir, { recursive: true, force: true });
    fs.mkdirSync(options.cpuProfileDir, { recursive: true });
    nodeArgs.push("--cpu-prof", "--cpu-prof-dir", options.cpuProfileDir);
  }
  const child = spawn(process.execPath, [...nodeArgs, ...(fromBuild ? serverCommand(options.env) : [entry])], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: options.probe ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      live.delete(child);
      resolve(code);
    }),
  );
  const pid = child.pid!;
  return {
    child,
    pid,
    output: () => output,
    exited,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = options.killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), options.killAfterMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    cpuMs: () => [pid, ...descendants(pid)].reduce((sum, p) => sum + cpuMs(p), 0),
    rssBytes: () => rssBytes(pid),
    rssBytesEach: () =>
      [pid, ...descendants(pid)].flatMap((p) => {
        try {
          return [rssBytes(p)];
        } catch {
          return []; // gone meanwhile
        }
      }),
  };
}

/**
 * Resolves with what `ready` finds in the output as it grows. Rejects if the
 * child exits first, or after the timeout (generous: a busy machine can take
 * long to start a TypeScript process), killing it then, so that a failed start
 * never leaves a process behind.
 */
function waitForOutput<T>(proc: Child, ready: (output: string) => T | undefined, what: string, timeoutMs = 60_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.child.kill("SIGKILL");
      reject(new Error(`no ${what} within ${timeoutMs} ms:\n${proc.output()}`));
    }, timeoutMs);
    const onData = () => {
      const value = ready(proc.output());
      if (value === undefined) return;
      clearTimeout(timer);
      proc.child.stdout!.off("data", onData);
      proc.child.stderr!.off("data", onData);
      resolve(value);
    };
    proc.child.stdout!.on("data", onData);
    proc.child.stderr!.on("data", onData);
    void proc.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before its ${what}:\n${proc.output()}`));
    });
  });
}

export interface ServerProcess extends Child {
  url: string;
}

const LISTENING = /"msg":"runledger listening","url":"(http:\/\/[^"]+)\/graphql"/;

/** Starts runledger (its build, or src/main.ts under tsx: serverCommand) and waits until it logs that it listens (on a port of its own choosing unless env sets PORT). */
export async function startServerProcess(env: Record<string, string>, options: Omit<ChildOptions, "env"> = {}): Promise<ServerProcess> {
  // As startTestApp: the fake model serves any number of chats at once (testkit/app.ts, FAKE_MODEL_CAPACITY).
  // One process unless the spec asks for workers (WORKERS; CLUSTER_ENV in testkit/app.ts): a spec that
  // reads the server's pid or counts its log lines means that process, and a cluster's three
  // processes cost a 2-core machine more than the suite can spend on every server.
  const server = spawnTs("src/main.ts", { ...options, env: { PORT: "0", LOG_LEVEL: "info", MODEL_CONCURRENCY: "1000", WORKERS: "1", ...env } });
  const url = await waitForOutput(server, (output) => LISTENING.exec(output)?.[1], '"runledger listening" line');
  return Object.assign(server, { url });
}

/** Starts an entry point that prints {"url": ...} on stdout once it listens. */
export async function startUrlProcess(entry: string, options: ChildOptions = {}): Promise<Child & { url: string }> {
  const child = spawnTs(entry, options);
  const url = await waitForOutput(child, (output) => /^\{"url":"([^"]+)"\}$/m.exec(output)?.[1], '{"url": ...} line');
  return Object.assign(child, { url });
}

/** The fake Ollama in a process of its own (fake-ollama-main.ts), steered by the plans in its requests. */
export function startFakeOllamaProcess(options: ChildOptions = {}): Promise<Child & { url: string }> {
  return startUrlProcess("testkit/fake-ollama-main.ts", options);
}

/** Resident set size of a process, in bytes (Linux: VmRSS in /proc/<pid>/status). */
function rssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** The processes below `pid` now, children first (a cluster's workers; their own children too). */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (let i = -1; i < found.length; i++) found.push(...(parents.get(i < 0 ? pid : found[i]!) ?? []));
  return found;
}

/** CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat (0 once it is gone). */
function cpuMs(pid: number): number {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return 0;
  }
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: 100 on every Linux build Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;
