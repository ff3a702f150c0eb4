// The run store on the embedded SQLite file with prepared statements (better-sqlite3),
// the backend `npm start` uses. It writes the rows exactly as PrismaRunStore does
// (Prisma reads them back for the GraphQL types) and passes the same conformance
// suite; it exists because Prisma 6.19's engine compiles every query anew, which
// made a run's start and finish cost about 7 ms of CPU between them, on the path
// of the first token and of every other run's tokens.
//
// Each write is one synchronous transaction begun IMMEDIATE (it holds the write
// lock from its first statement, so another process's commit cannot make it fail
// with SQLITE_BUSY_SNAPSHOT), taken in its turn of the process's WriteGate.
import type { SqliteDatabase } from "../db/sqlite.ts";
import { WriteGate } from "../db/write-gate.ts";
import {
  RUN_COLUMNS,
  formatSqliteDate,
  toConversationRecord,
  toRunOwnerRecord,
  toRunRecord,
  type ConversationRow,
  type RunOwnerRow,
  type RunRow,
} from "../db/rows.ts";
import { NotFoundError, RunInProgressError } from "./errors.ts";
import type { ConversationRecord, NewRun, OwnerRecord, RunOutcome, RunRecord, RunStore } from "./store.ts";

const CONVERSATION_COLUMNS = "id, title, created_at, updated_at, message_count";

/** The one-running-run-per-conversation index (or a primary key) refused the row. */
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

function prepareStatements(db: SqliteDatabase) {
  return {
    insertConversation: db.prepare<[string, string, string, string]>(
      `INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, ?, ?, ?, 0)`,
    ),
    touchConversation: db.prepare<[string, string]>(`UPDATE conversations SET updated_at = ? WHERE id = ?`),
    finishConversation: db.prepare<[string, number | null, string]>(
      `UPDATE conversations SET updated_at = ?, message_count = COALESCE(?, message_count) WHERE id = ?`,
    ),
    renameConversation: db.prepare<[string, string, string]>(`UPDATE conversations SET title = ?, updated_at = ? WHERE id = ?`),
    deleteConversation: db.prepare<[string]>(`DELETE FROM conversations WHERE id = ?`),
    getConversation: db.prepare<[string], ConversationRow>(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = ?`),
    insertRun: db.prepare<[string, string, string, string | null, string, string, string]>(
      `INSERT INTO runs (id, conversation_id, kind, status, input, started_at, start_mark, owner_id, last_event_seq)
       VALUES (?, ?, ?, 'running', ?, ?, ?, ?, 0)`,
    ),
    finishRun: db.prepare<[string, string | null, string | null, string | null, string, string, number, string]>(
      `UPDATE runs SET status = ?, error_code = ?, error_message = ?, partial_output = ?, finished_at = ?, end_mark = ?, last_event_seq = ?
       WHERE id = ? AND status = 'running'`,
    ),
    getRun: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`),
    activeRun: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id = ? AND status = 'running' LIMIT 1`),
    runsByIds: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id IN (SELECT value FROM json_each(?))`),
    notRunning: db.prepare<[string], { id: string }>(`SELECT id FROM runs WHERE id IN (SELECT value FROM json_each(?)) AND status <> 'running'`),
    // Running rows whose owner is gone (listed) or was never registered.
    orphans: db.prepare<[string], RunRow>(
      `SELECT ${RUN_COLUMNS} FROM runs
       WHERE status = 'running'
         AND (owner_id IS NULL OR owner_id IN (SELECT value FROM json_each(?)) OR owner_id NOT IN (SELECT id FROM run_owners))`,
    ),
    interruptRun: db.prepare<[string, string, string, string]>(
      `UPDATE runs SET status = 'interrupted', error_code = 'INTERRUPTED', error_message = ?, finished_at = ?, end_mark = ?
       WHERE id = ? AND status = 'running'`,
    ),
    completeEndedElsewhere: db.prepare<[number, string | null, string, string]>(
      `UPDATE runs SET last_event_seq = ?, partial_output = COALESCE(partial_output, ?), end_mark = MAX(COALESCE(end_mark, ''), ?)
       WHERE id = ? AND status <> 'running'`,
    ),
    insertOwner: db.prepare<[string, number, string, string, string]>(
      `INSERT INTO run_owners (id, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)`,
    ),
    heartbeat: db.prepare<[string, string]>(`UPDATE run_owners SET heartbeat_at = ? WHERE id = ?`),
    deleteOwners: db.prepare<[string]>(`DELETE FROM run_owners WHERE id IN (SELECT value FROM json_each(?))`),
    listOwners: db.prepare<[], RunOwnerRow>(`SELECT id, pid, host, started_at, heartbeat_at FROM run_owners`),
  };
}

export class SqliteRunStore implements RunStore {
  readonly #db: SqliteDatabase;
  readonly #gate: WriteGate;
  readonly #s: ReturnType<typeof prepareStatements>;
  // LangGraph's tables are created by its checkpointer, possibly after this store: prepared on first use.
  #deleteThread: { writes: ReturnType<SqliteDatabase["prepare"]>; checkpoints: ReturnType<SqliteDatabase["prepare"]> } | null = null;

  /** `db` is a read-write connection to the migrated file; `gate` is shared with every other writer of the file in this process. */
  constructor(db: SqliteDatabase, gate: WriteGate = new WriteGate()) {
    this.#db = db;
    this.#gate = gate;
    this.#s = prepareStatements(db);
  }

  /** One write transaction, BEGIN IMMEDIATE, in this process's turn. */
  #write<T>(work: () => T): Promise<T> {
    return this.#gate.run(() => this.#db.transaction(work).immediate());
  }

  async startRun(run: NewRun, newConversation?: { title: string }): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    const s = this.#s;
    const startedAt = formatSqliteDate(run.startedAt);
    try {
      return await this.#write(() => {
        if (newConversation) s.insertConversation.run(run.conversationId, newConversation.title, startedAt, startedAt);
        else if (s.touchConversation.run(startedAt, run.conversationId).changes === 0) throw new NotFoundError("Conversation", run.conversationId);
        s.insertRun.run(run.id, run.conversationId, run.kind, run.input, startedAt, run.startMark, run.ownerId);
        return { run: toRunRecord(s.getRun.get(run.id)!), conversation: toConversationRecord(s.getConversation.get(run.conversationId)!) };
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        const active = await this.activeRun(run.conversationId);
        throw new RunInProgressError(run.conversationId, active?.id ?? null);
      }
      throw error;
    }
  }

  finishRun(runId: string, outcome: RunOutcome): Promise<RunRecord | null> {
    const s = this.#s;
    const finishedAt = formatSqliteDate(outcome.finishedAt);
    return this.#write(() => {
      const updated = s.finishRun.run(
        outcome.status,
        outcome.errorCode,
        outcome.errorMessage,
        outcome.partialOutput,
        finishedAt,
        outcome.endMark,
        outcome.lastEventSeq,
        runId,
      );
      if (updated.changes === 0) return null;
      const run = toRunRecord(s.getRun.get(runId)!);
      s.finishConversation.run(finishedAt, outcome.messageCount, run.conversationId);
      return run;
    });
  }

  async getRun(id: string): Promise<RunRecord | null> {
    const row = this.#s.getRun.get(id);
    return row ? toRunRecord(row) : null;
  }

  async getConversation(id: string): Promise<ConversationRecord | null> {
    const row = this.#s.getConversation.get(id);
    return row ? toConversationRecord(row) : null;
  }

  async activeRun(conversationId: string): Promise<RunRecord | null> {
    const row = this.#s.activeRun.get(conversationId);
    return row ? toRunRecord(row) : null;
  }

  async renameConversation(id: string, title: string, at: Date): Promise<ConversationRecord> {
    const s = this.#s;
    return this.#write(() => {
      if (s.renameConversation.run(title, formatSqliteDate(at), id).changes === 0) throw new NotFoundError("Conversation", id);
      return toConversationRecord(s.getConversation.get(id)!);
    });
  }

  deleteConversation(id: string): Promise<ConversationRecord> {
    const s = this.#s;
    return this.#write(() => {
      const row = s.getConversation.get(id);
      if (!row) throw new NotFoundError("Conversation", id);
      const active = s.activeRun.get(id);
      if (active) throw new RunInProgressError(id, active.id);
      // LangGraph's tables live in the same file: the thread goes in the same
      // transaction, so a crash cannot leave a conversation without its thread.
      this.#deleteThread ??= {
        writes: this.#db.prepare(`DELETE FROM writes WHERE thread_id = ?`),
        checkpoints: this.#db.prepare(`DELETE FROM checkpoints WHERE thread_id = ?`),
      };
      this.#deleteThread.writes.run(id);
      this.#deleteThread.checkpoints.run(id);
      s.deleteConversation.run(id); // its runs go by ON DELETE CASCADE
      return toConversationRecord(row);
    });
  }

  async registerOwner(owner: OwnerRecord): Promise<void> {
    await this.#write(() =>
      this.#s.insertOwner.run(owner.id, owner.pid, owner.host, formatSqliteDate(owner.startedAt), formatSqliteDate(owner.heartbeatAt)),
    );
  }

  async heartbeat(ownerId: string, at: Date): Promise<void> {
    await this.#write(() => this.#s.heartbeat.run(formatSqliteDate(at), ownerId));
  }

  async removeOwner(ownerId: string): Promise<void> {
    await this.#write(() => this.#s.deleteOwners.run(JSON.stringify([ownerId])));
  }

  async listOwners(): Promise<OwnerRecord[]> {
    return this.#s.listOwners.all().map(toRunOwnerRecord);
  }

  interruptRunsOfGoneOwners(goneOwnerIds: string[], at: Date, endMark: string, message: string): Promise<RunRecord[]> {
    const s = this.#s;
    const finishedAt = formatSqliteDate(at);
    const gone = JSON.stringify(goneOwnerIds);
    return this.#write(() => {
      const orphans = s.orphans.all(gone);
      for (const run of orphans) s.interruptRun.run(message, finishedAt, endMark, run.id);
      for (const conversationId of new Set(orphans.map((r) => r.conversation_id))) s.touchConversation.run(finishedAt, conversationId);
      if (goneOwnerIds.length) s.deleteOwners.run(gone);
      return orphans.length ? s.runsByIds.all(JSON.stringify(orphans.map((r) => r.id))).map(toRunRecord) : [];
    });
  }

  async notRunning(runIds: string[]): Promise<string[]> {
    if (runIds.length === 0) return [];
    return this.#s.notRunning.all(JSON.stringify(runIds)).map((r) => r.id);
  }

  async completeEndedElsewhere(runId: string, facts: { lastEventSeq: number; partialOutput: string | null; endMark: string }): Promise<void> {
    await this.#write(() => this.#s.completeEndedElsewhere.run(facts.lastEventSeq, facts.partialOutput, facts.endMark, runId));
  }
}
