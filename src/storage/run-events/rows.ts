// A `run_events` row and its record, for both backends: each passes how its
// driver returns a timestamp and a JSON column (SQLite: text; PostgreSQL: a Date
// and parsed jsonb).
import type { StoredRunEvent } from "./types.ts";

export const RUN_EVENT_COLUMNS = "run_id, seq, kind, name, data, message_id, node, at";

export interface RunEventRow<D, J> {
  run_id: string;
  seq: number;
  kind: string;
  name: string | null;
  data: J | null;
  message_id: string | null;
  node: string | null;
  at: D;
}

export function toRunEventRecord<D, J>(row: RunEventRow<D, J>, date: (value: D) => Date, json: (value: J) => unknown): StoredRunEvent {
  const seq = Number(row.seq);
  const at = date(row.at);
  if (row.kind === "message") return { kind: "message", seq, at, messageId: row.message_id ?? "", node: row.node ?? "" };
  return { kind: "custom", seq, at, name: row.name ?? "", data: row.data === null ? null : json(row.data) };
}

/** The columns of one event, in RUN_EVENT_COLUMNS order after run_id; `data` as JSON text. */
export function runEventValues(event: StoredRunEvent): {
  seq: number;
  kind: string;
  name: string | null;
  data: string | null;
  messageId: string | null;
  node: string | null;
  at: Date;
} {
  return event.kind === "custom"
    ? { seq: event.seq, kind: "custom", name: event.name, data: JSON.stringify(event.data ?? null), messageId: null, node: null, at: event.at }
    : { seq: event.seq, kind: "message", name: null, data: null, messageId: event.messageId, node: event.node, at: event.at };
}
