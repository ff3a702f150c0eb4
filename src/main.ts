// Start-up: configuration → storage (created and migrated) → recovery → server.
// A bad setting, or a database or Redis that cannot be reached, stops it with one
// line naming the variable (exit code 2).
import v8 from "node:v8";
import { ConfigError, describeDatabase, loadConfig } from "./config.ts";
import { createLogger } from "./logger.ts";
import { modelProbe, startApp } from "./app.ts";
import { reportModelAtStartup } from "./server/readiness.ts";
import { DEFAULT_AGENT } from "./agent/definitions.ts";
import { startTracing } from "./telemetry/tracing.ts";

function refuse(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`runledger: ${error.message.replace(/\s*\n\s*/g, " ")}\n`);
    process.exit(2);
  }
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
const logger = createLogger(config.logLevel);
// Before the app: spans need the SDK registered when the first request comes.
const tracing = config.observability.tracing ? await startTracing() : null;
const app = await startApp(config, logger).catch(refuse);
const agents = app.services.agent.agents().map(({ definition }) => ({ name: definition.name, type: definition.type, model: definition.model }));
logger.info("runledger listening", {
  url: `${app.url}/graphql`,
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
  // The process a supervisor signals (SIGTERM, SIGINT) to stop it gracefully.
  pid: process.pid,
});
// Once, after listening and without delaying it: an Ollama that cannot serve the
// model is said now rather than at the first run's failure.
void reportModelAtStartup(modelProbe(config, app.services.agent), logger);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  logger.info("shutting down", { signal });
  const force = setTimeout(() => {
    logger.error("shutdown took too long; exiting");
    process.exit(1);
  }, config.shutdownTimeoutMs + 5_000);
  force.unref();
  app
    .close()
    // The spans of the last runs are exported before the process goes.
    .then(() => tracing?.shutdown())
    .then(
      () => process.exit(0),
      (error) => {
        logger.error("shutdown failed", { error });
        process.exit(1);
      },
    );
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
