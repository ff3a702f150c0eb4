// The webhooks seam: the outbox of deliveries (`webhook_deliveries`) and each
// run's targets (`run_webhooks`). The run store writes both inside its own
// transactions (src/storage/outbox): targets with the run,
// deliveries with its end. This store is the deliverer's side: claim what is
// due, record each attempt, and read a run's deliveries. Backends: sqlite.ts,
// postgres.ts; test/conformance/webhooks.ts holds both to the same rules.
import type { WebhookDeliveryRecord } from "../../domain/webhooks.ts";

/** What one attempt to send a delivery came to. */
export interface WebhookAttempt {
  at: Date;
  /** delivered (a 2xx), pending (to be sent again at nextAttemptAt) or failed (given up). */
  status: WebhookDeliveryRecord["status"];
  httpStatus: number | null;
  error: string | null;
  nextAttemptAt: Date | null;
}

export interface WebhookStore {
  /**
   * Leases up to `limit` pending deliveries due at `now` (next_attempt_at
   * passed, no live lease) to `ownerId` until `now + leaseMs`, soonest first,
   * in one transaction no other claim interleaves with (PostgreSQL: FOR UPDATE
   * SKIP LOCKED), so each is sent by one instance at a time. An instance that
   * dies holding a lease leaves the delivery to another once it runs out.
   */
  claimDue(ownerId: string, now: Date, limit: number, leaseMs: number): Promise<WebhookDeliveryRecord[]>;
  /** Records an attempt and frees the lease; false (nothing written) when `ownerId` no longer holds it. */
  recordAttempt(id: string, ownerId: string, attempt: WebhookAttempt): Promise<boolean>;
  /** Each run's deliveries, oldest first; every run asked for gets a list. */
  deliveriesOf(runIds: readonly string[]): Promise<Map<string, WebhookDeliveryRecord[]>>;
  /** How many deliveries are pending (metrics). */
  pendingCount(): Promise<number>;
}
