// The tool journal on PostgreSQL: one statement per call on the pool, so an
// outcome recorded on one instance is what a resume on any other reads.
import { groupRows } from "../batch.ts";
import type { PostgresPool } from "../postgres/database.ts";
import { TOOL_CALL_COLUMNS, toToolCallRecord, type ToolCallRow } from "./rows.ts";
import type { NewToolCall, ToolCallKey, ToolCallOutcome, ToolCallRecord, ToolJournal } from "./types.ts";

type Row = ToolCallRow<Date, unknown>;
const toRecord = (row: Row) =>
  toToolCallRecord(
    row,
    (date) => date,
    (value) => value,
  );
const KEY = "conversation_id = $1 AND tool_call_id = $2 AND attempt = $3";

const SQL = {
  insert: `INSERT INTO tool_calls (conversation_id, tool_call_id, attempt, run_id, name, args, state, started_at)
    VALUES ($1, $2, $3, $4, $5, $6::jsonb, 'started', $7) RETURNING ${TOOL_CALL_COLUMNS}`,
  finish: `UPDATE tool_calls SET state = $4, result = $5::jsonb, finished_at = $6 WHERE ${KEY} AND state IN ('started', 'in_doubt') RETURNING ${TOOL_CALL_COLUMNS}`,
  inDoubt: `UPDATE tool_calls SET state = CASE WHEN state = 'started' THEN 'in_doubt' ELSE state END WHERE ${KEY} RETURNING ${TOOL_CALL_COLUMNS}`,
  latest: `SELECT ${TOOL_CALL_COLUMNS} FROM tool_calls WHERE conversation_id = $1 AND tool_call_id = $2 ORDER BY attempt DESC LIMIT 1`,
  byRuns: `SELECT ${TOOL_CALL_COLUMNS} FROM tool_calls WHERE run_id = ANY($1) ORDER BY started_at, tool_call_id, attempt`,
};

export class PostgresToolJournal implements ToolJournal {
  readonly #pool: PostgresPool;

  constructor(pool: PostgresPool) {
    this.#pool = pool;
  }

  async start(call: NewToolCall): Promise<ToolCallRecord> {
    const { rows } = await this.#pool.query<Row>({
      name: "runledger_toolJournal_insert",
      text: SQL.insert,
      values: [call.conversationId, call.toolCallId, call.attempt, call.runId, call.name, JSON.stringify(call.args ?? null), call.startedAt],
    });
    return toRecord(rows[0]!);
  }

  async finish(key: ToolCallKey, outcome: ToolCallOutcome): Promise<ToolCallRecord | null> {
    const { rows } = await this.#pool.query<Row>({
      name: "runledger_toolJournal_finish",
      text: SQL.finish,
      values: [key.conversationId, key.toolCallId, key.attempt, outcome.state, JSON.stringify(outcome.result ?? null), outcome.finishedAt],
    });
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async markInDoubt(key: ToolCallKey): Promise<ToolCallRecord | null> {
    const { rows } = await this.#pool.query<Row>({
      name: "runledger_toolJournal_inDoubt",
      text: SQL.inDoubt,
      values: [key.conversationId, key.toolCallId, key.attempt],
    });
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async latest(conversationId: string, toolCallId: string): Promise<ToolCallRecord | null> {
    const { rows } = await this.#pool.query<Row>({ name: "runledger_toolJournal_latest", text: SQL.latest, values: [conversationId, toolCallId] });
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async byRuns(runIds: readonly string[]): Promise<Map<string, ToolCallRecord[]>> {
    if (runIds.length === 0) return new Map();
    const { rows } = await this.#pool.query<Row>({ name: "runledger_toolJournal_byRuns", text: SQL.byRuns, values: [[...runIds]] });
    return groupRows(runIds, rows, (row) => row.run_id, toRecord);
  }
}
