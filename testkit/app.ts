// Starting runledger for a test in this process (startTestApp), on its own
// temporary database file; child processes are testkit/processes.ts's.
import net from "node:net";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startApp, type App } from "../src/app.ts";
import { afterAll } from "vitest";
import { gqlOk } from "./graphql.ts";
import { RUN } from "./documents.ts";
import { killLeftovers, startServerProcess, tempDatabaseUrl } from "./processes.ts";

// Specs and the conformance suites import these from here too.
export { ROOT, tempDatabaseUrl } from "./processes.ts";

export interface TestAppOptions {
  ollamaUrl: string;
  databaseUrl?: string;
  env?: Record<string, string>;
}

/**
 * The fake model serves any number of chats at once, unlike Ollama (whose
 * default MODEL_CONCURRENCY suits): specs that start many runs together mean
 * them to execute together. The admission specs set their own.
 */
export const FAKE_MODEL_CAPACITY = { MODEL_CONCURRENCY: "1000" };

export async function startTestApp(options: TestAppOptions): Promise<App & { databaseFile: string }> {
  const databaseUrl = options.databaseUrl ?? tempDatabaseUrl().url;
  const config = loadConfig({
    PORT: "0",
    DATABASE_URL: databaseUrl,
    OLLAMA_HOST: options.ollamaUrl,
    LOG_LEVEL: "silent",
    ...FAKE_MODEL_CAPACITY,
    ...options.env,
  });
  const app = await startApp(config, createLogger(config.logLevel));
  return Object.assign(app, { databaseFile: config.databasePath });
}

/** For tests that start server processes: a child process starts slowly on a busy machine; the work itself takes seconds. */
export const PROCESS_TEST_TIMEOUT_MS = 90_000;

/**
 * startServerProcess for one spec file: every child process still running
 * after the file's tests is killed (SIGKILL), whatever they did.
 */
export function trackedServerProcesses(): typeof startServerProcess {
  afterAll(killLeftovers);
  return startServerProcess;
}

const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED", "INTERRUPTED", "WAITING"]);

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
