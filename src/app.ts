// Wires the parts together in order: storage (migrated) → event bus → recovery →
// agent and services → server; and takes them apart in reverse on close().
import type { StructuredToolInterface } from "@langchain/core/tools";
import { ConfigError, describeDatabase, type Config } from "./config.ts";
import type { Logger } from "./logger.ts";
import { openStorage, type Storage } from "./storage/index.ts";
import { MemoryEventBus } from "./storage/event-bus/memory.ts";
import { ClusterEventBus } from "./storage/event-bus/cluster.ts";
import type { BusPort } from "./storage/event-bus/cluster-protocol.ts";
import type { EventBus } from "./storage/event-bus/types.ts";
import { AgentRuntime } from "./agent/runtime.ts";
import { builtinTools } from "./agent/tools.ts";
import { agentDefaultsFrom } from "./agent/definitions.ts";
import { loadAgentDefinitions } from "./agent/agent-file.ts";
import { builtinDefaultAgent } from "./agent/kinds/chat.ts";
import { kindOf, loadAgentGraphs, type AgentDefinition } from "./agent/kinds/index.ts";
import type { McpSupervisor } from "./agent/mcp/index.ts";
import { RunOwnership } from "./runs/ownership.ts";
import { checkClockAgainstDatabase } from "./correlation/index.ts";
import { threadMessageCounts } from "./runs/message-counts.ts";
import { RunService } from "./runs/service.ts";
import { ConversationService } from "./runs/conversations.ts";
import { announceConversationChange } from "./runs/conversation-notices.ts";
import { ScheduleService } from "./schedules/service.ts";
import { ScheduleSweeper } from "./schedules/sweeper.ts";
import { WebhookDeliverer } from "./webhooks/deliverer.ts";
import { requireWebhook, type WebhookPolicy } from "./webhooks/url-guard.ts";
import type { WebhookTarget } from "./domain/records.ts";
import { ValidationError } from "./domain/errors.ts";
import { RetentionSweeper } from "./retention/sweeper.ts";
import { ConversationExpiry } from "./retention/expiry.ts";
import { expiryPolicy } from "./retention/policy.ts";
import { startHttpServer, type HttpServer } from "./server/http.ts";
import { createAuthenticator } from "./server/identity/authenticate.ts";
import { exportRoute } from "./server/routes/export.ts";
import { consoleRoute } from "./server/routes/console.ts";
import { labRoute } from "./server/routes/lab.ts";
import { loadTrustedManifest } from "./server/trusted-manifest.ts";
import type { Services } from "./context.ts";
import { Metrics } from "./telemetry/metrics.ts";
import { timedSeam } from "./telemetry/timed-seam.ts";
import { RunTelemetry } from "./telemetry/run-telemetry.ts";
import { metricsRoute, startMetricsServer, type MetricsServer } from "./server/metrics-route.ts";

export interface App {
  url: string;
  http: HttpServer;
  services: Services;
  storage: Storage;
  ownership: RunOwnership;
  /** This instance's Prometheus metrics (GET /metrics); a run queue reports its depth through setQueuedRunsSource. */
  metrics: Metrics;
  /** METRICS_PORT's server's URL, when /metrics is served there. */
  metricsUrl: string | undefined;
  /** Shutdown's first step: refuse new runs, record the active ones interrupted (their subscribers get that event). */
  drain(): Promise<void>;
  /** Graceful shutdown: drain(), then end subscriptions and close the server, the bus and the database. */
  close(): Promise<void>;
}

/** What an embedding program (or a test) may put in place of the defaults. */
export interface AppOverrides {
  /** The agent's tools; the built-in ones by default. */
  tools?: StructuredToolInterface[];
  /** This host's clock as the start-up check reads it (Date.now by default): a test skews it here. */
  clock?: () => number;
  /**
   * A cluster worker's channel to the primary's relay (src/cluster/worker.ts):
   * without REDIS_URL, live events reach the other workers through it.
   */
  clusterBus?: BusPort;
}

/**
 * The event bus REDIS_URL names (several instances), else a cluster's (its
 * workers, through the primary), else the in-memory one; Redis's client loads only when used.
 */
async function openEventBus(config: Config, logger: Logger, metrics: Metrics, clusterBus: BusPort | undefined): Promise<EventBus> {
  const options = {
    retention: config.eventRetention,
    graceMs: config.eventGraceMs,
    graceRuns: config.eventGraceRuns,
    subscriberQueueLimit: config.subscriberQueueLimit,
  };
  if (!config.redisUrl && clusterBus) {
    return new ClusterEventBus(clusterBus, {
      ...options,
      onError: (error) => logger.warn("event bus (cluster) error", { error }),
      onDelivered: (lagMs) => metrics.busLag.observe(lagMs / 1000),
    });
  }
  if (!config.redisUrl) return new MemoryEventBus(options);
  const { connectRedisEventBus } = await import("./storage/event-bus/redis.ts");
  try {
    return await connectRedisEventBus(config.redisUrl, {
      ...options,
      keyPrefix: config.redisKeyPrefix,
      onError: (error) => logger.warn("event bus (Redis) error", { error }),
      onDelivered: (lagMs) => metrics.busLag.observe(lagMs / 1000),
    });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

export async function startApp(config: Config, logger: Logger, overrides: AppOverrides = {}): Promise<App> {
  // The agents first: a bad configuration file stops start-up before anything is opened.
  const builtins = overrides.tools ?? builtinTools();
  // Tools put in place of the built-in ones are the built-in default agent's, when no file declares agents.
  const definitions =
    overrides.tools && !config.agentsFile
      ? [
          builtinDefaultAgent(
            agentDefaultsFrom(config),
            builtins.map((t) => t.name),
          ),
        ]
      : loadAgentDefinitions(config.agentsFile, agentDefaultsFrom(config));
  const graphs = await loadAgentGraphs(definitions);
  const trustedOperations = config.trustedOperationsFile === undefined ? undefined : loadTrustedManifest(config.trustedOperationsFile);
  const webhooks = { policy: webhookPolicy(config), deployment: deploymentWebhook(config), agents: agentWebhooks(config, definitions) };
  // Redis before the database: an unreachable one stops start-up before anything is migrated.
  const metrics = new Metrics();
  const bus = await openEventBus(config, logger, metrics, overrides.clusterBus);
  const storage = await openStorage(config, { onWriteWait: (ms) => metrics.writeGateWait.observe(ms / 1000) }).catch(async (error: unknown) => {
    await bus.close();
    throw error;
  });
  if (storage.migrated.length) logger.info("database migrated", { applied: storage.migrated, database: describeDatabase(config) });
  await checkClockAgainstDatabase({
    databaseTime: () => storage.databaseTime(),
    maxClockSkewMs: config.maxClockSkewMs,
    logger,
    clock: overrides.clock ?? Date.now,
  }).catch(async (error: unknown) => {
    await storage.close();
    await bus.close();
    throw error;
  });

  // What the API and the runs call goes through timed seams (runledger_db_operation_duration_seconds).
  const store = timedSeam(storage.runs, "run_store", metrics.dbOperation);
  const conversationList = timedSeam(storage.conversationList, "conversation_list", metrics.dbOperation);
  const checkpointReads = timedSeam(storage.checkpointReads, "checkpoint_reads", metrics.dbOperation);
  const toolJournal = timedSeam(storage.toolJournal, "tool_journal", metrics.dbOperation);
  const runEvents = timedSeam(storage.runEvents, "run_events", metrics.dbOperation);
  const ownership = new RunOwnership(store, {
    heartbeatMs: config.heartbeatMs,
    leaseMs: config.leaseMs,
    onError: (error) => logger.warn("heartbeat failed", { error }),
    bus,
    messageCounts: (conversationIds) => threadMessageCounts(checkpointReads, conversationIds),
    onRecovered: (run) => {
      logger.info("recovered a run its stopped process left running", { runId: run.id });
      announceConversationChange(bus, logger, { conversationId: run.conversationId, kind: "updated", at: new Date() });
    },
  });
  await ownership.register();
  const recovered = await ownership.recover();
  if (recovered.length) logger.info("recovered runs left running by a stopped process", { runs: recovered.map((r) => r.id) });
  // The heartbeat starts now, not once the server listens: a start-up slower than
  // RUN_LEASE_MS (MCP servers, a loaded host) must not look like a gone instance to
  // its peers, which would take every run this instance starts afterwards.
  let runs: RunService | undefined;
  ownership.start(async () => runs?.abortRunsEndedElsewhere());

  // MCP servers start with the server; one that does not come up costs its agents those tools, not the start.
  // The MCP client loads only when an agent has servers.
  let mcp: McpSupervisor | undefined;
  if (definitions.some((d) => kindOf(d).mcpServers(d).length > 0)) {
    const { McpSupervisor } = await import("./agent/mcp/index.ts");
    mcp = new McpSupervisor(definitions, { logger });
    await mcp.start();
  }
  const agent = new AgentRuntime({
    checkpointer: storage.saver,
    agents: definitions,
    graphs,
    mcp,
    builtins,
    ollama: { baseUrl: config.ollamaHost, idleTimeoutMs: config.modelIdleTimeoutMs },
  });
  runs = new RunService({
    store,
    checkpointReads,
    toolJournal,
    runEvents,
    bus,
    agent,
    ownerId: ownership.id,
    maxMessageChars: config.maxMessageChars,
    maxForkCheckpoints: config.maxForkCheckpoints,
    maxClockSkewMs: config.maxClockSkewMs,
    quotas: config.quotas.activeRuns || config.quotas.runsPerMinute ? config.quotas : undefined,
    webhooks,
    telemetry: new RunTelemetry(metrics),
    admission: {
      maxActiveRuns: config.maxActiveRuns,
      loopDelayTargetMs: config.admissionLoopDelayMs,
      modelConcurrency: config.modelConcurrency,
      ollamaHost: config.ollamaHost,
      pollMs: config.queuePollMs,
    },
    logger,
  });
  const runService = runs;
  metrics.setActiveRunsSource(() => runService.executingHere);
  metrics.setAdmissionLimitSource(() => runService.admissionLimit ?? config.maxActiveRuns);
  metrics.setDatabaseWaitingSource(() => storage.waiting());
  metrics.setQueuedRunsSource(() => runService.queuedHere);
  if (mcp) {
    const supervisor = mcp;
    metrics.setMcpSource(() => supervisor.status().map(({ agent, server, state }) => ({ agent, server, up: state === "ready" })));
  }
  const conversations = new ConversationService(store, bus, logger);
  const scheduleStore = timedSeam(storage.schedules, "schedules", metrics.dbOperation);
  const sweeper = new ScheduleSweeper({ store: scheduleStore, runs: runService, ownerId: ownership.id, pollMs: config.schedulePollMs, logger });
  const schedules = new ScheduleService({
    store: scheduleStore,
    runStore: store,
    agents: agent,
    validateMessage: (m) => runService.validateMessage(m),
    webhookPolicy: webhooks.policy,
    onScheduled: () => sweeper.wake(),
  });
  const webhookStore = timedSeam(storage.webhooks, "webhooks", metrics.dbOperation);
  const deliverer = config.webhooks.secret
    ? new WebhookDeliverer({
        store: webhookStore,
        ownerId: ownership.id,
        secret: config.webhooks.secret,
        allowPrivate: config.webhooks.allowPrivate,
        pollMs: config.webhooks.pollMs,
        retryMs: config.webhooks.retryMs,
        retryWindowMs: config.webhooks.retryWindowMs,
        timeoutMs: config.webhooks.timeoutMs,
        userAgent: "runledger",
        logger,
        onAttempt: (delivery, attempt) =>
          metrics.webhookAttempts.inc({ event: delivery.event, outcome: attempt.status === "pending" ? "retry" : attempt.status }),
      })
    : undefined;
  const retentionStore = timedSeam(storage.retention, "retention", metrics.dbOperation);
  const retentionPolicy = expiryPolicy(config.retention, definitions);
  const retention = new RetentionSweeper({
    store: retentionStore,
    runs: store,
    config: config.retention,
    policy: retentionPolicy,
    holder: ownership.id,
    logger,
    onDeleted: (table, rows) => metrics.retentionDeleted.inc({ table }, rows),
    onSweep: (outcome) => metrics.retentionSweeps.inc({ outcome }),
    onConversationDeleted: (snapshot) => announceConversationChange(bus, logger, { conversationId: snapshot.id, kind: "deleted", at: new Date(), snapshot }),
  });
  const services: Services = {
    runs,
    conversations,
    schedules,
    expiry: new ConversationExpiry(store, retentionStore, (conversationId) =>
      announceConversationChange(bus, logger, { conversationId, kind: "updated", at: new Date() }),
    ),
    retentionPolicy,
    agent,
    bus,
    store,
    conversationList,
    checkpointReads,
    toolJournal,
    runEvents,
    webhooks: webhookStore,
    scheduleStore,
  };

  const reads = {
    runs: store,
    conversationList,
    checkpointReads,
    toolJournal,
    runEvents,
    states: agent,
    webhooks: webhookStore,
    schedules: scheduleStore,
  };
  const authenticator = createAuthenticator({
    config,
    apiKeys: storage.apiKeys,
    apiKeyOptions: { onTouchError: (error) => logger.warn("an API key's last use was not recorded", { error }) },
    logger,
  });
  const http = await startHttpServer({
    authenticator,
    config,
    services,
    logger,
    readiness: {
      database: () => storage.ping(),
      events: () => bus.ping(),
      mcpServers: () => mcp?.status() ?? [],
      retention: () => retention.status(),
      ...modelProbe(config, agent),
    },
    metrics,
    // Beside the API unless METRICS_PORT serves it apart.
    routes: [
      ...(config.observability.metricsPort === undefined ? [metricsRoute(metrics)] : []),
      exportRoute(reads),
      labRoute({ runs, bus, reads, logger, metrics, maxBodyBytes: config.limits.requestBytes }),
      consoleRoute({ logger }),
    ],
    trustedOperations,
  }).catch(async (error: unknown) => {
    // Nothing was served: put back what start-up opened, then say why (a port in use, say).
    await runs.shutdown(0);
    await mcp?.close();
    await ownership.stop();
    await storage.close();
    await bus.close();
    throw error;
  });

  let metricsServer: MetricsServer | undefined;
  if (config.observability.metricsPort !== undefined) {
    metricsServer = await startMetricsServer(metrics, config.observability.metricsPort, config.host).catch(async (error: unknown) => {
      await http.close();
      await mcp?.close();
      await ownership.stop();
      await storage.close();
      await bus.close();
      throw error;
    });
  }
  // Runs left queued by a previous start, or by other instances, go as soon as there is room.
  void runs.claimQueued();
  // Due schedules fire from now on, on every instance (each firing claimed by one).
  sweeper.start();
  // Webhook deliveries due, this instance's and those others left, are sent from now on,
  // looked for whenever a conversation changes anywhere (a run ended or began waiting).
  deliverer?.start();
  const nudges = deliverer ? await followChanges(bus, () => deliverer.nudge(), logger) : undefined;
  // Every instance tries; the one holding the retention lease sweeps.
  retention.start();

  let draining: Promise<void> | null = null;
  let closing: Promise<void> | null = null;
  const drain = () => (draining ??= Promise.all([sweeper.stop(), retention.stop()]).then(() => runs.shutdown(config.shutdownTimeoutMs)));
  return {
    url: http.url,
    http,
    services,
    storage,
    ownership,
    metrics,
    metricsUrl: metricsServer?.url,
    drain,
    close() {
      closing ??= (async () => {
        await drain();
        // Deliveries under way are cut off unrecorded; their leases run out and they are sent again.
        await nudges?.return?.();
        await deliverer?.stop();
        // The last runs' LangSmith traces are sent before the process goes.
        if (config.observability.langsmith) await flushLangSmith(logger);
        await mcp?.close();
        await bus.close();
        await metricsServer?.close();
        await http.close();
        await ownership.stop();
        await storage.close();
      })();
      return closing;
    },
  };
}

/** Waits for LangChain's queued callbacks and the LangSmith client's pending batches. */
async function flushLangSmith(logger: Logger): Promise<void> {
  try {
    const [{ awaitAllCallbacks }, { LangChainTracer }] = await Promise.all([
      import("@langchain/core/callbacks/promises"),
      import("@langchain/core/tracers/tracer_langchain"),
    ]);
    await awaitAllCallbacks();
    // The default client is langsmith's Client, which batches; another has nothing to wait for.
    const client = new LangChainTracer().client as { awaitPendingTraceBatches?: () => Promise<void> };
    await client.awaitPendingTraceBatches?.();
  } catch (error) {
    logger.warn("LangSmith traces not all sent", { error });
  }
}

/** What the readiness check and the start-up report ask Ollama for: OLLAMA_MODEL and each agent's model. */
export function modelProbe(config: Pick<Config, "ollamaHost" | "ollamaModel">, agent: Pick<AgentRuntime, "agents">) {
  return {
    ollamaHost: config.ollamaHost,
    ollamaModel: config.ollamaModel,
    agentModels: agent.agents().map((a) => ({ agent: a.definition.name, model: a.definition.model })),
  };
}

function webhookPolicy(config: Config): WebhookPolicy {
  return { allowPrivate: config.webhooks.allowPrivate, canSign: config.webhooks.secret !== undefined };
}

/** WEBHOOK_URL, held to the same guard as a run's own webhook: a private target without WEBHOOK_ALLOW_PRIVATE stops start-up. */
function deploymentWebhook(config: Config): WebhookTarget | undefined {
  if (!config.webhooks.url) return undefined;
  try {
    return requireWebhook({ url: config.webhooks.url }, webhookPolicy(config));
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigError(`WEBHOOK_URL: ${error.message}`);
    throw error;
  }
}

/** Calls `onChange` on every conversation change the bus carries, until the subscription is closed. */
async function followChanges(bus: EventBus, onChange: () => void, logger: Logger): Promise<AsyncIterator<unknown>> {
  const changes = await bus.subscribeConversationChanges();
  void (async () => {
    try {
      for await (const _change of changes) onChange();
    } catch (error) {
      // Too many changes unread (the queue overflowed): polling still finds what is due.
      logger.warn("webhook deliveries no longer follow conversation changes; WEBHOOK_POLL_MS still finds them", { error });
    }
  })();
  return changes;
}

/** Each agent's own webhook (the agent file's `webhook`), held to the same guard: a refused one stops start-up, naming the agent. */
function agentWebhooks(config: Config, definitions: readonly AgentDefinition[]): Record<string, WebhookTarget> {
  const targets: Record<string, WebhookTarget> = {};
  for (const d of definitions) {
    if (!d.webhook) continue;
    try {
      targets[d.name] = requireWebhook(d.webhook, webhookPolicy(config));
    } catch (error) {
      if (error instanceof ValidationError) throw new ConfigError(`${d.origin}.webhook: ${error.message}`);
      throw error;
    }
  }
  return targets;
}
