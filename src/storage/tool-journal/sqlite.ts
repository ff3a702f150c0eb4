// The tool journal in the SQLite file: writes on the writer connection, each in
// its turn of the write gate (the gate every write of the file shares); reads on
// the read-only reader connection, which sees every committed write.
import { groupRows } from "../batch.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { formatSqliteDate, parseSqliteDate } from "../sqlite/rows.ts";
import type { WriteGate } from "../sqlite/write-gate.ts";
import { TOOL_CALL_COLUMNS, toToolCallRecord, type ToolCallRow } from "./rows.ts";
import type { NewToolCall, ToolCallKey, ToolCallOutcome, ToolCallRecord, ToolJournal } from "./types.ts";

type Row = ToolCallRow<string | number, string>;
const toRecord = (row: Row) => toToolCallRecord(row, parseSqliteDate, (text) => JSON.parse(text));
const KEY = "conversation_id = ? AND tool_call_id = ? AND attempt = ?";

export class SqliteToolJournal implements ToolJournal {
  readonly #gate: WriteGate;
  readonly #w;
  readonly #r;

  constructor(options: { writer: SqliteDatabase; reader: SqliteDatabase; gate: WriteGate }) {
    this.#gate = options.gate;
    const { writer, reader } = options;
    this.#w = {
      insert: writer.prepare<[string, string, number, string, string, string, string]>(
        `INSERT INTO tool_calls (conversation_id, tool_call_id, attempt, run_id, name, args, state, started_at) VALUES (?, ?, ?, ?, ?, ?, 'started', ?)`,
      ),
      finish: writer.prepare<[string, string, string, string, string, number]>(
        `UPDATE tool_calls SET state = ?, result = ?, finished_at = ? WHERE ${KEY} AND state IN ('started', 'in_doubt')`,
      ),
      inDoubt: writer.prepare<[string, string, number]>(`UPDATE tool_calls SET state = 'in_doubt' WHERE ${KEY} AND state = 'started'`),
      get: writer.prepare<[string, string, number], Row>(`SELECT ${TOOL_CALL_COLUMNS} FROM tool_calls WHERE ${KEY}`),
    };
    this.#r = {
      latest: reader.prepare<[string, string], Row>(
        `SELECT ${TOOL_CALL_COLUMNS} FROM tool_calls WHERE conversation_id = ? AND tool_call_id = ? ORDER BY attempt DESC LIMIT 1`,
      ),
      byRuns: reader.prepare<[string], Row>(
        `SELECT ${TOOL_CALL_COLUMNS} FROM tool_calls WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY started_at, tool_call_id, attempt`,
      ),
    };
  }

  start(call: NewToolCall): Promise<ToolCallRecord> {
    const args = JSON.stringify(call.args ?? null);
    return this.#gate.run(() => {
      this.#w.insert.run(call.conversationId, call.toolCallId, call.attempt, call.runId, call.name, args, formatSqliteDate(call.startedAt));
      return toRecord(this.#w.get.get(call.conversationId, call.toolCallId, call.attempt)!);
    });
  }

  finish(key: ToolCallKey, outcome: ToolCallOutcome): Promise<ToolCallRecord | null> {
    const result = JSON.stringify(outcome.result ?? null);
    return this.#gate.run(() => {
      const changed = this.#w.finish.run(outcome.state, result, formatSqliteDate(outcome.finishedAt), key.conversationId, key.toolCallId, key.attempt).changes;
      return changed ? toRecord(this.#w.get.get(key.conversationId, key.toolCallId, key.attempt)!) : null;
    });
  }

  markInDoubt(key: ToolCallKey): Promise<ToolCallRecord | null> {
    return this.#gate.run(() => {
      this.#w.inDoubt.run(key.conversationId, key.toolCallId, key.attempt);
      const row = this.#w.get.get(key.conversationId, key.toolCallId, key.attempt);
      return row ? toRecord(row) : null;
    });
  }

  async latest(conversationId: string, toolCallId: string): Promise<ToolCallRecord | null> {
    const row = this.#r.latest.get(conversationId, toolCallId);
    return row ? toRecord(row) : null;
  }

  async byRuns(runIds: readonly string[]): Promise<Map<string, ToolCallRecord[]>> {
    const rows = runIds.length ? this.#r.byRuns.all(JSON.stringify(runIds)) : [];
    return groupRows(runIds, rows, (row) => row.run_id, toRecord);
  }
}
