// The run event store on PostgreSQL: a batch is one statement (unnest of the
// columns), so it commits whole; reads on the pool, from any instance.
import { groupRows } from "../batch.ts";
import type { PostgresPool } from "../postgres/database.ts";
import { RUN_EVENT_COLUMNS, runEventValues, toRunEventRecord, type RunEventRow } from "./rows.ts";
import type { RunEventStore, StoredRunEvent } from "./types.ts";

type Row = RunEventRow<Date, unknown>;
const toRecord = (row: Row) =>
  toRunEventRecord(
    row,
    (date) => date,
    (value) => value,
  );

const SQL = {
  insert: `INSERT INTO run_events (${RUN_EVENT_COLUMNS})
    SELECT $1, e.seq, e.kind, e.name, e.data::jsonb, e.message_id, e.node, e.at
    FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[]) AS e(seq, kind, name, data, message_id, node, at)
    ON CONFLICT (run_id, seq) DO NOTHING`,
  byRuns: `SELECT ${RUN_EVENT_COLUMNS} FROM run_events WHERE run_id = ANY($1) ORDER BY run_id, seq`,
};

export class PostgresRunEventStore implements RunEventStore {
  readonly #pool: PostgresPool;

  constructor(pool: PostgresPool) {
    this.#pool = pool;
  }

  async record(runId: string, events: readonly StoredRunEvent[]): Promise<void> {
    if (events.length === 0) return;
    const rows = events.map(runEventValues);
    await this.#pool.query({
      name: "runledger_runEvents_insert",
      text: SQL.insert,
      values: [
        runId,
        rows.map((r) => r.seq),
        rows.map((r) => r.kind),
        rows.map((r) => r.name),
        rows.map((r) => r.data),
        rows.map((r) => r.messageId),
        rows.map((r) => r.node),
        rows.map((r) => r.at),
      ],
    });
  }

  async byRuns(runIds: readonly string[]): Promise<Map<string, StoredRunEvent[]>> {
    if (runIds.length === 0) return new Map();
    const { rows } = await this.#pool.query<Row>({ name: "runledger_runEvents_byRuns", text: SQL.byRuns, values: [[...runIds]] });
    return groupRows(runIds, rows, (row) => row.run_id, toRecord);
  }
}
