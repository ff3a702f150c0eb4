// Starting runledger for a test: in this process (startTestApp) or as a real
// child process (startServerProcess), each on its own temporary database file.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { startApp, type App } from "../../src/app.ts";
import { afterAll } from "vitest";
import { gqlOk, RUN } from "./graphql.ts";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export function tempDatabaseUrl(prefix = "runledger-test-"): { dir: string; url: string; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const file = path.join(dir, "runledger.db");
  return { dir, url: `file:${file}`, file };
}

export interface TestAppOptions {
  ollamaUrl: string;
  databaseUrl?: string;
  env?: Record<string, string>;
}

export async function startTestApp(options: TestAppOptions): Promise<App & { databaseFile: string }> {
  const databaseUrl = options.databaseUrl ?? tempDatabaseUrl().url;
  const config = loadConfig({ PORT: "0", DATABASE_URL: databaseUrl, OLLAMA_HOST: options.ollamaUrl, LOG_LEVEL: "silent", ...options.env });
  const app = await startApp(config, createLogger(config.logLevel));
  return Object.assign(app, { databaseFile: config.databasePath });
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `src/main.ts` as a child process (as `npm start` does) and waits until it listens. */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    // Generous: a busy machine can take long to start a TypeScript process. On
    // timeout the child is killed, so a failed start never leaves a server behind.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not start:\n${output}`));
    }, 60_000);
    const onData = () => {
      const m = /"msg":"runledger listening","url":"(http:\/\/[^"]+)\/graphql"/.exec(output);
      if (m) {
        clearTimeout(timer);
        child.stderr!.off("data", onData);
        resolve(m[1]!);
      }
    };
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    exited,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** For tests that start server processes: a child process starts slowly on a busy machine; the work itself takes seconds. */
export const PROCESS_TEST_TIMEOUT_MS = 90_000;

/**
 * startServerProcess for one spec file: every process it started and that is
 * still running is killed (SIGKILL) after the file's tests, whatever they did.
 */
export function trackedServerProcesses(): (env: Record<string, string>) => Promise<ServerProcess> {
  const started: ServerProcess[] = [];
  afterAll(async () => {
    for (const server of started) await server.stop("SIGKILL");
  });
  return async (env) => {
    const server = await startServerProcess(env);
    started.push(server);
    return server;
  };
}

const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED", "INTERRUPTED"]);

/** Polls the API until the run is terminal. */
export async function waitForRun(url: string, runId: string, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { run } = await gqlOk(url, RUN, { id: runId });
    if (run && TERMINAL.has(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run?.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A port nothing listens on: bound, then released (an unreachable model server). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
