// The outbox's writes on SQLite, inside the run store's transactions: a run's
// targets when it is recorded, its deliveries when it ends or begins waiting.
// Synchronous, like every statement in a better-sqlite3 transaction.
import { randomUUID } from "node:crypto";
import type { InterruptRecord, RunRecord } from "../../domain/records.ts";
import { decodeWebhookEvents, encodeWebhookEvents, webhookDeliveriesFor, type WebhookTarget } from "../../domain/webhooks.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { formatSqliteDate } from "../sqlite/rows.ts";

export type SqliteOutbox = ReturnType<typeof sqliteOutbox>;

export function sqliteOutbox(writer: SqliteDatabase) {
  const insertTarget = writer.prepare(`INSERT OR IGNORE INTO run_webhooks (run_id, url, events) VALUES (?, ?, ?)`);
  const targetsOf = writer.prepare<[string], { url: string; events: string }>(`SELECT url, events FROM run_webhooks WHERE run_id = ?`);
  const insertDelivery = writer.prepare(
    `INSERT INTO webhook_deliveries (id, run_id, event, url, payload, status, attempt, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)`,
  );
  return {
    /** With the run's insert. */
    recordTargets(runId: string, targets: readonly WebhookTarget[] | undefined): void {
      for (const t of targets ?? []) insertTarget.run(runId, t.url, encodeWebhookEvents(t.events));
    },
    /** With the run's end (or wait): one pending delivery per target that asked for the event. */
    recordEnd(run: RunRecord, interrupts: readonly Pick<InterruptRecord, "id" | "node" | "value">[], at: Date): void {
      const targets = targetsOf.all(run.id).map((t) => ({ url: t.url, events: decodeWebhookEvents(t.events) }));
      if (!targets.length) return;
      const when = formatSqliteDate(at);
      for (const d of webhookDeliveriesFor(run, targets, interrupts, at, newDeliveryId))
        insertDelivery.run(d.id, d.runId, d.event, d.url, d.payload, when, when);
    },
  };
}

/** A Standard Webhooks message id. */
export function newDeliveryId(): string {
  return `msg_${randomUUID().replaceAll("-", "")}`;
}
