// runledger for a scenario, through the process harness the specs use
// (testkit/processes.ts): src/main.ts on a fresh temporary database
// (removed on stop) unless a file or a PostgreSQL URL is given, its CPU profile in
// bench/results/profiles/<name>, and, for the scenarios that read the server's
// own instruments, probe.ts loaded ahead of it and asked over IPC.
import path from "node:path";
import { startServerProcess, tempDatabaseUrl, type ServerProcess } from "../../testkit/processes.ts";
import { PROFILE_DIR } from "./profile.ts";
import type { ProbeRequest, LoopDelay } from "./probe.ts";

export type { LoopDelay };

/** A benchmark child still running this long after SIGTERM is killed: a stuck server must not hang the run. */
export const KILL_AFTER_MS = 20_000;

export interface RunledgerProcess extends ServerProcess {
  databaseFile: string;
}

export async function startRunledger(options: {
  modelUrl: string;
  env?: Record<string, string>;
  databaseFile?: string;
  /** A PostgreSQL URL instead of a SQLite file; databaseFile is then empty. */
  databaseUrl?: string;
  /** Write V8 CPU profiles into bench/results/profiles/<cpuProfile>. */
  cpuProfile?: string;
  /** Load probe.ts, for ask(). */
  probe?: boolean;
  exposeGc?: boolean;
}): Promise<RunledgerProcess> {
  const database = options.databaseFile || options.databaseUrl ? null : tempDatabaseUrl("runledger-bench-");
  const databaseFile = options.databaseUrl ? "" : (options.databaseFile ?? database!.file);
  let server: ServerProcess;
  try {
    server = await startServerProcess(
      // The fake model serves any number of chats at once, and the instance admits every run at once
      // however late its loop runs: the scenarios measure the relay, not a queue.
      {
        HOST: "127.0.0.1",
        DATABASE_URL: options.databaseUrl ?? `file:${databaseFile}`,
        OLLAMA_HOST: options.modelUrl,
        MODEL_CONCURRENCY: "10000",
        MAX_ACTIVE_RUNS: "10000",
        ADMISSION_LOOP_DELAY_MS: "0",
        // The default layout (WORKERS unset: the machine's cores) unless this run's environment sets WORKERS.
        WORKERS: process.env.WORKERS ?? "",
        ...options.env,
      },
      {
        cpuProfileDir: options.cpuProfile ? path.join(PROFILE_DIR, options.cpuProfile) : undefined,
        probe: options.probe ? "bench/lib/probe.ts" : undefined,
        exposeGc: options.exposeGc,
        killAfterMs: KILL_AFTER_MS,
      },
    );
  } catch (error) {
    database?.remove();
    throw error;
  }
  const stopServer = server.stop;
  return Object.assign(server, {
    databaseFile,
    async stop(signal?: NodeJS.Signals) {
      const code = await stopServer(signal);
      database?.remove();
      return code;
    },
  });
}

/** Sends one request to the probe and resolves with the next message the server sends back. */
export function ask<T>(server: ServerProcess, request: ProbeRequest): Promise<T> {
  return new Promise((resolve) => {
    server.child.once("message", (reply) => resolve(reply as T));
    server.child.send(request);
  });
}
