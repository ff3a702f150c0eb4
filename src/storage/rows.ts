// runledger's rows and the records they become, for every backend: one codec,
// told by each backend how its driver hands over dates and JSON columns. The
// backends then differ only in SQL.
import type {
  ConversationRecord,
  IdempotencyRecord,
  InterruptRecord,
  OwnerRecord,
  RunErrorCodeValue,
  RunKindValue,
  RunRecord,
  RunStatusValue,
} from "../domain/records.ts";

/** How a backend's driver returns a timestamp column (`D`) and a JSON column (`J`). */
export interface ColumnDecoders<D, J> {
  date(value: D): Date;
  json(value: J): unknown;
}

export const CONVERSATION_COLUMNS =
  "id, title, created_at, updated_at, message_count, agent, forked_from_conversation_id, forked_from_checkpoint_id, owner, expires_at";

export const RUN_COLUMNS = `id, conversation_id, kind, status, input, error_code, error_message, partial_output,
  started_at, finished_at, start_mark, end_mark, last_event_seq, owner_id, start_checkpoint_id,
  input_tokens, output_tokens, model_calls, time_to_first_token_ms, model_duration_ms,
  started_by, started_by_role, endpoint, queued_at, queue_reason, trace_parent, edit`;

export const INTERRUPT_COLUMNS = "run_id, id, conversation_id, node, value, created_at, answered_by_run_id, answer, answered_at";

export interface ConversationRow<D> {
  id: string;
  title: string;
  created_at: D;
  updated_at: D;
  message_count: number;
  agent: string;
  forked_from_conversation_id: string | null;
  forked_from_checkpoint_id: string | null;
  owner: string | null;
  expires_at?: D | null;
}

export interface RunRow<D, J = unknown> {
  id: string;
  conversation_id: string;
  kind: string;
  status: string;
  input: string | null;
  error_code: string | null;
  error_message: string | null;
  partial_output: string | null;
  started_at: D;
  finished_at: D | null;
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
  started_by: string | null;
  started_by_role: string | null;
  endpoint: string | null;
  queued_at: D | null;
  queue_reason: string | null;
  trace_parent: string | null;
  edit: J | null;
}

export interface OwnerRow<D> {
  id: string;
  pid: number;
  host: string;
  started_at: D;
  heartbeat_at: D;
}

export interface InterruptRow<D, J> {
  run_id: string;
  id: string;
  conversation_id: string;
  node: string;
  value: J;
  created_at: D;
  answered_by_run_id: string | null;
  answer: J | null;
  answered_at: D | null;
}

export const IDEMPOTENCY_COLUMNS = "principal, key, operation, request_hash, conversation_id, run_id, created_at";

export interface IdempotencyRow<D> {
  principal: string;
  key: string;
  operation: string;
  request_hash: string;
  conversation_id: string | null;
  run_id: string | null;
  created_at: D;
}

/** The record makers for one backend's rows. */
export function rowCodec<D, J>({ date, json }: ColumnDecoders<D, J>) {
  return {
    toConversationRecord(row: ConversationRow<D>): ConversationRecord {
      return {
        id: row.id,
        title: row.title,
        createdAt: date(row.created_at),
        updatedAt: date(row.updated_at),
        messageCount: row.message_count,
        agent: row.agent,
        forkedFromConversationId: row.forked_from_conversation_id,
        forkedFromCheckpointId: row.forked_from_checkpoint_id,
        owner: row.owner,
        expiresAt: row.expires_at == null ? null : date(row.expires_at),
      };
    },
    /** The table's CHECK constraints hold kind, status and error_code to the domain's values. */
    toRunRecord(row: RunRow<D, J>): RunRecord {
      return {
        id: row.id,
        conversationId: row.conversation_id,
        kind: row.kind as RunKindValue,
        status: row.status as RunStatusValue,
        input: row.input,
        errorCode: row.error_code as RunErrorCodeValue | null,
        errorMessage: row.error_message,
        partialOutput: row.partial_output,
        startedAt: date(row.started_at),
        finishedAt: row.finished_at === null ? null : date(row.finished_at),
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
        startedBy: row.started_by,
        startedByRole: row.started_by_role as RunRecord["startedByRole"],
        endpoint: row.endpoint,
        queuedAt: row.queued_at === null ? null : date(row.queued_at),
        queueReason: row.queue_reason as RunRecord["queueReason"],
        traceParent: row.trace_parent,
        edit: row.edit === null || row.edit === undefined ? null : (json(row.edit) as RunRecord["edit"]),
      };
    },
    toIdempotencyRecord(row: IdempotencyRow<D>): IdempotencyRecord {
      return {
        principal: row.principal,
        key: row.key,
        operation: row.operation as IdempotencyRecord["operation"],
        requestHash: row.request_hash,
        conversationId: row.conversation_id,
        runId: row.run_id,
        createdAt: date(row.created_at),
      };
    },
    toOwnerRecord(row: OwnerRow<D>): OwnerRecord {
      return { id: row.id, pid: row.pid, host: row.host, startedAt: date(row.started_at), heartbeatAt: date(row.heartbeat_at) };
    },
    toInterruptRecord(row: InterruptRow<D, J>): InterruptRecord {
      return {
        id: row.id,
        runId: row.run_id,
        conversationId: row.conversation_id,
        node: row.node,
        value: json(row.value),
        createdAt: date(row.created_at),
        answeredByRunId: row.answered_by_run_id,
        answer: row.answer === null ? null : json(row.answer),
        answeredAt: row.answered_at === null ? null : date(row.answered_at),
      };
    },
  };
}
