// The outbox's writes on PostgreSQL, inside the run store's transactions (on
// their client): a run's targets when it is recorded, its deliveries when it
// ends or begins waiting.
import type { InterruptRecord, RunRecord } from "../../domain/records.ts";
import { decodeWebhookEvents, encodeWebhookEvents, webhookDeliveriesFor, type WebhookTarget } from "../../domain/webhooks.ts";
import type { PostgresClient } from "../postgres/database.ts";
import { newDeliveryId } from "./sqlite.ts";

/** With the run's insert. */
export async function recordWebhookTargets(client: PostgresClient, runId: string, targets: readonly WebhookTarget[] | undefined): Promise<void> {
  for (const t of targets ?? [])
    await client.query({
      name: "runledger_webhooks_target",
      text: `INSERT INTO run_webhooks (run_id, url, events) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      values: [runId, t.url, encodeWebhookEvents(t.events)],
    });
}

/** With the run's end (or wait): one pending delivery per target that asked for the event. */
export async function recordWebhookEnd(
  client: PostgresClient,
  run: RunRecord,
  interrupts: readonly Pick<InterruptRecord, "id" | "node" | "value">[],
  at: Date,
): Promise<void> {
  const { rows } = await client.query<{ url: string; events: string }>({
    name: "runledger_webhooks_targets_of",
    text: `SELECT url, events FROM run_webhooks WHERE run_id = $1`,
    values: [run.id],
  });
  if (!rows.length) return;
  const targets = rows.map((t) => ({ url: t.url, events: decodeWebhookEvents(t.events) }));
  for (const d of webhookDeliveriesFor(run, targets, interrupts, at, newDeliveryId))
    await client.query({
      name: "runledger_webhooks_outbox",
      text: `INSERT INTO webhook_deliveries (id, run_id, event, url, payload, status, attempt, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $6)`,
      values: [d.id, d.runId, d.event, d.url, d.payload, at],
    });
}
