// Child processes of a benchmark: the fake model, runledger itself (src/main.ts,
// as `npm start` runs it), and the small comparison servers. Each gets a fresh
// temporary database and a port picked here, so readiness is a plain GET /health
// (LOG_LEVEL=warn keeps the "listening" line, and its port, out of the output).
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const PROFILE_DIR = path.join(ROOT, "bench", "results", "profiles");

export interface Child {
  child: ChildProcess;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  env?: Record<string, string>;
  /** Write V8 CPU profiles of this process into bench/results/profiles/<name> on exit (one file per thread: tsx runs its loader in a worker). */
  cpuProfile?: string;
  ipc?: boolean;
  /** Start Node with --expose-gc, so the process can be asked to collect before a memory reading. */
  exposeGc?: boolean;
}

const live = new Set<ChildProcess>();
// A harness that dies must not leave servers behind.
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/** Starts a TypeScript entry point of this repository under Node with tsx. */
export function spawnTs(entry: string, options: SpawnOptions = {}): Child {
  const nodeArgs = ["--import", "tsx", ...(options.exposeGc ? ["--expose-gc"] : [])];
  if (options.cpuProfile) {
    const dir = path.join(PROFILE_DIR, options.cpuProfile);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    nodeArgs.push("--cpu-prof", "--cpu-prof-dir", dir);
  }
  const child = spawn(process.execPath, [...nodeArgs, entry], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: options.ipc ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  child.once("exit", () => live.delete(child));
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    child,
    pid: child.pid!,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resolves with the first stdout line that parses as JSON. */
export function firstJsonLine<T>(child: Child, timeoutMs = 20_000): Promise<T> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`no start-up line within ${timeoutMs} ms:\n${child.output()}`)), timeoutMs);
    const onData = (d: Buffer) => {
      buffer += d;
      for (const line of buffer.split("\n").slice(0, -1)) {
        try {
          const value = JSON.parse(line) as T;
          clearTimeout(timer);
          child.child.stdout!.off("data", onData);
          return resolve(value);
        } catch {
          // not the start-up line
        }
      }
    };
    child.child.stdout!.on("data", onData);
    child.child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before starting:\n${child.output()}`));
    });
  });
}

export async function startFakeOllamaProcess(): Promise<Child & { url: string }> {
  const child = spawnTs("test/support/fake-ollama-main.ts");
  const { url } = await firstJsonLine<{ url: string }>(child);
  return Object.assign(child, { url });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function waitForHealth(url: string, child: Child, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.child.exitCode !== null) throw new Error(`server exited with ${child.child.exitCode}:\n${child.output()}`);
    try {
      const response = await fetch(`${url}/health`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server not healthy after ${timeoutMs} ms:\n${child.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function tempDatabase(): { dir: string; file: string; url: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-bench-"));
  const file = path.join(dir, "runledger.db");
  return { dir, file, url: `file:${file}`, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export interface RunledgerProcess extends Child {
  url: string;
  databaseFile: string;
}

/**
 * Starts runledger as `npm start` does (src/main.ts), on a fresh database
 * unless one is given; `entry` swaps in an instrumented start-up that calls the
 * same startApp.
 */
export async function startRunledger(options: {
  modelUrl: string;
  env?: Record<string, string>;
  databaseFile?: string;
  cpuProfile?: string;
  entry?: string;
  exposeGc?: boolean;
}): Promise<RunledgerProcess> {
  const database = options.databaseFile ? null : tempDatabase();
  const databaseFile = options.databaseFile ?? database!.file;
  const port = await freePort();
  const child = spawnTs(options.entry ?? "src/main.ts", {
    cpuProfile: options.cpuProfile,
    ipc: options.entry !== undefined,
    exposeGc: options.exposeGc,
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: `file:${databaseFile}`,
      OLLAMA_HOST: options.modelUrl,
      LOG_LEVEL: "warn",
      ...options.env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  const stopChild = child.stop;
  const stop = async () => {
    await stopChild();
    database?.remove();
  };
  try {
    await waitForHealth(url, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return Object.assign(child, { url, databaseFile, stop });
}

/** Resident set size of a process, in bytes (Linux: VmRSS in /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat (10 ms resolution). */
export function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: 100 on every Linux build Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;
