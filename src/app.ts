// Wires the parts together in order: database (migrated) → stores → recovery →
// services → server; and takes them apart in reverse on close().
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { Config } from "./config.ts";
import type { Logger } from "./logger.ts";
import { openSqlite } from "./db/sqlite.ts";
import { migrate } from "./db/migrate.ts";
import { createPrismaClient } from "./db/prisma.ts";
import { WriteGate } from "./db/write-gate.ts";
import { createSqliteCheckpointer } from "./agent/checkpointer.ts";
import { AgentRuntime } from "./agent/runtime.ts";
import { builtinTools } from "./agent/tools.ts";
import { threadConfig } from "./agent/graph.ts";
import { InMemoryEventBus } from "./events/bus.ts";
import { SqliteRunStore } from "./runs/store-sqlite.ts";
import { RunOwnership } from "./runs/ownership.ts";
import { RunService } from "./runs/service.ts";
import { ConversationService } from "./runs/conversations.ts";
import { startHttpServer, type HttpServer } from "./server.ts";
import { SqliteCheckpointReadModel } from "./read/checkpoints-sqlite.ts";
import { SqliteConversationListReadModel } from "./read/conversation-list-sqlite.ts";
import { exportRoute } from "./http/export.ts";
import { consoleRoute } from "./console/route.ts";
import type { Services } from "./context.ts";

export interface App {
  url: string;
  http: HttpServer;
  services: Services;
  ownership: RunOwnership;
  /** Graceful shutdown: stop accepting, record active runs interrupted, end subscriptions, close the database. */
  close(): Promise<void>;
}

/** What an embedding program (or a test) may put in place of the defaults. */
export interface AppOverrides {
  /** The agent's tools; the built-in ones by default. */
  tools?: StructuredToolInterface[];
}

export async function startApp(config: Config, logger: Logger, overrides: AppOverrides = {}): Promise<App> {
  const sqlite = openSqlite(config.databasePath);
  const { applied } = migrate(sqlite);
  if (applied.length) logger.info("database migrated", { applied, database: config.databasePath });

  // The run store (on this connection) and the checkpointer write the file through two connections: one writer at a time.
  const writeGate = new WriteGate();
  const checkpointer = createSqliteCheckpointer(config.databasePath, writeGate);
  // SqliteSaver creates its tables lazily; create them now so that deleting a
  // conversation (which removes its thread in the same transaction) can rely on them.
  await checkpointer.saver.getTuple(threadConfig("00000000-0000-0000-0000-000000000000"));

  // Prisma reads for the GraphQL types; the run store writes with prepared statements (src/runs/store-sqlite.ts).
  const prisma = createPrismaClient(config.databasePath);
  const store = new SqliteRunStore(sqlite, writeGate);
  const bus = new InMemoryEventBus({
    retention: config.eventRetention,
    graceMs: config.eventGraceMs,
    subscriberQueueLimit: config.subscriberQueueLimit,
  });
  const ownership = new RunOwnership(store, {
    heartbeatMs: config.heartbeatMs,
    leaseMs: config.leaseMs,
    onError: (error) => logger.warn("heartbeat failed", { error }),
  });
  await ownership.register();
  const recovered = await ownership.recover();
  if (recovered.length) logger.info("recovered runs left running by a stopped process", { runs: recovered.map((r) => r.id) });

  const agent = new AgentRuntime({
    checkpointer: checkpointer.saver,
    model: { baseUrl: config.ollamaHost, model: config.ollamaModel, think: config.ollamaThink, idleTimeoutMs: config.modelIdleTimeoutMs },
    tools: overrides.tools ?? builtinTools(),
    systemPrompt: config.systemPrompt,
    recursionLimit: config.recursionLimit,
  });
  const runs = new RunService({ store, bus, agent, ownerId: ownership.id, maxMessageChars: config.maxMessageChars, logger });
  const conversations = new ConversationService(store, bus);
  const checkpointReads = SqliteCheckpointReadModel.open(config.databasePath);
  const conversationList = SqliteConversationListReadModel.open(config.databasePath);
  const services: Services = { prisma, store, bus, agent, runs, conversations, checkpointReads, conversationList };

  const http = await startHttpServer({
    config,
    services,
    logger,
    pingDatabase: async () => {
      sqlite.prepare("SELECT 1").get();
    },
    routes: [exportRoute({ store, checkpointReads, states: agent }), consoleRoute({ logger })],
  });
  ownership.start(() => runs.abortRunsEndedElsewhere());

  let closing: Promise<void> | null = null;
  return {
    url: http.url,
    http,
    services,
    ownership,
    close() {
      closing ??= (async () => {
        await runs.shutdown(config.shutdownTimeoutMs);
        bus.close();
        await http.close();
        await ownership.stop();
        await prisma.$disconnect();
        checkpointReads.close();
        conversationList.close();
        checkpointer.close();
        sqlite.close();
      })();
      return closing;
    },
  };
}
