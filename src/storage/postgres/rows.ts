// runledger's rows as PostgreSQL returns them (pg gives timestamptz as Date),
// and the records they become.
import type { ConversationRecord, OwnerRecord, RunErrorCodeValue, RunKindValue, RunRecord, RunStatusValue } from "../../domain/records.ts";

export const CONVERSATION_COLUMNS = "id, title, created_at, updated_at, message_count";
export const RUN_COLUMNS = `id, conversation_id, kind, status, input, error_code, error_message, partial_output,
  started_at, finished_at, start_mark, end_mark, last_event_seq, owner_id`;

export interface ConversationRow {
  id: string;
  title: string;
  created_at: Date;
  updated_at: Date;
  message_count: number;
}

export function toConversationRecord(row: ConversationRow): ConversationRecord {
  return { id: row.id, title: row.title, createdAt: row.created_at, updatedAt: row.updated_at, messageCount: row.message_count };
}

export interface RunRow {
  id: string;
  conversation_id: string;
  kind: string;
  status: string;
  input: string | null;
  error_code: string | null;
  error_message: string | null;
  partial_output: string | null;
  started_at: Date;
  finished_at: Date | null;
  start_mark: string;
  end_mark: string | null;
  last_event_seq: number;
  owner_id: string | null;
}

/** The table's CHECK constraints hold kind, status and error_code to the domain's values. */
export function toRunRecord(row: RunRow): RunRecord {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    kind: row.kind as RunKindValue,
    status: row.status as RunStatusValue,
    input: row.input,
    errorCode: row.error_code as RunErrorCodeValue | null,
    errorMessage: row.error_message,
    partialOutput: row.partial_output,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    startMark: row.start_mark,
    endMark: row.end_mark,
    lastEventSeq: row.last_event_seq,
    ownerId: row.owner_id,
  };
}

export interface OwnerRow {
  id: string;
  pid: number;
  host: string;
  started_at: Date;
  heartbeat_at: Date;
}

export function toOwnerRecord(row: OwnerRow): OwnerRecord {
  return { id: row.id, pid: row.pid, host: row.host, startedAt: row.started_at, heartbeatAt: row.heartbeat_at };
}
