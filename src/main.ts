// Start-up: configuration → storage (created and migrated) → recovery → server.
// A bad setting, or a database or Redis that cannot be reached, stops it with one
// line naming the variable (exit code 2).
//
// With WORKERS above 1 (the default on a machine with several cores) this
// process is a cluster's primary (src/cluster/primary.ts): it migrates the
// database and starts WORKERS workers, each of which runs this file again and
// serves as below, sharing the port. With WORKERS=1 it serves itself.
import cluster from "node:cluster";
import v8 from "node:v8";
import { ConfigError, describeDatabase, loadConfig, type Config } from "./config.ts";
import { createLogger, type Logger } from "./logger.ts";
import { runPrimary, WorkerStartError } from "./cluster/primary.ts";
import { joinCluster } from "./cluster/worker.ts";

function refuse(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`runledger: ${error.message.replace(/\s*\n\s*/g, " ")}\n`);
    process.exit(2);
  }
  // The worker said why on stderr; its exit code is the cluster's.
  if (error instanceof WorkerStartError) process.exit(error.exitCode);
  throw error;
}

let config;
try {
  config = loadConfig();
} catch (error) {
  refuse(error);
}

// Before the heap grows: a growing factor V8 reads at each full collection (config.ts, HEAP_GROWING_PERCENT).
if (config.heapGrowingPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`);
if (config.workers > 1 && cluster.isPrimary) await runPrimary(config, createLogger(config.logLevel)).catch(refuse);
else await serve(config);

async function serve(config: Config): Promise<void> {
  const worker = joinCluster(createLogger(config.logLevel));
  const logger = worker ? tagged(createLogger(config.logLevel), { worker: worker.id }) : createLogger(config.logLevel);
  // Loaded here, not above: a cluster's primary never needs the server's modules.
  const [{ modelProbe, startApp }, { reportModelAtStartup }, { DEFAULT_AGENT }] = await Promise.all([
    import("./app.ts"),
    import("./server/readiness.ts"),
    import("./agent/definitions.ts"),
  ]);
  // Before the app: spans need the SDK registered when the first request comes.
  const tracing = config.observability.tracing ? await (await import("./telemetry/tracing.ts")).startTracing() : null;
  const app = await startApp(config, logger, { clusterBus: worker?.port }).catch(refuse);
  if (worker) app.metrics.collectWith(worker.serveMetrics(() => app.metrics.json()));
  const agents = app.services.agent.agents().map(({ definition }) => ({ name: definition.name, type: definition.type, model: definition.model }));
  const fields = {
    console: `${app.url}/console`,
    database: describeDatabase(config),
    events: config.redisUrl ? "redis" : "memory",
    ollama: config.ollamaHost,
    // The model a run gets when it names no agent: the default agent's, which its file may set.
    model: (agents.find((a) => a.name === DEFAULT_AGENT) ?? agents[0])?.model ?? config.ollamaModel,
    agents,
    tracing: config.observability.tracing ? "otlp" : "off",
    langsmith: config.observability.langsmith,
    ...(app.metricsUrl ? { metrics: `${app.metricsUrl}/metrics` } : {}),
  };
  // Before the line that says it listens: a supervisor may signal as soon as it reads it.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info("shutting down", { signal });
    const force = setTimeout(
      () => {
        logger.error("shutdown took too long; exiting");
        process.exit(1);
      },
      config.shutdownTimeoutMs * (worker ? 2 : 1) + 5_000,
    );
    force.unref();
    (async () => {
      await app.drain();
      // In a cluster, the others' runs too: a subscriber here may follow one, and gets its last event before this worker closes.
      await worker?.drained(config.shutdownTimeoutMs);
      await app.close();
      // The spans of the last runs are exported before the process goes.
      await tracing?.shutdown();
    })().then(
      () => process.exit(0),
      (error) => {
        logger.error("shutdown failed", { error });
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));

  // Once, after listening and without delaying it: an Ollama that cannot serve the
  // model is said now rather than at the first run's failure. In a cluster, by one
  // worker, once the primary has said that the cluster listens.
  const reportModel = () => void reportModelAtStartup(modelProbe(config, app.services.agent), logger);
  if (worker) {
    logger.info("worker listening", { pid: process.pid });
    worker.onReportModel(reportModel);
    worker.listening(`${app.url}/graphql`, fields);
  } else {
    // The process a supervisor signals (SIGTERM, SIGINT) to stop it gracefully.
    logger.info("runledger listening", { url: `${app.url}/graphql`, ...fields, pid: process.pid });
    reportModel();
  }
}

/** A logger whose every line names this worker. */
function tagged(logger: Logger, tag: Record<string, unknown>): Logger {
  return {
    debug: (msg, fields) => logger.debug(msg, { ...tag, ...fields }),
    info: (msg, fields) => logger.info(msg, { ...tag, ...fields }),
    warn: (msg, fields) => logger.warn(msg, { ...tag, ...fields }),
    error: (msg, fields) => logger.error(msg, { ...tag, ...fields }),
  };
}
