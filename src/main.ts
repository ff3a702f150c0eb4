// Start-up: configuration → database (created and migrated) → recovery → server.
import { ConfigError, loadConfig } from "./config.ts";
import { createLogger } from "./logger.ts";
import { startApp } from "./app.ts";

let config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`runledger: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}

const logger = createLogger(config.logLevel);
const app = await startApp(config, logger);
logger.info("runledger listening", { url: `${app.url}/graphql`, database: config.databasePath, ollama: config.ollamaHost, model: config.ollamaModel });

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
  app.close().then(
    () => process.exit(0),
    (error) => {
      logger.error("shutdown failed", { error });
      process.exit(1);
    },
  );
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
