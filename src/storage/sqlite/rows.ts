// runledger's rows as the SQLite file holds them, and the records they become.
// Dates are ISO 8601 text in the format Prisma's SQLite client writes
// ("2026-11-30T14:02:00.000+00:00"), which databases made by earlier versions
// hold: one format keeps text comparison and ORDER BY chronological.
import type { ConversationRecord, InterruptRecord, OwnerRecord, RunErrorCodeValue, RunKindValue, RunRecord, RunStatusValue } from "../../domain/records.ts";

/** A stored DATETIME: ISO 8601 text, or SQLite's CURRENT_TIMESTAMP default ("YYYY-MM-DD HH:MM:SS", UTC). */
export function parseSqliteDate(value: string | number): Date {
  if (typeof value === "number") return new Date(value);
  return new Date(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$/.test(value) ? `${value.replace(" ", "T")}Z` : value);
}

export function formatSqliteDate(date: Date): string {
  return `${date.toISOString().slice(0, -1)}+00:00`;
}

export interface ConversationRow {
  id: string;
  title: string;
  created_at: string | number;
  updated_at: string | number;
  message_count: number;
  agent: string;
  forked_from_conversation_id: string | null;
  forked_from_checkpoint_id: string | null;
}

export const CONVERSATION_COLUMNS = "id, title, created_at, updated_at, message_count, agent, forked_from_conversation_id, forked_from_checkpoint_id";

export function toConversationRecord(row: ConversationRow): ConversationRecord {
  return {
    id: row.id,
    title: row.title,
    createdAt: parseSqliteDate(row.created_at),
    updatedAt: parseSqliteDate(row.updated_at),
    messageCount: row.message_count,
    agent: row.agent,
    forkedFromConversationId: row.forked_from_conversation_id,
    forkedFromCheckpointId: row.forked_from_checkpoint_id,
  };
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
  started_at: string | number;
  finished_at: string | number | null;
  start_mark: string;
  end_mark: string | null;
  last_event_seq: number;
  owner_id: string | null;
  start_checkpoint_id: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  model_calls: number | null;
  time_to_first_token_ms: number | null;
  model_duration_ms: number | null;
}

export const RUN_COLUMNS = `id, conversation_id, kind, status, input, error_code, error_message, partial_output,
  started_at, finished_at, start_mark, end_mark, last_event_seq, owner_id, start_checkpoint_id,
  input_tokens, output_tokens, model_calls, time_to_first_token_ms, model_duration_ms`;

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
    startedAt: parseSqliteDate(row.started_at),
    finishedAt: row.finished_at === null ? null : parseSqliteDate(row.finished_at),
    startMark: row.start_mark,
    endMark: row.end_mark,
    lastEventSeq: row.last_event_seq,
    ownerId: row.owner_id,
    startCheckpointId: row.start_checkpoint_id,
    usage:
      row.model_calls === null
        ? null
        : {
            inputTokens: row.input_tokens ?? 0,
            outputTokens: row.output_tokens ?? 0,
            modelCalls: row.model_calls,
            timeToFirstTokenMs: row.time_to_first_token_ms,
            modelDurationMs: row.model_duration_ms ?? 0,
          },
  };
}

export interface OwnerRow {
  id: string;
  pid: number;
  host: string;
  started_at: string | number;
  heartbeat_at: string | number;
}

export function toOwnerRecord(row: OwnerRow): OwnerRecord {
  return { id: row.id, pid: row.pid, host: row.host, startedAt: parseSqliteDate(row.started_at), heartbeatAt: parseSqliteDate(row.heartbeat_at) };
}

export const INTERRUPT_COLUMNS = "run_id, id, conversation_id, node, value, created_at, answered_by_run_id, answer, answered_at";

export interface InterruptRow {
  run_id: string;
  id: string;
  conversation_id: string;
  node: string;
  value: string;
  created_at: string | number;
  answered_by_run_id: string | null;
  answer: string | null;
  answered_at: string | number | null;
}

export function toInterruptRecord(row: InterruptRow): InterruptRecord {
  return {
    id: row.id,
    runId: row.run_id,
    conversationId: row.conversation_id,
    node: row.node,
    value: JSON.parse(row.value),
    createdAt: parseSqliteDate(row.created_at),
    answeredByRunId: row.answered_by_run_id,
    answer: row.answer === null ? null : JSON.parse(row.answer),
    answeredAt: row.answered_at === null ? null : parseSqliteDate(row.answered_at),
  };
}
