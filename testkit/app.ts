// Starting runledger for a test in this process (startTestApp), on its own
// temporary database file; child processes are testkit/processes.ts's.
import net from "node:net";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startApp, type App } from "../src/app.ts";
import { ClusterRelay } from "../src/storage/event-bus/cluster-relay.ts";
import { messagePortBus, type BusPort } from "../src/storage/event-bus/cluster-protocol.ts";
import { MessageChannel } from "node:worker_threads";
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
  /** A cluster worker's channel to its primary's relay (testCluster()): events go to the other workers through it. */
  clusterBus?: BusPort;
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
  const app = await startApp(config, createLogger(config.logLevel), { clusterBus: options.clusterBus });
  return Object.assign(app, { databaseFile: config.databasePath });
}

/**
 * A cluster's event path in this process: the primary's relay, and a channel to
 * it for each app started with `join()` as its clusterBus, as a cluster's
 * workers have (MessageChannels in place of IPC channels).
 */
export function testCluster(): { join(): BusPort; close(): void } {
  const relay = new ClusterRelay();
  const channels: MessageChannel[] = [];
  return {
    join() {
      const channel = new MessageChannel();
      channels.push(channel);
      relay.attach(messagePortBus(channel.port2));
      return messagePortBus(channel.port1);
    },
    close() {
      relay.close();
      for (const { port1, port2 } of channels) {
        port1.close();
        port2.close();
      }
    },
  };
}

/** For tests that start server processes: a child process starts slowly on a busy machine; the work itself takes seconds. */
export const PROCESS_TEST_TIMEOUT_MS = 90_000;

/**
 * startServerProcess for one spec file: every child process still running
 * after the file's tests is killed (SIGKILL), whatever they did.
 */
export function trackedServerProcesses(defaults: Record<string, string> = {}): typeof startServerProcess {
  afterAll(killLeftovers);
  return (env, options) => startServerProcess({ ...defaults, ...env }, options);
}

/**
 * The default layout on a machine with several cores (WORKERS > 1): a primary
 * and two workers whatever this machine's cores. Specs of crashes and restarts
 * run their servers so; the others run one process (startServerProcess).
 */
export const CLUSTER_ENV = { WORKERS: "2" } as const;

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
