// Prometheus metrics (prom-client), one registry per server: a test process may
// hold several servers, each with its own counts. Process metrics (CPU, memory,
// event loop, GC) are the process's, collected once and served by every registry.
// Labels are bounded sets: agents and MCP servers come from the configuration,
// statuses and error codes from the API's enums, GraphQL fields from the schema;
// never a run, conversation or user id. In a cluster (WORKERS > 1) each
// worker counts its own, and /metrics, served by any of them, is the sum over
// all of them (src/cluster/primary.ts aggregates; gauges say how when summing
// would not do).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from "prom-client";
import { turns } from "../turns.ts";

let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** This process's own metrics (CPU, memory, event loop, GC), as prom-client's aggregation takes them: a cluster's primary adds its own to its workers'. */
export function processMetricsJson(): Promise<MetricObjectWithValues<MetricValue<string>>[]> {
  return processMetrics().getMetricsAsJSON();
}

/** A number read at scrape time. */
export type Source = () => number;

export class Metrics {
  readonly registry = new Registry();
  #queued: Source = () => 0;
  #active: Source = () => 0;
  #admissionLimit: Source = () => 0;
  #dbWaiting: Source = () => 0;
  #subscriptions = new Map<string, Source>();
  #mcp: () => { agent: string; server: string; up: boolean }[] = () => [];
  #collector: (() => Promise<string>) | null = null;

  readonly runsStarted = new Counter({
    name: "runledger_runs_started_total",
    help: "Runs started on this instance, by agent and run kind (start, resume, edit).",
    labelNames: ["agent", "kind"] as const,
    registers: [this.registry],
  });
  readonly runsFinished = new Counter({
    name: "runledger_runs_finished_total",
    help: "Runs this instance executed to an outcome, by agent, run kind, status and error code (empty when none).",
    labelNames: ["agent", "kind", "status", "error_code"] as const,
    registers: [this.registry],
  });
  readonly runDuration = new Histogram({
    name: "runledger_run_duration_seconds",
    help: "From a run's start to its recorded outcome, by agent and status.",
    labelNames: ["agent", "status"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });
  readonly queueWait = new Histogram({
    name: "runledger_queue_wait_seconds",
    help: "From a run's queueing to its start on this instance, by agent.",
    labelNames: ["agent"] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  readonly timeToFirstToken = new Histogram({
    name: "runledger_time_to_first_token_seconds",
    help: "From a run's start to its first relayed token, by agent.",
    labelNames: ["agent"] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly tokenGap = new Histogram({
    name: "runledger_token_gap_seconds",
    help: "Time between a run's consecutive relayed tokens, by agent.",
    labelNames: ["agent"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: "runledger_tokens_total",
    help: "Tokens relayed to subscribers (one per streamed chunk with text), by agent.",
    labelNames: ["agent"] as const,
    registers: [this.registry],
  });
  readonly modelTokens = new Counter({
    name: "runledger_model_tokens_total",
    help: "Tokens the model reported, by agent and type (input, output).",
    labelNames: ["agent", "type"] as const,
    registers: [this.registry],
  });
  readonly busLag = new Histogram({
    name: "runledger_event_bus_delivery_lag_seconds",
    help: "From an event's publication on the instance executing the run to its arrival on this one, through Redis or from another worker of this cluster.",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly writeGateWait = new Histogram({
    name: "runledger_db_write_gate_wait_seconds",
    help: "SQLite: how long each write waited for its turn at the write gate.",
    buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
    registers: [this.registry],
  });
  readonly dbOperation = new Histogram({
    name: "runledger_db_operation_duration_seconds",
    help: "Each storage operation (one transaction or one read), by seam and method, waits for a connection or the write gate included.",
    labelNames: ["seam", "operation"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly retentionDeleted = new Counter({
    name: "runledger_retention_deleted_rows_total",
    help: "Rows the retention sweeper deleted, by table (docs/retention.md).",
    labelNames: ["table"] as const,
    registers: [this.registry],
  });
  readonly retentionSweeps = new Counter({
    name: "runledger_retention_sweeps_total",
    help: "Retention sweeps this instance tried, by outcome: swept (it held the lease), standby (another instance did), failed.",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly subscribersCutOff = new Counter({
    name: "runledger_subscribers_cut_off_total",
    help: "Subscriptions ended with SUBSCRIBER_TOO_SLOW because their client read too slowly.",
    registers: [this.registry],
  });
  readonly webhookAttempts = new Counter({
    name: "runledger_webhook_attempts_total",
    help: "Webhook delivery attempts this instance made, by event and outcome: delivered, retry (to be tried again) or failed (given up).",
    labelNames: ["event", "outcome"] as const,
    registers: [this.registry],
  });
  readonly graphqlOperations = new Counter({
    name: "runledger_graphql_operations_total",
    help: "GraphQL operations executed, by type, root field and outcome (ok, error).",
    labelNames: ["type", "field", "outcome"] as const,
    registers: [this.registry],
  });
  readonly graphqlDuration = new Histogram({
    name: "runledger_graphql_operation_duration_seconds",
    help: "Execution time of GraphQL queries and mutations, by type and root field.",
    labelNames: ["type", "field"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });

  constructor() {
    const self = this;
    new Gauge({
      name: "runledger_runs_active",
      help: "Runs executing on this instance now.",
      registers: [this.registry],
      collect() {
        this.set(self.#active());
      },
    });
    new Gauge({
      name: "runledger_admission_limit",
      help: "Runs this instance admits at once now: MAX_ACTIVE_RUNS, fewer while its event loop runs later than ADMISSION_LOOP_DELAY_MS.",
      registers: [this.registry],
      collect() {
        this.set(self.#admissionLimit());
      },
    });
    new Gauge({
      name: "runledger_turns_waiting",
      help: "Work waiting for its turn on this process's event loop now: requests, lines the model streamed, runs starting, writes to a SQLite file.",
      registers: [this.registry],
      collect() {
        this.set(turns.waiting);
      },
    });
    new Gauge({
      name: "runledger_runs_queued",
      help: "Runs this instance queued that no instance has claimed yet, and its runs waiting again after the model answered 503.",
      registers: [this.registry],
      collect() {
        this.set(self.#queued());
      },
    });
    new Gauge({
      name: "runledger_db_waiting",
      help: "Callers waiting for the database now: writes queued at SQLite's write gate, or queries waiting for a PostgreSQL pool connection.",
      registers: [this.registry],
      collect() {
        this.set(self.#dbWaiting());
      },
    });
    new Gauge({
      name: "runledger_subscriptions",
      help: "Live subscriptions on this instance, by transport: GraphQL over ws and sse, and the REST lab's event streams (rest).",
      labelNames: ["transport"] as const,
      registers: [this.registry],
      collect() {
        for (const [transport, source] of self.#subscriptions) this.set({ transport }, source());
      },
    });
    new Gauge({
      name: "runledger_mcp_server_up",
      help: "1 when an agent's MCP server is connected, else 0.",
      labelNames: ["agent", "server"] as const,
      registers: [this.registry],
      // Across a cluster's workers: up only where every worker has it.
      aggregator: "min",
      collect() {
        this.reset();
        for (const { agent, server, up } of self.#mcp()) this.set({ agent, server }, up ? 1 : 0);
      },
    });
  }

  /** What `runledger_runs_queued` reports (0 until a queue feeds it). */
  setQueuedRunsSource(source: Source): void {
    this.#queued = source;
  }

  setDatabaseWaitingSource(source: Source): void {
    this.#dbWaiting = source;
  }

  setActiveRunsSource(source: Source): void {
    this.#active = source;
  }

  setAdmissionLimitSource(source: Source): void {
    this.#admissionLimit = source;
  }

  setSubscriptionsSource(transport: "ws" | "sse" | "rest", source: Source): void {
    this.#subscriptions.set(transport, source);
  }

  setMcpSource(source: () => { agent: string; server: string; up: boolean }[]): void {
    this.#mcp = source;
  }

  /** The exposition: this server's metrics, then the process's; in a cluster, every worker's, aggregated. */
  async text(): Promise<string> {
    if (this.#collector) return this.#collector();
    const [own, proc] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${proc}`;
  }

  /** This process's metrics, as prom-client's aggregation takes them (the cluster's primary sums them over the workers). */
  async json(): Promise<MetricObjectWithValues<MetricValue<string>>[]> {
    const [own, proc] = await Promise.all([this.registry.getMetricsAsJSON(), processMetrics().getMetricsAsJSON()]);
    return [...own, ...proc];
  }

  /** Where text() gets the exposition instead: the cluster's, from the primary. */
  collectWith(collector: () => Promise<string>): void {
    this.#collector = collector;
  }

  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;
}
