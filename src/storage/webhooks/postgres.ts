// The deliverer's side of the outbox on PostgreSQL: a claim leases the due rows
// it locked FOR UPDATE SKIP LOCKED, so instances polling together each take
// different deliveries.
import type { WebhookDeliveryRecord } from "../../domain/webhooks.ts";
import { groupRows } from "../batch.ts";
import type { PostgresPool } from "../postgres/database.ts";
import { DELIVERY_COLUMNS, toDeliveryRecord, type DeliveryRow } from "./rows.ts";
import type { WebhookAttempt, WebhookStore } from "./types.ts";

type Row = DeliveryRow<Date>;
const toRecord = (row: Row) => toDeliveryRecord(row, (d) => d);

const SQL = {
  claim: `UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $3
    WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)
                 ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
    RETURNING ${DELIVERY_COLUMNS}`,
  record: `UPDATE webhook_deliveries SET status = $3, attempt = attempt + 1, http_status = $4, error = $5, delivered_at = $6, next_attempt_at = $7,
      lease_owner = NULL, lease_until = NULL
    WHERE id = $1 AND lease_owner = $2`,
  ofRuns: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE run_id = ANY($1) ORDER BY created_at, id`,
  pending: `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`,
};

export class PostgresWebhookStore implements WebhookStore {
  readonly #pool: PostgresPool;

  constructor(pool: PostgresPool) {
    this.#pool = pool;
  }

  async claimDue(ownerId: string, now: Date, limit: number, leaseMs: number): Promise<WebhookDeliveryRecord[]> {
    const { rows } = await this.#pool.query<Row>({
      name: "runledger_webhooks_claim",
      text: SQL.claim,
      values: [ownerId, now, new Date(now.getTime() + leaseMs), limit],
    });
    return rows.map(toRecord).sort((a, b) => (a.nextAttemptAt?.getTime() ?? 0) - (b.nextAttemptAt?.getTime() ?? 0) || a.id.localeCompare(b.id));
  }

  async recordAttempt(id: string, ownerId: string, attempt: WebhookAttempt): Promise<boolean> {
    const result = await this.#pool.query({
      name: "runledger_webhooks_record",
      text: SQL.record,
      values: [id, ownerId, attempt.status, attempt.httpStatus, attempt.error, attempt.status === "delivered" ? attempt.at : null, attempt.nextAttemptAt],
    });
    return (result.rowCount ?? 0) > 0;
  }

  async deliveriesOf(runIds: readonly string[]): Promise<Map<string, WebhookDeliveryRecord[]>> {
    const rows = runIds.length ? (await this.#pool.query<Row>({ name: "runledger_webhooks_of_runs", text: SQL.ofRuns, values: [runIds] })).rows : [];
    return groupRows(runIds, rows, (row) => row.run_id, toRecord);
  }

  async pendingCount(): Promise<number> {
    const { rows } = await this.#pool.query<{ n: number }>({ name: "runledger_webhooks_pending", text: SQL.pending });
    return rows[0]!.n;
  }
}
