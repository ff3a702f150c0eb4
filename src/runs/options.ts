// What the run service is built from: the storage seams, the bus, the agents,
// and the settings both sides of it read (the API side that records runs, and
// the execution side that runs them).
import type { AgentRuntime } from "../agent/runtime.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { CheckpointReads } from "../storage/checkpoint-reads/types.ts";
import type { ToolJournal } from "../storage/tool-journal/types.ts";
import type { RunEventStore } from "../storage/run-events/types.ts";
import type { EventBus } from "../storage/event-bus/types.ts";
import type { Logger } from "../logger.ts";
import type { RunTelemetry } from "../telemetry/run-telemetry.ts";
import type { WebhookTarget } from "../domain/records.ts";
import type { WebhookPolicy } from "../webhooks/url-guard.ts";
import type { AdmissionSettings } from "./admission.ts";

export interface RunServiceOptions {
  store: RunStore;
  checkpointReads: CheckpointReads;
  /** Where tool calls are journaled, so one that may have run is never repeated silently. */
  toolJournal: ToolJournal;
  /** Where what a run streams that its checkpoints do not keep is stored (custom events, each message's node). */
  runEvents: RunEventStore;
  bus: EventBus;
  agent: AgentRuntime;
  ownerId: string;
  maxMessageChars: number;
  /** The most checkpoints a fork may copy (`MAX_FORK_CHECKPOINTS`); 0 or absent is no limit. */
  maxForkCheckpoints?: number;
  /** How far behind this instance's clock may be and a run still start (it waits that long); `MAX_CLOCK_SKEW_MS`. */
  maxClockSkewMs: number;
  logger: Logger;
  /** Per-principal quotas (QUOTA_ACTIVE_RUNS, QUOTA_RUNS_PER_MINUTE; 0 is no limit), for admins too when `admins` (QUOTA_ADMINS). */
  quotas?: { activeRuns: number; runsPerMinute: number; admins: boolean };
  /** Each run's metrics and span; none by default. */
  telemetry?: RunTelemetry;
  /**
   * Capacity (admission.ts): with it, every run is queued first and executes once
   * this instance claims it with room for it and a slot of its model endpoint.
   * Without it, runs execute at once (embedded uses and store-level tests).
   */
  admission?: AdmissionSettings & {
    /** How often the queue is looked at for runs other instances queued or capacity they freed; default 500 ms. */
    pollMs?: number;
  };
  /** Webhooks (docs/webhooks.md): what a run's own is checked against, and the deployment's (WEBHOOK_URL), which every run gets. None: no webhook is accepted. */
  webhooks?: { policy: WebhookPolicy; deployment?: WebhookTarget; agents?: Readonly<Record<string, WebhookTarget>> };
  now?: () => Date;
}
