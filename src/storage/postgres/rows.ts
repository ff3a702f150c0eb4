// runledger's rows as PostgreSQL returns them: pg gives timestamptz as Date and
// parses jsonb. The records come from the shared codec (../rows.ts).
import * as rows from "../rows.ts";

export { CONVERSATION_COLUMNS, IDEMPOTENCY_COLUMNS, INTERRUPT_COLUMNS, RUN_COLUMNS } from "../rows.ts";

export type ConversationRow = rows.ConversationRow<Date>;
export type RunRow = rows.RunRow<Date, unknown>;
export type OwnerRow = rows.OwnerRow<Date>;
export type InterruptRow = rows.InterruptRow<Date, unknown>;
export type IdempotencyRow = rows.IdempotencyRow<Date>;

export const { toConversationRecord, toRunRecord, toOwnerRecord, toInterruptRecord, toIdempotencyRecord } = rows.rowCodec<Date, unknown>({
  date: (value) => value,
  json: (value) => value,
});
