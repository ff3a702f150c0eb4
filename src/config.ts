// Environment → typed configuration. Every variable is validated once, at start-up;
// a bad value stops the process with a one-line message naming the variable.
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { booleanVar, ConfigError, intVar, type Env } from "./config/vars.ts";
import { retentionConfig, type RetentionConfig } from "./config/retention.ts";
import { webhookConfig, type WebhookConfig } from "./config/webhooks.ts";
import { authConfig, type AuthConfig, type JwtKeySource } from "./config/auth.ts";

export { ConfigError };
export type { AuthConfig, JwtKeySource, RetentionConfig, WebhookConfig };

export interface Config {
  /** HTTP port. `PORT`, default 4000; 0 picks a free port. */
  port: number;
  /** Interface to bind. `HOST`, default 127.0.0.1 (loopback: no token is required by default). */
  host: string;
  /**
   * `DATABASE_URL`, default `file:./data/runledger.db`: the SQLite file shared with
   * LangGraph, or `postgres://user:password@host:port/database` for PostgreSQL
   * (runledger's tables and LangGraph's in one database, shared by every instance).
   */
  databaseUrl: string;
  /** Which engine `databaseUrl` names. */
  databaseKind: "sqlite" | "postgres";
  /** Absolute path of the SQLite file derived from `databaseUrl`; empty for PostgreSQL. */
  databasePath: string;
  /** `RUNLEDGER_CONFIG`: the JSON file declaring the agents (src/agent/agent-file.ts); unset: the one built-in agent, `default`. */
  agentsFile: string | undefined;
  /** `REDIS_URL` (`redis://host:port`): carries live events between instances. Unset: events stay in this process. */
  redisUrl: string | undefined;
  /**
   * `REDIS_KEY_PREFIX`, default `runledger:`: the prefix of every Redis key and
   * channel; instances share events only when they share it, so one Redis can
   * serve several deployments.
   */
  redisKeyPrefix: string;
  /**
   * `MAX_CLOCK_SKEW_MS`, default 1000: how far this host's clock may differ from
   * the database's. Start-up refuses a larger difference; a run whose conversation
   * recorded a later moment on another instance waits up to this long for this
   * clock to pass it (correlation marks stay ordered across instances).
   */
  maxClockSkewMs: number;
  /** `OLLAMA_HOST`, default http://127.0.0.1:11434. */
  ollamaHost: string;
  /** `OLLAMA_MODEL`, default qwen3. */
  ollamaModel: string;
  /** `OLLAMA_THINK` (true/false); unset leaves the model's default. */
  ollamaThink: boolean | undefined;
  /** `AGENT_RECURSION_LIMIT`, default 25: LangGraph super-steps per run. */
  recursionLimit: number;
  /** `MODEL_IDLE_TIMEOUT_MS`, default 60000: a run fails with MODEL_TIMEOUT after this long without a byte from the model. */
  modelIdleTimeoutMs: number;
  /** `MAX_MESSAGE_CHARS`, default 32000: longer messages get a ValidationError. */
  maxMessageChars: number;
  /**
   * `MAX_FORK_CHECKPOINTS`, default 10000 (0: no limit): the most checkpoints one
   * fork may copy (the chain from the thread's first checkpoint to the one forked
   * at). A fork copies that chain checkpoint by checkpoint, so this bounds its
   * reads, writes and memory; a longer chain gets a ValidationError before anything
   * is copied (fork from an earlier checkpoint). Admins too: it is a size, not a rate.
   */
  maxForkCheckpoints: number;
  /** `API_TOKEN`: when set, HTTP needs `Authorization: Bearer <token>` and WebSockets carry it in connection_init; the token stands for an admin. */
  apiToken: string | undefined;
  /** Who may call: JWTs from an identity provider (the `AUTH_*` variables); API keys need no setting. */
  auth: AuthConfig;
  /** `LOG_LEVEL`: debug, info (default), warn, error or silent. */
  logLevel: LogLevel;
  /** `SYSTEM_PROMPT`, or the contents of the file at `SYSTEM_PROMPT_FILE`; prepended to every model call, never stored. */
  systemPrompt: string;
  /** `RUN_HEARTBEAT_MS`, default 5000: how often a process proves it still owns its running runs. */
  heartbeatMs: number;
  /** `RUN_LEASE_MS`, default 30000: a process silent for this long is gone, and its running runs are recovered. */
  leaseMs: number;
  /** `EVENT_RETENTION`, default 10000: events kept per run for replay (`runEvents(after:)`). */
  eventRetention: number;
  /** `EVENT_GRACE_MS`, default 60000: how long a finished run's events stay replayable before the database answers alone. */
  eventGraceMs: number;
  /**
   * `EVENT_GRACE_RUNS`, default 1000: at most this many finished runs keep
   * their events replayable in this process's memory; each run finishing
   * beyond it ends the oldest one's grace early. A burst of thousands of runs
   * would otherwise hold every one's events for EVENT_GRACE_MS (about 100 MiB
   * for 5,000 short runs). Without effect with REDIS_URL: Redis keeps them.
   */
  eventGraceRuns: number;
  /**
   * `SUBSCRIBER_QUEUE_LIMIT`, default 1000: live events one subscription may have
   * unread (beyond its replay) before it is ended with a SUBSCRIBER_TOO_SLOW error.
   * Both transports read from this queue only as fast as the client reads its
   * socket, so this is what bounds a stalled client, per subscription.
   */
  subscriberQueueLimit: number;
  /** `WS_MAX_SUBSCRIPTIONS`, default 100: operations one WebSocket may have open at once; more are refused. With the queue limit it bounds one connection's memory. */
  wsMaxSubscriptions: number;
  /**
   * `QUOTA_STREAMS`, default 100 (0: no cap): live streams (WebSocket
   * operations and SSE responses together) one principal may hold open on one
   * instance; more are refused with QUOTA_EXCEEDED (HTTP 429). Admins only with QUOTA_ADMINS.
   */
  maxStreamsPerPrincipal: number;
  /**
   * `CREDENTIAL_RECHECK_MS`, default 5000: how often the credential of every open
   * WebSocket and SSE stream is checked again; a revoked API key ends its streams
   * within this time on every instance (a JWT's streams end at its exp).
   */
  credentialRecheckMs: number;
  /** `WS_KEEPALIVE_MS`, default 12000: the server pings each WebSocket this often and closes one that has not answered the previous ping. */
  wsKeepAliveMs: number;
  /** `SHUTDOWN_TIMEOUT_MS`, default 10000: the longest a graceful shutdown waits for runs to be recorded. */
  shutdownTimeoutMs: number;
  /** `WRITE_STALL_TIMEOUT_MS`, default 30000: an HTTP response (an SSE stream, say) whose client reads none of the bytes waiting for it this long has its connection closed. */
  writeStallTimeoutMs: number;
  /** Request and operation limits, the same on HTTP, SSE and WebSocket (src/http/limits.ts applies them). */
  limits: Limits;
  /**
   * `TRUSTED_OPERATIONS_FILE`: a JSON map of operation id → document (graphql-codegen's
   * `persisted-documents.json`, relay-compiler's persisted queries). Set, only those
   * operations run, sent by id, except for admins; src/server/trusted-manifest.ts reads it. Unset: any operation.
   */
  trustedOperationsFile: string | undefined;
  /** `CORS_ORIGINS`: comma-separated origins (`https://app.example.com`) whose pages may call the API; `*` for any. Default: none, no cross-origin access. */
  corsOrigins: string[];
  /** Per-principal quotas, enforced in the database so they hold across instances. */
  quotas: Quotas;
  /**
   * `MAX_ACTIVE_RUNS`, default 64: runs this instance executes at once; beyond, runs
   * wait QUEUED (INSTANCE_FULL) for this or another instance. Bounds memory and
   * keeps time to first token of admitted runs steady under a burst.
   */
  maxActiveRuns: number;
  /**
   * `ADMISSION_LOOP_DELAY_MS`, default 0 (off): when set, while this instance's
   * event loop, or work waiting for its turn on it (src/turns.ts), runs later
   * than this (p90 over 250 ms) it admits fewer runs at once, down to 4, and
   * more again, up to MAX_ACTIVE_RUNS, once it keeps up
   * (src/runs/adaptive-limit.ts). It trades throughput for shorter waits:
   * before turns, 10 ms made the burst benchmark's 5,000 runs take 2.4 times
   * as long (bench/analysis.md, "The queue"). The delay also counts CPU other
   * processes on the host take.
   */
  admissionLoopDelayMs: number;
  /**
   * `HEAP_GROWING_PERCENT`, default 20: how far past what its last full
   * collection kept V8 lets this process's heap grow before collecting again
   * (V8's `--heap-growing-percent`, set at start). Left to itself (0) V8 grows
   * the heap up to fourfold under a steady stream of short-lived objects, as a
   * burst of runs makes, though the live heap stays small: 20 keeps the peak
   * near what is live, for about as much CPU.
   */
  heapGrowingPercent: number;
  /**
   * `MODEL_CONCURRENCY`, default `OLLAMA_NUM_PARALLEL` when set, else 4 (Ollama's
   * own default where memory allows): runs executing at once per Ollama host and
   * model, on every instance together; beyond, runs wait QUEUED (MODEL_BUSY). An
   * agent's `concurrency` gives it a queue of its own.
   */
  modelConcurrency: number;
  /**
   * `QUEUE_POLL_MS`, default 500: how often an instance looks for queued runs it
   * could take besides its own (another instance's, or ones left by a stopped
   * one) while there are any. Its own are claimed at once, and a run ending
   * here looks too. While the queue is empty it looks ten times less often (5 s),
   * and at once when a conversation changes on any instance (a run queued there).
   */
  queuePollMs: number;
  /**
   * `SCHEDULE_POLL_MS`, default 30000: the longest an instance waits between
   * looks for due schedules. Between, it sleeps until the soonest schedule's
   * next firing, and one created or resumed on it wakes it (docs/schedules.md).
   */
  schedulePollMs: number;
  /** What the retention sweeper deletes, and how often it looks (the `RETENTION_*` settings, docs/retention.md). */
  retention: RetentionConfig;
  /** Traces, metrics and LangSmith (docs/observability.md). */
  observability: Observability;
  /**
   * `WORKERS`, default the machine's cores (`os.availableParallelism()`): server
   * processes sharing PORT. Above 1, a primary process starts this many
   * workers (each a full instance: HTTP, GraphQL, runs; the first alone, as it
   * migrates the database) and restarts one that dies (src/cluster/primary.ts);
   * 1 is one process, no primary.
   */
  workers: number;
  /** Calls when runs end or wait (docs/webhooks.md). */
  webhooks: WebhookConfig;
}

export interface Observability {
  /**
   * OpenTelemetry traces are exported when `OTEL_EXPORTER_OTLP_ENDPOINT` or
   * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and neither `OTEL_SDK_DISABLED=true`
   * nor `OTEL_TRACES_EXPORTER=none` says otherwise); the SDK reads the other `OTEL_*`
   * variables itself. Off, no span is made.
   */
  tracing: boolean;
  /** `METRICS_PORT`: serve `GET /metrics` on this port of `HOST`, without authentication, instead of beside the API (admins only). */
  metricsPort: number | undefined;
  /** `LANGSMITH_TRACING=true` (LangChain's own variable; `LANGSMITH_API_KEY`, `LANGSMITH_ENDPOINT`, `LANGSMITH_PROJECT` beside it). */
  langsmith: boolean;
}

export interface Quotas {
  /** `QUOTA_ACTIVE_RUNS`, default 0 (no limit): runs one principal may have active at once; beyond, QuotaExceededError (REST: 429). */
  activeRuns: number;
  /**
   * `QUOTA_RUNS_PER_MINUTE`, default 0 (no limit): writes one principal may make in
   * any 60 seconds. Each start, resume and editState counts (an edit is a run of
   * kind EDIT: no model, but a checkpoint written), and each fork (a copy of a
   * whole chain of checkpoints, see MAX_FORK_CHECKPOINTS): a fork with a message
   * counts once, as its run. Edits are not held to QUOTA_ACTIVE_RUNS: they call
   * no model and end at once.
   */
  runsPerMinute: number;
  /** `QUOTA_ADMINS`, default false: admins (API_TOKEN, an admin key or claim, the local developer) are held to the quotas too. */
  admins: boolean;
}

export interface Limits {
  /** `MAX_REQUEST_BYTES`, default 1048576 (1 MiB): the largest HTTP request body (413 beyond it) and the largest WebSocket message (the socket is closed with 1009 beyond it). */
  requestBytes: number;
  /** `MAX_QUERY_CHARS`, default 20000: the longest GraphQL document, in characters. */
  queryChars: number;
  /** `MAX_QUERY_TOKENS`, default 1000: GraphQL tokens in one document, counted while parsing, so a huge document stops early. */
  queryTokens: number;
  /** `MAX_QUERY_DEPTH`, default 12: the deepest field nesting (a Relay connection's edges and node count as levels). */
  queryDepth: number;
  /** `MAX_QUERY_ALIASES`, default 30: aliased fields in one operation. */
  queryAliases: number;
  /** `MAX_QUERY_DIRECTIVES`, default 50: directives in one operation. */
  queryDirectives: number;
  /** `MAX_QUERY_COST`, default 50000: graphql-armor's estimated cost (each level weighs more; a literal first/last multiplies its subtree). */
  queryCost: number;
  /** `MAX_PAGE_SIZE`, default 100, at most 100: the largest first/last of a connection; larger is refused with a clear error, never clamped. */
  pageSize: number;
  /** `WS_INIT_TIMEOUT_MS`, default 10000: a WebSocket that has not sent connection_init by then is closed with 4408. */
  wsInitTimeoutMs: number;
  /** `NODE_ENV=production` hides "Did you mean ...?" suggestions from error messages, so the schema cannot be guessed field by field. */
  hideSuggestions: boolean;
}

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Use the calculator tool for arithmetic and the current_time tool for the date or time.";

function urlVar(env: Env, name: string, fallback: string): string {
  const raw = (env[name] ?? "").trim() || fallback;
  const wrong = new ConfigError(`${name} must be a URL such as http://127.0.0.1:11434 (or a bare host:port), got "${raw}"`);
  // Ollama's own convention allows a bare host:port; anything else that starts
  // like a scheme ("htp:/x", "ftp://x") is a mistake, never a host named "htp".
  const hasScheme = /^[a-z][a-z0-9+.-]*:(?!\d+(?:[/?#]|$))/i.test(raw);
  if (hasScheme && !/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) throw wrong;
  const withScheme = hasScheme ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw wrong;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must use http or https, got "${raw}"`);
  }
  if (url.hostname === "") throw wrong;
  return withScheme.replace(/\/+$/, "");
}

/** Resolves a Prisma-style SQLite URL (`file:./x.db`) to an absolute path. */
export function databasePathFromUrl(databaseUrl: string, cwd = process.cwd()): string {
  if (!databaseUrl.startsWith("file:")) {
    throw new ConfigError(
      `DATABASE_URL must be a SQLite file URL such as file:./data/runledger.db or a PostgreSQL URL such as postgres://user@host:5432/runledger, got "${redact(databaseUrl)}"`,
    );
  }
  const file = databaseUrl.slice("file:".length).split("?")[0]!;
  if (file === "" || file === ":memory:") {
    throw new ConfigError("DATABASE_URL must name a file: LangGraph and the run store share it");
  }
  return path.resolve(cwd, file);
}

/** Where the database is, for logs: the SQLite file, or the PostgreSQL URL without its password. */
export function describeDatabase(config: Pick<Config, "databaseKind" | "databasePath" | "databaseUrl">): string {
  return config.databaseKind === "postgres" ? redact(config.databaseUrl) : config.databasePath;
}

/** A URL without its password, for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, "//$1:***@");
}

function postgresUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`DATABASE_URL must be a URL such as postgres://user:password@host:5432/runledger, got "${redact(raw)}"`);
  }
  if (!url.hostname) throw new ConfigError(`DATABASE_URL must name a host, got "${redact(raw)}"`);
  if (url.pathname === "" || url.pathname === "/")
    throw new ConfigError(`DATABASE_URL must name a database (postgres://host:5432/runledger), got "${redact(raw)}"`);
  return raw;
}

function prefixVar(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^[A-Za-z0-9_:.\-]{1,64}$/.test(raw)) throw new ConfigError(`${name} must be 1 to 64 letters, digits, _ : . or -, got "${raw}"`);
  return raw;
}

function redisUrlVar(env: Env): string | undefined {
  const raw = (env.REDIS_URL ?? "").trim();
  if (raw === "") return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`REDIS_URL must be a URL such as redis://127.0.0.1:6379, got "${redact(raw)}"`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new ConfigError(`REDIS_URL must use redis:// or rediss://, got "${redact(raw)}"`);
  if (!url.hostname) throw new ConfigError(`REDIS_URL must name a host, got "${redact(raw)}"`);
  return raw;
}

export function loadConfig(env: Env = process.env, readFile: (p: string) => string = defaultReadFile): Config {
  const databaseUrl = (env.DATABASE_URL ?? "").trim() || "file:./data/runledger.db";
  const databaseKind = /^postgres(ql)?:\/\//i.test(databaseUrl) ? "postgres" : "sqlite";
  const logLevel = ((env.LOG_LEVEL ?? "").trim() || "info") as LogLevel;
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of debug, info, warn, error, silent, got "${env.LOG_LEVEL}"`);
  }
  const thinkRaw = (env.OLLAMA_THINK ?? "").trim().toLowerCase();
  let ollamaThink: boolean | undefined;
  if (thinkRaw === "") ollamaThink = undefined;
  else if (["true", "1", "yes"].includes(thinkRaw)) ollamaThink = true;
  else if (["false", "0", "no"].includes(thinkRaw)) ollamaThink = false;
  else throw new ConfigError(`OLLAMA_THINK must be true or false, got "${env.OLLAMA_THINK}"`);

  const host = (env.HOST ?? "").trim() || "127.0.0.1";
  const model = (env.OLLAMA_MODEL ?? "").trim() || "qwen3";
  const apiToken = env.API_TOKEN === undefined || env.API_TOKEN === "" ? undefined : env.API_TOKEN;
  if (apiToken !== undefined && apiToken.trim().length < 8) {
    throw new ConfigError("API_TOKEN must be at least 8 characters when set");
  }

  let systemPrompt = env.SYSTEM_PROMPT ?? DEFAULT_SYSTEM_PROMPT;
  if (env.SYSTEM_PROMPT_FILE) {
    try {
      systemPrompt = readFile(env.SYSTEM_PROMPT_FILE);
    } catch (error) {
      throw new ConfigError(`SYSTEM_PROMPT_FILE cannot be read: ${(error as Error).message}`);
    }
  }

  const heartbeatMs = intVar(env, "RUN_HEARTBEAT_MS", 5_000, 100, 3_600_000);
  const leaseMs = intVar(env, "RUN_LEASE_MS", 30_000, 300, 86_400_000);
  if (leaseMs < heartbeatMs * 2) {
    throw new ConfigError(`RUN_LEASE_MS (${leaseMs}) must be at least twice RUN_HEARTBEAT_MS (${heartbeatMs})`);
  }

  return {
    port: intVar(env, "PORT", 4000, 0, 65535),
    host,
    databaseUrl: databaseKind === "postgres" ? postgresUrl(databaseUrl) : databaseUrl,
    databaseKind,
    databasePath: databaseKind === "postgres" ? "" : databasePathFromUrl(databaseUrl),
    agentsFile: (env.RUNLEDGER_CONFIG ?? "").trim() || undefined,
    redisUrl: redisUrlVar(env),
    redisKeyPrefix: prefixVar(env, "REDIS_KEY_PREFIX", "runledger:"),
    maxClockSkewMs: intVar(env, "MAX_CLOCK_SKEW_MS", 1_000, 0, 60_000),
    quotas: {
      activeRuns: intVar(env, "QUOTA_ACTIVE_RUNS", 0, 0, 1_000_000),
      runsPerMinute: intVar(env, "QUOTA_RUNS_PER_MINUTE", 0, 0, 1_000_000),
      admins: booleanVar(env, "QUOTA_ADMINS"),
    },
    maxActiveRuns: intVar(env, "MAX_ACTIVE_RUNS", 64, 1, 100_000),
    admissionLoopDelayMs: intVar(env, "ADMISSION_LOOP_DELAY_MS", 0, 0, 60_000),
    heapGrowingPercent: intVar(env, "HEAP_GROWING_PERCENT", 20, 0, 1_000),
    queuePollMs: intVar(env, "QUEUE_POLL_MS", 500, 10, 3_600_000),
    schedulePollMs: intVar(env, "SCHEDULE_POLL_MS", 30_000, 10, 3_600_000),
    retention: retentionConfig(env),
    modelConcurrency: intVar(env, "MODEL_CONCURRENCY", intVar(env, "OLLAMA_NUM_PARALLEL", 4, 1, 10_000), 1, 10_000),
    ollamaHost: urlVar(env, "OLLAMA_HOST", "http://127.0.0.1:11434"),
    ollamaModel: model,
    ollamaThink,
    recursionLimit: intVar(env, "AGENT_RECURSION_LIMIT", 25, 1, 10_000),
    modelIdleTimeoutMs: intVar(env, "MODEL_IDLE_TIMEOUT_MS", 60_000, 10, 86_400_000),
    maxMessageChars: intVar(env, "MAX_MESSAGE_CHARS", 32_000, 1, 10_000_000),
    maxForkCheckpoints: intVar(env, "MAX_FORK_CHECKPOINTS", 10_000, 0, 100_000_000),
    apiToken,
    logLevel,
    systemPrompt,
    heartbeatMs,
    leaseMs,
    eventRetention: intVar(env, "EVENT_RETENTION", 10_000, 1, 10_000_000),
    eventGraceMs: intVar(env, "EVENT_GRACE_MS", 60_000, 0, 86_400_000),
    eventGraceRuns: intVar(env, "EVENT_GRACE_RUNS", 1_000, 1, 10_000_000),
    subscriberQueueLimit: intVar(env, "SUBSCRIBER_QUEUE_LIMIT", 1_000, 1, 1_000_000),
    wsMaxSubscriptions: intVar(env, "WS_MAX_SUBSCRIPTIONS", 100, 1, 100_000),
    wsKeepAliveMs: intVar(env, "WS_KEEPALIVE_MS", 12_000, 50, 3_600_000),
    maxStreamsPerPrincipal: intVar(env, "QUOTA_STREAMS", 100, 0, 1_000_000),
    credentialRecheckMs: intVar(env, "CREDENTIAL_RECHECK_MS", 5_000, 50, 3_600_000),
    shutdownTimeoutMs: intVar(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 100, 600_000),
    writeStallTimeoutMs: intVar(env, "WRITE_STALL_TIMEOUT_MS", 30_000, 100, 3_600_000),
    limits: {
      requestBytes: intVar(env, "MAX_REQUEST_BYTES", 1_048_576, 1_024, 1_073_741_824),
      queryChars: intVar(env, "MAX_QUERY_CHARS", 20_000, 100, 10_000_000),
      queryTokens: intVar(env, "MAX_QUERY_TOKENS", 1_000, 10, 1_000_000),
      queryDepth: intVar(env, "MAX_QUERY_DEPTH", 12, 2, 1_000),
      queryAliases: intVar(env, "MAX_QUERY_ALIASES", 30, 0, 100_000),
      queryDirectives: intVar(env, "MAX_QUERY_DIRECTIVES", 50, 0, 100_000),
      queryCost: intVar(env, "MAX_QUERY_COST", 50_000, 10, 1_000_000_000),
      pageSize: intVar(env, "MAX_PAGE_SIZE", 100, 1, 100),
      wsInitTimeoutMs: intVar(env, "WS_INIT_TIMEOUT_MS", 10_000, 10, 600_000),
      hideSuggestions: (env.NODE_ENV ?? "").trim() === "production",
    },
    trustedOperationsFile: (env.TRUSTED_OPERATIONS_FILE ?? "").trim() || undefined,
    corsOrigins: listVar(env, "CORS_ORIGINS"),
    auth: authConfig(env),
    observability: observabilityConfig(env),
    workers: intVar(env, "WORKERS", os.availableParallelism(), 1, 256),
    webhooks: webhookConfig(env),
  };
}

const OTLP_PROTOCOLS = ["http/protobuf", "http/json"];
const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

/** The OTEL_* and LANGSMITH_* settings runledger acts on, checked here so a typo stops start-up rather than silently dropping traces. */
function observabilityConfig(env: Env): Observability {
  const value = (name: string) => (env[name] ?? "").trim();
  for (const name of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "LANGSMITH_ENDPOINT"]) {
    const raw = value(name);
    if (raw === "") continue;
    let url: URL | undefined;
    try {
      url = new URL(raw);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
      throw new ConfigError(`${name} must be an http or https URL such as http://127.0.0.1:4318, got "${raw}"`);
  }
  for (const name of ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]) {
    const raw = value(name);
    // grpc needs a client this server does not ship.
    if (raw !== "" && !OTLP_PROTOCOLS.includes(raw)) throw new ConfigError(`${name} must be http/protobuf or http/json, got "${raw}"`);
  }
  const sampler = value("OTEL_TRACES_SAMPLER");
  if (sampler !== "" && !SAMPLERS.includes(sampler)) throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(", ")}, got "${sampler}"`);
  const ratio = value("OTEL_TRACES_SAMPLER_ARG");
  if (ratio !== "" && sampler.endsWith("traceidratio") && !(/^\d*\.?\d+$/.test(ratio) && Number(ratio) <= 1))
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1, got "${ratio}"`);
  const exporters = value("OTEL_TRACES_EXPORTER");
  if (exporters !== "" && !["otlp", "none"].includes(exporters)) throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got "${exporters}"`);
  const disabled = booleanVar(env, "OTEL_SDK_DISABLED");
  const endpoint = value("OTEL_EXPORTER_OTLP_ENDPOINT") || value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const metricsPort = value("METRICS_PORT") === "" ? undefined : intVar(env, "METRICS_PORT", 0, 1, 65535);
  if (metricsPort !== undefined && metricsPort === intVar(env, "PORT", 4000, 0, 65535))
    throw new ConfigError(`METRICS_PORT must differ from PORT (${metricsPort}): unset it to serve /metrics beside the API`);
  const langsmith = langsmithTracing(env);
  if (langsmith && !value("LANGSMITH_API_KEY") && !value("LANGCHAIN_API_KEY"))
    throw new ConfigError("LANGSMITH_TRACING is true but LANGSMITH_API_KEY is not set: LangSmith refuses runs without a key");
  return { tracing: endpoint !== "" && !disabled && exporters !== "none", metricsPort, langsmith };
}

/** LangChain's own reading of LANGSMITH_TRACING and its older names: exactly "true" turns it on, so anything but true or false is a mistake. */
function langsmithTracing(env: Env): boolean {
  for (const name of ["LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"]) {
    const raw = env[name] ?? "";
    if (raw === "true") return true;
    if (raw === "" || raw === "false") continue;
    throw new ConfigError(`${name} must be true or false (LangChain reads exactly "true"), got "${raw}"`);
  }
  return false;
}

/** A comma-separated list of origins (scheme://host[:port]), or `*`. */
function listVar(env: Env, name: string): string[] {
  const items = (env[name] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of items) {
    if (item === "*") continue;
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== item.replace(/\/+$/, "")) {
      throw new ConfigError(`${name} must list origins such as https://app.example.com (scheme, host and port only) or *, got "${item}"`);
    }
  }
  return items.map((item) => item.replace(/\/+$/, ""));
}

function defaultReadFile(p: string): string {
  return readFileSync(p, "utf8");
}
