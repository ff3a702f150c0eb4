// A `tool_calls` row and its record, for both backends: each passes how its
// driver returns a timestamp and a JSON column (SQLite: text; PostgreSQL: a Date
// and parsed jsonb).
import type { ToolCallRecord, ToolCallState } from "./types.ts";

export const TOOL_CALL_COLUMNS = "conversation_id, tool_call_id, attempt, run_id, name, args, state, result, started_at, finished_at";

export interface ToolCallRow<D, J> {
  conversation_id: string;
  tool_call_id: string;
  attempt: number;
  run_id: string;
  name: string;
  args: J;
  state: string;
  result: J | null;
  started_at: D;
  finished_at: D | null;
}

export function toToolCallRecord<D, J>(row: ToolCallRow<D, J>, date: (value: D) => Date, json: (value: J) => unknown): ToolCallRecord {
  return {
    conversationId: row.conversation_id,
    toolCallId: row.tool_call_id,
    attempt: Number(row.attempt),
    runId: row.run_id,
    name: row.name,
    args: json(row.args),
    state: row.state as ToolCallState,
    result: row.result === null ? null : json(row.result),
    startedAt: date(row.started_at),
    finishedAt: row.finished_at === null ? null : date(row.finished_at),
  };
}
