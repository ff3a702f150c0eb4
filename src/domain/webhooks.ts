// Webhooks (docs/webhooks.md): where a run's end and wait are told, and what is
// told. A run carries its targets from its start; the transaction that ends it
// (or records it waiting) writes one delivery per target that asked for that
// event, with its payload, so the call is made even if the process dies right
// after. Pure: the stores and the deliverer share it.
import type { InterruptRecord, RunRecord, WebhookEventValue, WebhookTarget } from "./records.ts";

export type { WebhookEventValue, WebhookTarget } from "./records.ts";
export const WEBHOOK_EVENTS: readonly WebhookEventValue[] = ["RUN_ENDED", "RUN_WAITING"];

/** pending: to be sent (again); delivered: a 2xx answered; failed: given up after the retry window. */
export type WebhookDeliveryStatusValue = "pending" | "delivered" | "failed";

/** One event for one target: its attempts so far and the latest answer. */
export interface WebhookDeliveryRecord {
  /** The Standard Webhooks `webhook-id` (msg_…): the same on every attempt, so receivers de-duplicate by it. */
  id: string;
  runId: string;
  event: WebhookEventValue;
  url: string;
  /** The JSON body sent, byte for byte the same on every attempt. */
  payload: string;
  status: WebhookDeliveryStatusValue;
  /** Attempts made so far. */
  attempt: number;
  /** The latest attempt's HTTP status; null before one answered. */
  httpStatus: number | null;
  /** Why the latest attempt failed; null after a success or before any attempt. */
  error: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  /** When it is sent next; null once delivered or failed. */
  nextAttemptAt: Date | null;
}

/** What the run store writes per ended run (the outbox rows). */
export interface NewWebhookDelivery {
  id: string;
  runId: string;
  event: WebhookEventValue;
  url: string;
  payload: string;
}

/** The event a run's status calls for; null while it is active. */
export function webhookEventOf(status: RunRecord["status"]): WebhookEventValue | null {
  if (status === "waiting") return "RUN_WAITING";
  if (status === "queued" || status === "running") return null;
  return "RUN_ENDED";
}

/** The Standard Webhooks payload: `type`, `timestamp` and `data` (the run's ids, status, error, usage and, waiting, its interrupts). */
export function webhookPayload(run: RunRecord, interrupts: readonly Pick<InterruptRecord, "id" | "node" | "value">[], at: Date): string {
  const event = webhookEventOf(run.status);
  return JSON.stringify({
    type: event === "RUN_WAITING" ? "run.waiting" : "run.ended",
    timestamp: at.toISOString(),
    data: {
      runId: run.id,
      conversationId: run.conversationId,
      kind: run.kind.toUpperCase(),
      status: run.status.toUpperCase(),
      errorCode: run.errorCode,
      errorMessage: run.errorMessage,
      startedAt: run.startedAt.toISOString(),
      finishedAt: run.finishedAt?.toISOString() ?? null,
      usage: run.usage ? { inputTokens: run.usage.inputTokens, outputTokens: run.usage.outputTokens, modelCalls: run.usage.modelCalls } : null,
      interrupts: interrupts.map((i) => ({ id: i.id, node: i.node, value: i.value ?? null })),
    },
  });
}

/** The outbox rows for runs that just ended or began waiting: one per target that asked for the event. */
export function webhookDeliveriesFor(
  run: RunRecord,
  targets: readonly WebhookTarget[],
  interrupts: readonly Pick<InterruptRecord, "id" | "node" | "value">[],
  at: Date,
  newId: () => string,
): NewWebhookDelivery[] {
  const event = webhookEventOf(run.status);
  if (!event) return [];
  const wanted = targets.filter((t) => t.events.includes(event));
  if (!wanted.length) return [];
  const payload = webhookPayload(run, interrupts, at);
  return wanted.map((t) => ({ id: newId(), runId: run.id, event, url: t.url, payload }));
}

/** Targets as stored: events as a comma-separated list. */
export function encodeWebhookEvents(events: readonly WebhookEventValue[]): string {
  return WEBHOOK_EVENTS.filter((e) => events.includes(e)).join(",");
}

export function decodeWebhookEvents(text: string): WebhookEventValue[] {
  return text.split(",").filter((e): e is WebhookEventValue => (WEBHOOK_EVENTS as readonly string[]).includes(e));
}
