// The checkpoint read model on the SQLite file: SqliteSaver's `checkpoints` and
// `writes` tables, read on the reader connection. SqliteSaver stores a
// checkpoint as one JSON blob with its channel values inside, so fields come out
// with json_extract and no history is deserialized here. Lists of ids travel as
// one JSON parameter (json_each), so each method is one statement however many ids.
import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { ERROR_CHANNEL, type CheckpointRecord, type CheckpointSourceValue, type CheckpointWriteRecord } from "../../domain/records.ts";
import { holdsSql, windowEndSql } from "../../correlation/index.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import type { CheckpointContentRecord, CheckpointPageWindow, CheckpointReads, ThreadCheckpoints, WindowQuery } from "./types.ts";

const CHECKPOINT_COLUMNS = `
  thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
  json_extract(CAST(checkpoint AS TEXT), '$.ts') AS ts,
  json_extract(CAST(metadata AS TEXT), '$.step') AS step,
  json_extract(CAST(metadata AS TEXT), '$.source') AS source`;

const WRITE_COLUMNS = `thread_id, checkpoint_id, task_id, channel, idx, type, CAST(value AS TEXT) AS value`;

// MATERIALIZED: the windows are decoded once, then each drives a primary-key
// range scan; inlined, SQLite would decode them again for every row compared.
// An open window is bounded too (OPEN_WINDOW_END), so no scan reads on to the end of the thread.
export const CHECKPOINTS_IN_WINDOWS_SQL = `WITH w AS MATERIALIZED (
    SELECT json_extract(value, '$.key') AS window_key, json_extract(value, '$.threadId') AS t,
      json_extract(value, '$.startMark') AS lo, ${windowEndSql("sqlite", "json_extract(value, '$.endMark')")} AS hi
    FROM json_each(?))
  SELECT w.window_key, ${CHECKPOINT_COLUMNS} FROM w
  JOIN checkpoints ON checkpoint_ns = '' AND thread_id = w.t AND ${holdsSql("sqlite", "checkpoint_id", "w.lo", "w.hi")}
  ORDER BY w.window_key, checkpoint_id`;

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  ts: string | null;
  step: number | null;
  source: string | null;
}

interface WriteRow {
  thread_id: string;
  checkpoint_id: string;
  task_id: string;
  channel: string;
  idx: number;
  type: string | null;
  value: string | null;
}

interface ContentRow {
  thread_id: string;
  checkpoint_id: string;
  type: string | null;
  message_count: number | null;
  last_message: string | null;
}

export class SqliteCheckpointReads implements CheckpointReads {
  readonly #db: SqliteDatabase;
  /** SqliteSaver's serializer: revives the LangChain messages stored in a blob. */
  readonly #serde: SerializerProtocol;

  /** `db`: a connection to a file that holds SqliteSaver's tables and runledger's (the reader). */
  constructor(db: SqliteDatabase, serde: SerializerProtocol = new JsonPlusSerializer()) {
    this.#db = db;
    this.#serde = serde;
  }

  async threads(threadIds: readonly string[]): Promise<Map<string, ThreadCheckpoints>> {
    const result = new Map<string, ThreadCheckpoints>();
    for (const id of threadIds) result.set(id, { checkpoints: [], errorWrites: [] });
    if (threadIds.length === 0) return result;
    const ids = JSON.stringify(threadIds);
    // One read transaction: the failed tasks are those of the checkpoints read.
    const read = this.#db.transaction(() => ({
      checkpoints: this.#all<CheckpointRow>(
        `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
         WHERE checkpoint_ns = '' AND thread_id IN (SELECT value FROM json_each(?)) ORDER BY thread_id, checkpoint_id`,
        ids,
      ),
      errors: this.#all<WriteRow>(
        `SELECT ${WRITE_COLUMNS} FROM writes
         WHERE checkpoint_ns = '' AND channel = ? AND thread_id IN (SELECT value FROM json_each(?)) ORDER BY thread_id, checkpoint_id, task_id, idx`,
        ERROR_CHANNEL,
        ids,
      ),
    }));
    const { checkpoints, errors } = read.deferred();
    for (const row of checkpoints) result.get(row.thread_id)?.checkpoints.push(toCheckpoint(row));
    for (const row of errors) result.get(row.thread_id)?.errorWrites.push(toWrite(row));
    return result;
  }

  async checkpointsInWindows(windows: readonly WindowQuery[]): Promise<Map<string, CheckpointRecord[]>> {
    const result = new Map<string, CheckpointRecord[]>(windows.map((w) => [w.key, []]));
    if (windows.length === 0) return result;
    // A range scan of the primary key per window: only the checkpoints asked for
    // are read and their JSON extracted, not the whole thread's.
    const rows = this.#all<CheckpointRow & { window_key: string }>(
      CHECKPOINTS_IN_WINDOWS_SQL,
      JSON.stringify(windows.map(({ key, threadId, startMark, endMark }) => ({ key, threadId, startMark, endMark }))),
    );
    for (const row of rows) result.get(row.window_key)?.push(toCheckpoint(row));
    return result;
  }

  async pages(threadIds: readonly string[], window: CheckpointPageWindow): Promise<Map<string, CheckpointRecord[]>> {
    const result = new Map<string, CheckpointRecord[]>(threadIds.map((id) => [id, []]));
    if (threadIds.length === 0 || window.limit <= 0) return result;
    // ROW_NUMBER per thread takes the same window of every conversation in one statement.
    const rows = this.#all<CheckpointRow>(
      `SELECT * FROM (
         SELECT ${CHECKPOINT_COLUMNS},
           ROW_NUMBER() OVER (PARTITION BY thread_id ORDER BY checkpoint_id ${window.fromEnd ? "DESC" : "ASC"}) AS position
         FROM checkpoints
         WHERE checkpoint_ns = '' AND thread_id IN (SELECT value FROM json_each(@ids))
           AND (@after IS NULL OR checkpoint_id > @after)
           AND (@before IS NULL OR checkpoint_id < @before)
       ) WHERE position <= @limit
       ORDER BY thread_id, checkpoint_id`,
      { ids: JSON.stringify(threadIds), after: window.after, before: window.before, limit: window.limit },
    );
    for (const row of rows) result.get(row.thread_id)?.push(toCheckpoint(row));
    return result;
  }

  async heads(threadIds: readonly string[]): Promise<Map<string, string>> {
    if (threadIds.length === 0) return new Map();
    const rows = this.#all<{ thread_id: string; head: string }>(
      `SELECT thread_id, max(checkpoint_id) AS head FROM checkpoints WHERE checkpoint_ns = '' AND thread_id IN (SELECT value FROM json_each(?)) GROUP BY thread_id`,
      JSON.stringify(threadIds),
    );
    return new Map(rows.map((r) => [r.thread_id, r.head]));
  }

  async checkpointsByIds(ids: readonly string[]): Promise<CheckpointRecord[]> {
    if (ids.length === 0) return [];
    const rows = this.#all<CheckpointRow>(
      `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
       WHERE checkpoint_ns = '' AND checkpoint_id IN (SELECT value FROM json_each(?))
         AND thread_id IN (SELECT id FROM conversations)
       ORDER BY thread_id, checkpoint_id`,
      JSON.stringify(ids),
    );
    return rows.map(toCheckpoint);
  }

  async writes(checkpoints: readonly { threadId: string; checkpointId: string }[]): Promise<CheckpointWriteRecord[]> {
    if (checkpoints.length === 0) return [];
    const wanted = new Set(checkpoints.map((c) => `${c.threadId} ${c.checkpointId}`));
    const rows = this.#all<WriteRow>(
      `SELECT ${WRITE_COLUMNS} FROM writes
       WHERE checkpoint_ns = '' AND checkpoint_id IN (SELECT value FROM json_each(?))
       ORDER BY thread_id, checkpoint_id, task_id, idx`,
      JSON.stringify([...new Set(checkpoints.map((c) => c.checkpointId))]),
    );
    return rows.filter((r) => wanted.has(`${r.thread_id} ${r.checkpoint_id}`)).map(toWrite);
  }

  async contents(checkpoints: readonly { threadId: string; checkpointId: string }[]): Promise<CheckpointContentRecord[]> {
    if (checkpoints.length === 0) return [];
    const wanted = new Set(checkpoints.map((c) => `${c.threadId} ${c.checkpointId}`));
    // SqliteSaver stores each checkpoint's channel values whole, so the message
    // list is in the blob: count it and take the last one without reviving the rest.
    const rows = this.#all<ContentRow>(
      `SELECT thread_id, checkpoint_id, type,
         json_array_length(doc, '$.channel_values.messages') AS message_count,
         json_extract(doc, '$.channel_values.messages[#-1]') AS last_message
       FROM (SELECT thread_id, checkpoint_id, type, jsonb(CAST(checkpoint AS TEXT)) AS doc FROM checkpoints
             WHERE checkpoint_ns = '' AND checkpoint_id IN (SELECT value FROM json_each(?)))`,
      JSON.stringify([...new Set(checkpoints.map((c) => c.checkpointId))]),
    );
    const result: CheckpointContentRecord[] = [];
    for (const row of rows) {
      if (!wanted.has(`${row.thread_id} ${row.checkpoint_id}`)) continue;
      result.push({ threadId: row.thread_id, checkpointId: row.checkpoint_id, messageCount: row.message_count ?? 0, lastMessage: await this.#revive(row) });
    }
    return result;
  }

  async #revive(row: ContentRow): Promise<BaseMessage | null> {
    if (row.last_message === null || (row.type !== null && row.type !== "json")) return null;
    const message: unknown = await this.#serde.loadsTyped("json", row.last_message);
    return isBaseMessage(message) ? message : null;
  }

  #all<T>(sql: string, ...params: unknown[]): T[] {
    return this.#db.prepare(sql).all(...params) as T[];
  }
}

function toCheckpoint(row: CheckpointRow): CheckpointRecord {
  return {
    id: row.checkpoint_id,
    threadId: row.thread_id,
    parentId: row.parent_checkpoint_id,
    step: row.step ?? -1,
    // LangGraph always writes one of the four sources; anything else fails the API's enum loudly rather than being renamed.
    source: row.source as CheckpointSourceValue,
    createdAt: new Date(row.ts ?? 0),
  };
}

function toWrite(row: WriteRow): CheckpointWriteRecord {
  let value: unknown = null;
  if (row.value !== null && (row.type === null || row.type === "json")) {
    try {
      value = JSON.parse(row.value);
    } catch {
      value = null;
    }
  }
  return { threadId: row.thread_id, checkpointId: row.checkpoint_id, taskId: row.task_id, channel: row.channel, idx: row.idx, value };
}
