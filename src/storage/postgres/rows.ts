// runledger's rows as PostgreSQL returns them (pg gives timestamptz as Date),
// and the records they become.
import type { ConversationRecord, InterruptRecord, OwnerRecord, RunErrorCodeValue, RunKindValue, RunRecord, RunStatusValue } from "../../domain/records.ts";

export const CONVERSATION_COLUMNS = "id, title, created_at, updated_at, message_count, agent, forked_from_conversation_id, forked_from_checkpoint_id";
export const RUN_COLUMNS = `id, conversation_id, kind, status, input, error_code, error_message, partial_output,
  started_at, finished_at, start_mark, end_mark, last_event_seq, owner_id, start_checkpoint_id,
  input_tokens, output_tokens, model_calls, time_to_first_token_ms, model_duration_ms`;

export interface ConversationRow {
  id: string;
  title: string;
  created_at: Date;
  updated_at: Date;
  message_count: number;
  agent: string;
  forked_from_conversation_id: string | null;
  forked_from_checkpoint_id: string | null;
}

export function toConversationRecord(row: ConversationRow): ConversationRecord {
  return {
    id: row.id,
    title: row.title,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
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
  started_at: Date;
  finished_at: Date | null;
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
  started_at: Date;
  heartbeat_at: Date;
}

export function toOwnerRecord(row: OwnerRow): OwnerRecord {
  return { id: row.id, pid: row.pid, host: row.host, startedAt: row.started_at, heartbeatAt: row.heartbeat_at };
}

export const INTERRUPT_COLUMNS = "run_id, id, conversation_id, node, value, created_at, answered_by_run_id, answer, answered_at";

/** `value` and `answer` are jsonb: pg parses them. */
export interface InterruptRow {
  run_id: string;
  id: string;
  conversation_id: string;
  node: string;
  value: unknown;
  created_at: Date;
  answered_by_run_id: string | null;
  answer: unknown;
  answered_at: Date | null;
}

export function toInterruptRecord(row: InterruptRow): InterruptRecord {
  return {
    id: row.id,
    runId: row.run_id,
    conversationId: row.conversation_id,
    node: row.node,
    value: row.value,
    createdAt: row.created_at,
    answeredByRunId: row.answered_by_run_id,
    answer: row.answer,
    answeredAt: row.answered_at,
  };
}
