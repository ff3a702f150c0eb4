// runledger's rows as the SQLite file holds them. Dates are ISO 8601 text in the
// format Prisma's SQLite client writes ("2026-11-30T14:02:00.000+00:00"), which
// databases made by earlier versions hold: one format keeps text comparison and
// ORDER BY chronological. JSON columns are text. The records come from the
// shared codec (../rows.ts).
import * as rows from "../rows.ts";

export { CONVERSATION_COLUMNS, IDEMPOTENCY_COLUMNS, INTERRUPT_COLUMNS, RUN_COLUMNS } from "../rows.ts";

/** A stored DATETIME: ISO 8601 text, or SQLite's CURRENT_TIMESTAMP default ("YYYY-MM-DD HH:MM:SS", UTC). */
export function parseSqliteDate(value: string | number): Date {
  if (typeof value === "number") return new Date(value);
  return new Date(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$/.test(value) ? `${value.replace(" ", "T")}Z` : value);
}

export function formatSqliteDate(date: Date): string {
  return `${date.toISOString().slice(0, -1)}+00:00`;
}

type SqliteDate = string | number;
export type ConversationRow = rows.ConversationRow<SqliteDate>;
export type RunRow = rows.RunRow<SqliteDate, string>;
export type OwnerRow = rows.OwnerRow<SqliteDate>;
export type InterruptRow = rows.InterruptRow<SqliteDate, string>;
export type IdempotencyRow = rows.IdempotencyRow<SqliteDate>;

export const { toConversationRecord, toRunRecord, toOwnerRecord, toInterruptRecord, toIdempotencyRecord } = rows.rowCodec<SqliteDate, string>({
  date: parseSqliteDate,
  json: (text) => JSON.parse(text),
});
