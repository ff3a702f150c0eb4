// The deliverer's side of the outbox in the SQLite file: a look on the reader
// first (nothing due: no write lock), then a claim in one write transaction,
// BEGIN IMMEDIATE, so two processes on one file never lease the same delivery.
import type { WebhookDeliveryRecord } from "../../domain/webhooks.ts";
import { groupRows } from "../batch.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { formatSqliteDate, parseSqliteDate } from "../sqlite/rows.ts";
import type { WriteGate } from "../sqlite/write-gate.ts";
import { DELIVERY_COLUMNS, toDeliveryRecord, type DeliveryRow } from "./rows.ts";
import type { WebhookAttempt, WebhookStore } from "./types.ts";

type Row = DeliveryRow<string | number>;
const toRecord = (row: Row) => toDeliveryRecord(row, parseSqliteDate);
const DUE = `status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)`;

export class SqliteWebhookStore implements WebhookStore {
  readonly #gate: WriteGate;
  readonly #writer: SqliteDatabase;
  readonly #w;
  readonly #r;

  constructor(options: { writer: SqliteDatabase; reader: SqliteDatabase; gate: WriteGate }) {
    const { writer, reader, gate } = options;
    this.#gate = gate;
    this.#writer = writer;
    this.#w = {
      due: writer.prepare<[string, string, number], Row>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ${DUE} ORDER BY next_attempt_at, id LIMIT ?`,
      ),
      lease: writer.prepare<[string, string, string]>(`UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ? WHERE id = ?`),
      record: writer.prepare(
        `UPDATE webhook_deliveries SET status = @status, attempt = attempt + 1, http_status = @httpStatus, error = @error,
           delivered_at = @deliveredAt, next_attempt_at = @nextAttemptAt, lease_owner = NULL, lease_until = NULL
         WHERE id = @id AND lease_owner = @owner`,
      ),
    };
    this.#r = {
      anyDue: reader.prepare<[string, string], { id: string }>(`SELECT id FROM webhook_deliveries WHERE ${DUE} LIMIT 1`),
      ofRuns: reader.prepare<[string], Row>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, id`,
      ),
      pending: reader.prepare<[], { n: number }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`),
    };
  }

  async claimDue(ownerId: string, now: Date, limit: number, leaseMs: number): Promise<WebhookDeliveryRecord[]> {
    const at = formatSqliteDate(now);
    if (!this.#r.anyDue.get(at, at)) return [];
    const until = formatSqliteDate(new Date(now.getTime() + leaseMs));
    return this.#gate.run(() =>
      this.#writer
        .transaction(() => {
          const rows = this.#w.due.all(at, at, limit);
          for (const row of rows) this.#w.lease.run(ownerId, until, row.id);
          return rows.map(toRecord);
        })
        .immediate(),
    );
  }

  async recordAttempt(id: string, ownerId: string, attempt: WebhookAttempt): Promise<boolean> {
    const changes = await this.#gate.run(
      () =>
        this.#w.record.run({
          id,
          owner: ownerId,
          status: attempt.status,
          httpStatus: attempt.httpStatus,
          error: attempt.error,
          deliveredAt: attempt.status === "delivered" ? formatSqliteDate(attempt.at) : null,
          nextAttemptAt: attempt.nextAttemptAt ? formatSqliteDate(attempt.nextAttemptAt) : null,
        }).changes,
    );
    return changes > 0;
  }

  async deliveriesOf(runIds: readonly string[]): Promise<Map<string, WebhookDeliveryRecord[]>> {
    const rows = runIds.length ? this.#r.ofRuns.all(JSON.stringify(runIds)) : [];
    return groupRows(runIds, rows, (row) => row.run_id, toRecord);
  }

  async pendingCount(): Promise<number> {
    return this.#r.pending.get()!.n;
  }
}
