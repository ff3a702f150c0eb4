// webhook_deliveries rows → records, for both backends (dates as each driver gives them).
import type { WebhookDeliveryRecord, WebhookDeliveryStatusValue, WebhookEventValue } from "../../domain/webhooks.ts";

export const DELIVERY_COLUMNS = `id, run_id, event, url, payload, status, attempt, http_status, error, created_at, delivered_at, next_attempt_at`;

export interface DeliveryRow<D> {
  id: string;
  run_id: string;
  event: string;
  url: string;
  payload: string;
  status: string;
  attempt: number;
  http_status: number | null;
  error: string | null;
  created_at: D;
  delivered_at: D | null;
  next_attempt_at: D | null;
}

export function toDeliveryRecord<D>(row: DeliveryRow<D>, date: (value: D) => Date): WebhookDeliveryRecord {
  return {
    id: row.id,
    runId: row.run_id,
    event: row.event as WebhookEventValue,
    url: row.url,
    payload: row.payload,
    status: row.status as WebhookDeliveryStatusValue,
    attempt: Number(row.attempt),
    httpStatus: row.http_status === null ? null : Number(row.http_status),
    error: row.error,
    createdAt: date(row.created_at),
    deliveredAt: row.delivered_at === null ? null : date(row.delivered_at),
    nextAttemptAt: row.next_attempt_at === null ? null : date(row.next_attempt_at),
  };
}
