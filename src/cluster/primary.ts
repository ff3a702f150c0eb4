// The primary process of a cluster (WORKERS > 1). It serves nothing itself:
// it starts WORKERS workers (full instances:
// HTTP, GraphQL, runs; src/main.ts in each), which share PORT through node's
// cluster (the primary accepts connections and hands them out in turn), relays
// the workers' events to each other when there is no Redis
// (src/storage/event-bus/cluster-relay.ts), sums their metrics for /metrics,
// and restarts a worker that stops unexpectedly. SIGTERM and SIGINT go on to
// every worker; each records its active runs, and once all have, all close, and
// the primary exits 0 after the last. Workers exit at once if the primary dies
// (src/cluster/worker.ts).
import cluster, { type Worker } from "node:cluster";
import fs from "node:fs";
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from "prom-client";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { foldWriteAheadLog } from "../storage/wal.ts";
import { ClusterRelay } from "../storage/event-bus/cluster-relay.ts";
import { processMetricsJson } from "../telemetry/metrics.ts";
import { ipcBusPort, isClusterMessage, sendTo, type ClusterMessage, type IpcEnd } from "./messages.ts";

interface WorkerState {
  worker: Worker;
  /** Which of the WORKERS places it holds; a restart takes the same. */
  slot: number;
  pid: number;
  startedAt: number;
  listening: boolean;
  drained: boolean;
}

/** A worker that stops sooner than this after its start is restarted after a delay, doubling each time (a crash loop). */
const STABLE_AFTER_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;
/** How long the aggregate of /metrics waits for a worker. */
const METRICS_TIMEOUT_MS = 2_000;

/**
 * Runs the primary. Resolves once every worker listens (after the "runledger
 * listening" line); the process then lives until a signal stops it. Rejects
 * (without a worker left) when a worker stops before it listens; the worker's
 * own refusal is on stderr already. The first worker starts alone and migrates
 * the database as a one-process server does; the others start once it listens.
 */
export async function runPrimary(config: Config, logger: Logger): Promise<void> {
  cluster.setupPrimary({ serialization: "advanced" });
  const relay = config.redisUrl ? null : new ClusterRelay();
  const workers = new Map<number, WorkerState>();
  const restartDelays = new Map<number, number>();
  const restartTimers = new Set<NodeJS.Timeout>();
  // "failed": a worker stopped before every one listened; the others are stopping, and runPrimary rejects.
  let phase: "starting" | "serving" | "stopping" | "failed" = "starting";
  let stopSignal: NodeJS.Signals | null = null;
  let graceful = true;
  let started!: () => void;
  let failed!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    started = resolve;
    failed = reject;
  });
  const metricsAsked = new Map<number, { waiting: Set<number>; replies: unknown[][]; done: () => void }>();
  let nextMetrics = 1;

  const fork = (slot: number) => {
    const worker = cluster.fork({ RUNLEDGER_WORKER_SLOT: String(slot) });
    const state: WorkerState = { worker, slot, pid: worker.process.pid ?? 0, startedAt: Date.now(), listening: false, drained: false };
    workers.set(worker.id, state);
    relay?.attach(ipcBusPort(worker as unknown as IpcEnd), worker.id);
    worker.on("message", (message: unknown) => {
      if (isClusterMessage(message)) onMessage(state, message);
    });
    // The channel's errors (a send as it closes) are the exit's to report.
    worker.on("error", () => {});
    worker.on("exit", (code: number | null, signal: string | null) => onExit(state, code, signal as NodeJS.Signals | null));
  };

  const send = (state: WorkerState, message: ClusterMessage) => sendTo(state.worker as unknown as IpcEnd, message);

  const onMessage = (state: WorkerState, message: ClusterMessage) => {
    switch (message.cluster) {
      case "listening":
        state.listening = true;
        // The first worker listens: its start-up found nothing to refuse, so the others start together.
        if (phase === "starting" && workers.size === 1 && config.workers > 1) {
          for (let slot = 1; slot < config.workers; slot++) fork(slot);
          return;
        }
        if (phase === "starting" && [...workers.values()].every((w) => w.listening) && workers.size === config.workers) {
          phase = "serving";
          logger.info("runledger listening", {
            url: message.url,
            ...message.fields,
            events: config.redisUrl ? "redis" : "cluster",
            workers: config.workers,
            // The process a supervisor signals (SIGTERM, SIGINT) to stop every worker gracefully.
            pid: process.pid,
          });
          const first = [...workers.values()].sort((x, y) => x.slot - y.slot)[0]!;
          send(first, { cluster: "report-model" });
          started();
        } else if (phase === "serving") {
          logger.info("worker started again", { worker: state.slot, pid: state.pid });
        }
        return;
      case "drained":
        state.drained = true;
        // Stopped on its own (a signal to its pid): nothing to wait for.
        if (phase !== "stopping") send(state, { cluster: "close" });
        else closeWhenDrained();
        return;
      case "collect":
        void collectMetrics().then(
          (text) => send(state, { cluster: "collected", id: message.id, text }),
          (error: Error) => send(state, { cluster: "collected", id: message.id, text: `# metrics could not be aggregated: ${error.message}\n` }),
        );
        return;
      case "metrics-json": {
        const asked = metricsAsked.get(message.id);
        if (!asked || !asked.waiting.delete(state.worker.id)) return;
        asked.replies.push(message.metrics);
        if (asked.waiting.size === 0) asked.done();
        return;
      }
    }
  };

  const collectMetrics = async (): Promise<string> => {
    const serving = [...workers.values()].filter((w) => w.listening);
    const id = nextMetrics++;
    const replies: unknown[][] = [await processMetricsJson()];
    await new Promise<void>((resolve) => {
      const asked = { waiting: new Set(serving.map((w) => w.worker.id)), replies, done: resolve };
      metricsAsked.set(id, asked);
      // A worker that does not answer in time is left out of this scrape.
      const timer = setTimeout(resolve, METRICS_TIMEOUT_MS);
      asked.done = () => {
        clearTimeout(timer);
        resolve();
      };
      if (asked.waiting.size === 0) asked.done();
      for (const w of serving) send(w, { cluster: "metrics", id });
    });
    metricsAsked.delete(id);
    return AggregatorRegistry.aggregate(replies as MetricObjectWithValues<MetricValue<string>>[][]).metrics();
  };

  const closeWhenDrained = () => {
    if (phase !== "stopping") return;
    const remaining = [...workers.values()];
    if (remaining.length > 0 && remaining.every((w) => w.drained)) for (const w of remaining) send(w, { cluster: "close" });
  };

  const onExit = (state: WorkerState, code: number | null, signal: NodeJS.Signals | null) => {
    workers.delete(state.worker.id);
    relay?.detach(state.worker.id);
    for (const asked of metricsAsked.values()) if (asked.waiting.delete(state.worker.id) && asked.waiting.size === 0) asked.done();
    if (phase === "failed") return;
    if (phase === "starting") {
      // A worker that cannot start (a port in use, a bad agent file) said why on stderr: stop the others and report it.
      phase = "failed";
      for (const w of workers.values()) w.worker.process.kill("SIGTERM");
      failed(new WorkerStartError(state.slot, code, signal));
      return;
    }
    if (phase === "stopping") {
      // Stopped by the signal passed on before it could install its handlers (still starting): it had nothing to record.
      if (code !== 0 && !(code === null && signal === stopSignal)) graceful = false;
      if (workers.size === 0) finish();
      else closeWhenDrained();
      return;
    }
    const delay = Date.now() - state.startedAt < STABLE_AFTER_MS ? Math.min((restartDelays.get(state.slot) ?? 500) * 2, MAX_RESTART_DELAY_MS) : 0;
    restartDelays.set(state.slot, delay);
    logger.warn("a worker stopped; starting another", { worker: state.slot, pid: state.pid, code, signal, restartInMs: delay });
    const timer = setTimeout(() => {
      restartTimers.delete(timer);
      if (phase === "serving") fork(state.slot);
    }, delay);
    restartTimers.add(timer);
  };

  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    relay?.close();
    // Each worker closed its connections; the last to close folds SQLite's WAL into the file.
    // Two closing at the same instant can both leave it: fold it here then.
    if (config.databaseKind === "sqlite" && graceful && fs.existsSync(`${config.databasePath}-wal`)) {
      try {
        foldWriteAheadLog(config);
      } catch (error) {
        logger.warn("the database's write-ahead log was not folded back", { error });
      }
    }
    process.exit(graceful ? 0 : 1);
  };

  const stop = (signal: NodeJS.Signals) => {
    if (phase === "stopping" || phase === "failed") return;
    phase = "stopping";
    stopSignal = signal;
    logger.info("shutting down", { signal, workers: workers.size });
    for (const timer of restartTimers) clearTimeout(timer);
    restartTimers.clear();
    if (workers.size === 0) return finish();
    for (const w of workers.values()) w.worker.process.kill(signal);
    // Each worker gives up after SHUTDOWN_TIMEOUT_MS and a few seconds; past that, nothing is left to wait for.
    const force = setTimeout(
      () => {
        logger.error("workers did not stop in time; killing them", { workers: [...workers.values()].map((w) => w.pid) });
        graceful = false;
        for (const w of workers.values()) w.worker.process.kill("SIGKILL");
      },
      config.shutdownTimeoutMs * 2 + 10_000,
    );
    force.unref();
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));

  // One worker first: a setting only a worker can check (the agents file, Redis, a port in use)
  // is refused once, in its one line, and the others are never started.
  fork(0);
  try {
    await ready;
  } catch (error) {
    // Wait for the others to go, so nothing is left holding the port or the database.
    await new Promise<void>((resolve) => {
      if (workers.size === 0) return resolve();
      cluster.on("exit", () => workers.size === 0 && resolve());
    });
    throw error;
  }
}

export class WorkerStartError extends Error {
  override name = "WorkerStartError";
  readonly exitCode: number;
  constructor(slot: number, code: number | null, signal: NodeJS.Signals | null) {
    super(`worker ${slot} stopped before it listened (${signal ?? `exit code ${code}`})`);
    this.exitCode = code ?? 1;
  }
}
