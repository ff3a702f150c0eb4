// The checkpoint read model on PostgreSQL: PostgresSaver's `checkpoints`
// (checkpoint and metadata as jsonb, without channel values), `checkpoint_blobs`
// (each channel's value per version) and `checkpoint_writes`. A checkpoint's
// messages are the blob of its `messages` channel at the version the checkpoint
// names; counting them and taking the last one happens in SQL, without reviving
// the rest. Checkpoint ids compare byte by byte (COLLATE "C"), as the marks do.
import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { ERROR_CHANNEL, type CheckpointRecord, type CheckpointSourceValue, type CheckpointWriteRecord } from "../../domain/records.ts";
import { holdsSql, windowEndSql } from "../../correlation/index.ts";
import type { PostgresPool } from "../postgres/database.ts";
import type { CheckpointContentRecord, CheckpointPageWindow, CheckpointReads, ThreadCheckpoints, WindowQuery } from "./types.ts";

const ID = `(checkpoint_id COLLATE "C")`;
const CHECKPOINT_COLUMNS = `thread_id, checkpoint_id, parent_checkpoint_id, checkpoint->>'ts' AS ts, (metadata->>'step')::int AS step, metadata->>'source' AS source`;
const WRITE_COLUMNS = `thread_id, checkpoint_id, task_id, channel, idx, type, convert_from(blob, 'UTF8') AS value`;

interface CheckpointRow {
  thread_id: string;
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
  last_message: unknown;
}

const SQL = {
  checkpointsOf: `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE checkpoint_ns = '' AND thread_id = ANY($1) ORDER BY thread_id, ${ID}`,
  errorsOf: `SELECT ${WRITE_COLUMNS} FROM checkpoint_writes WHERE checkpoint_ns = '' AND channel = $2 AND thread_id = ANY($1)
    ORDER BY thread_id, ${ID}, task_id, idx`,
  inWindows: `SELECT w.window_key, c.thread_id, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint->>'ts' AS ts,
      (c.metadata->>'step')::int AS step, c.metadata->>'source' AS source
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS w(window_key, t, lo, hi)
    JOIN checkpoints c ON c.checkpoint_ns = '' AND c.thread_id = w.t
      AND ${holdsSql("postgres", "c.checkpoint_id", "w.lo", windowEndSql("postgres", "w.hi"))}
    ORDER BY w.window_key, (c.checkpoint_id COLLATE "C")`,
  pages: (fromEnd: boolean) => `SELECT * FROM (
      SELECT ${CHECKPOINT_COLUMNS}, ROW_NUMBER() OVER (PARTITION BY thread_id ORDER BY ${ID} ${fromEnd ? "DESC" : "ASC"}) AS position
      FROM checkpoints
      WHERE checkpoint_ns = '' AND thread_id = ANY($1)
        AND ($2::text IS NULL OR ${ID} > ($2::text COLLATE "C"))
        AND ($3::text IS NULL OR ${ID} < ($3::text COLLATE "C"))
    ) p WHERE position <= $4 ORDER BY thread_id, (checkpoint_id COLLATE "C")`,
  heads: `SELECT thread_id, max(checkpoint_id COLLATE "C") AS head FROM checkpoints WHERE checkpoint_ns = '' AND thread_id = ANY($1) GROUP BY thread_id`,
  byIds: `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
    WHERE checkpoint_ns = '' AND checkpoint_id = ANY($1) AND thread_id IN (SELECT id FROM conversations) ORDER BY thread_id, ${ID}`,
  writes: `SELECT ${WRITE_COLUMNS} FROM checkpoint_writes WHERE checkpoint_ns = '' AND checkpoint_id = ANY($1) ORDER BY thread_id, ${ID}, task_id, idx`,
  contents: `SELECT c.thread_id, c.checkpoint_id, b.type,
      CASE WHEN b.type = 'json' THEN jsonb_array_length(convert_from(b.blob, 'UTF8')::jsonb) END AS message_count,
      CASE WHEN b.type = 'json' THEN convert_from(b.blob, 'UTF8')::jsonb -> -1 END AS last_message
    FROM checkpoints c
    LEFT JOIN checkpoint_blobs b ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
      AND b.channel = 'messages' AND b.version = c.checkpoint->'channel_versions'->>'messages'
    WHERE c.checkpoint_ns = '' AND c.checkpoint_id = ANY($1)`,
};

export class PostgresCheckpointReads implements CheckpointReads {
  constructor(
    private readonly pool: PostgresPool,
    /** PostgresSaver's serializer: revives the LangChain messages stored in a blob. */
    private readonly serde: SerializerProtocol = new JsonPlusSerializer(),
  ) {}

  async threads(threadIds: readonly string[]): Promise<Map<string, ThreadCheckpoints>> {
    const result = new Map<string, ThreadCheckpoints>();
    for (const id of threadIds) result.set(id, { checkpoints: [], errorWrites: [] });
    if (threadIds.length === 0) return result;
    // One snapshot: the failed tasks are those of the checkpoints read.
    const client = await this.pool.connect();
    let checkpoints: CheckpointRow[];
    let errors: WriteRow[];
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      checkpoints = (await client.query<CheckpointRow>({ name: "runledger_cp_checkpointsOf", text: SQL.checkpointsOf, values: [threadIds] })).rows;
      errors = (await client.query<WriteRow>({ name: "runledger_cp_errorsOf", text: SQL.errorsOf, values: [threadIds, ERROR_CHANNEL] })).rows;
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
    for (const row of checkpoints) result.get(row.thread_id)?.checkpoints.push(toCheckpoint(row));
    for (const row of errors) result.get(row.thread_id)?.errorWrites.push(toWrite(row));
    return result;
  }

  async checkpointsInWindows(windows: readonly WindowQuery[]): Promise<Map<string, CheckpointRecord[]>> {
    const result = new Map<string, CheckpointRecord[]>(windows.map((w) => [w.key, []]));
    if (windows.length === 0) return result;
    const { rows } = await this.pool.query<CheckpointRow & { window_key: string }>({
      name: "runledger_cp_inWindows",
      text: SQL.inWindows,
      values: [windows.map((w) => w.key), windows.map((w) => w.threadId), windows.map((w) => w.startMark), windows.map((w) => w.endMark)],
    });
    for (const row of rows) result.get(row.window_key)?.push(toCheckpoint(row));
    return result;
  }

  async pages(threadIds: readonly string[], window: CheckpointPageWindow): Promise<Map<string, CheckpointRecord[]>> {
    const result = new Map<string, CheckpointRecord[]>(threadIds.map((id) => [id, []]));
    if (threadIds.length === 0 || window.limit <= 0) return result;
    const { rows } = await this.pool.query<CheckpointRow>({
      name: `runledger_cp_pages_${window.fromEnd ? "end" : "start"}`,
      text: SQL.pages(window.fromEnd),
      values: [threadIds, window.after, window.before, window.limit],
    });
    for (const row of rows) result.get(row.thread_id)?.push(toCheckpoint(row));
    return result;
  }

  async heads(threadIds: readonly string[]): Promise<Map<string, string>> {
    if (threadIds.length === 0) return new Map();
    const { rows } = await this.pool.query<{ thread_id: string; head: string }>({ name: "runledger_cp_heads", text: SQL.heads, values: [threadIds] });
    return new Map(rows.map((r) => [r.thread_id, r.head]));
  }

  async checkpointsByIds(ids: readonly string[]): Promise<CheckpointRecord[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.pool.query<CheckpointRow>({ name: "runledger_cp_byIds", text: SQL.byIds, values: [ids] });
    return rows.map(toCheckpoint);
  }

  async writes(checkpoints: readonly { threadId: string; checkpointId: string }[]): Promise<CheckpointWriteRecord[]> {
    if (checkpoints.length === 0) return [];
    const wanted = new Set(checkpoints.map((c) => `${c.threadId} ${c.checkpointId}`));
    const { rows } = await this.pool.query<WriteRow>({
      name: "runledger_cp_writes",
      text: SQL.writes,
      values: [[...new Set(checkpoints.map((c) => c.checkpointId))]],
    });
    return rows.filter((r) => wanted.has(`${r.thread_id} ${r.checkpoint_id}`)).map(toWrite);
  }

  async contents(checkpoints: readonly { threadId: string; checkpointId: string }[]): Promise<CheckpointContentRecord[]> {
    if (checkpoints.length === 0) return [];
    const wanted = new Set(checkpoints.map((c) => `${c.threadId} ${c.checkpointId}`));
    const { rows } = await this.pool.query<ContentRow>({
      name: "runledger_cp_contents",
      text: SQL.contents,
      values: [[...new Set(checkpoints.map((c) => c.checkpointId))]],
    });
    const result: CheckpointContentRecord[] = [];
    for (const row of rows) {
      if (!wanted.has(`${row.thread_id} ${row.checkpoint_id}`)) continue;
      result.push({ threadId: row.thread_id, checkpointId: row.checkpoint_id, messageCount: row.message_count ?? 0, lastMessage: await this.#revive(row) });
    }
    return result;
  }

  async #revive(row: ContentRow): Promise<BaseMessage | null> {
    if (row.last_message === null || row.last_message === undefined || row.type !== "json") return null;
    const message: unknown = await this.serde.loadsTyped("json", JSON.stringify(row.last_message));
    return isBaseMessage(message) ? message : null;
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
