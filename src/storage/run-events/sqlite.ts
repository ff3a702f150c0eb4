// The run event store in the SQLite file: a batch is one transaction (BEGIN
// IMMEDIATE) on the writer connection, in its turn of the write gate; reads on the reader
// connection, which sees every committed write.
import { groupRows } from "../batch.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { formatSqliteDate, parseSqliteDate } from "../sqlite/rows.ts";
import type { WriteGate } from "../sqlite/write-gate.ts";
import { RUN_EVENT_COLUMNS, runEventValues, toRunEventRecord, type RunEventRow } from "./rows.ts";
import type { RunEventStore, StoredRunEvent } from "./types.ts";

type Row = RunEventRow<string | number, string>;
const toRecord = (row: Row) => toRunEventRecord(row, parseSqliteDate, (text) => JSON.parse(text));

export class SqliteRunEventStore implements RunEventStore {
  readonly #gate: WriteGate;
  readonly #writer: SqliteDatabase;
  readonly #insert;
  readonly #byRuns;

  constructor(options: { writer: SqliteDatabase; reader: SqliteDatabase; gate: WriteGate }) {
    this.#gate = options.gate;
    this.#writer = options.writer;
    this.#insert = options.writer.prepare<[string, number, string, string | null, string | null, string | null, string | null, string]>(
      `INSERT INTO run_events (${RUN_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO NOTHING`,
    );
    this.#byRuns = options.reader.prepare<[string], Row>(
      `SELECT ${RUN_EVENT_COLUMNS} FROM run_events WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, seq`,
    );
  }

  record(runId: string, events: readonly StoredRunEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const rows = events.map(runEventValues);
    return this.#gate.run(() =>
      this.#writer
        .transaction(() => {
          for (const r of rows) this.#insert.run(runId, r.seq, r.kind, r.name, r.data, r.messageId, r.node, formatSqliteDate(r.at));
        })
        .immediate(),
    );
  }

  async byRuns(runIds: readonly string[]): Promise<Map<string, StoredRunEvent[]>> {
    const rows = runIds.length ? this.#byRuns.all(JSON.stringify(runIds)) : [];
    return groupRows(runIds, rows, (row) => row.run_id, toRecord);
  }
}
