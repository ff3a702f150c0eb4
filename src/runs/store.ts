// The run store seam: conversations and runs rows. PrismaRunStore is the SQLite
// backend (Prisma on better-sqlite3); a Postgres backend implements the same
// interface and passes the same conformance suite (test/run-store.spec.ts).
import type { PrismaClient } from "../db/prisma.ts";
import type { Conversation, Prisma, Run } from "../db/generated/client.ts";
import { WriteGate } from "../db/write-gate.ts";
import { NotFoundError, RunInProgressError } from "./errors.ts";
import type { RunErrorCodeValue } from "./classify.ts";
import type { RunStatusValue } from "../events/types.ts";

export type ConversationRecord = Conversation;
export type RunRecord = Run;

export interface NewRun {
  id: string;
  conversationId: string;
  kind: "start" | "resume";
  input: string | null;
  startedAt: Date;
  startMark: string;
  ownerId: string;
}

export interface RunOutcome {
  status: Exclude<RunStatusValue, "running">;
  errorCode: RunErrorCodeValue | null;
  errorMessage: string | null;
  partialOutput: string | null;
  finishedAt: Date;
  endMark: string;
  lastEventSeq: number;
  /** The thread's message count after the run; null keeps the stored count. */
  messageCount: number | null;
}

export interface OwnerRecord {
  id: string;
  pid: number;
  host: string;
  startedAt: Date;
  heartbeatAt: Date;
}

export interface RunStore {
  /**
   * In one transaction: creates the conversation when `newConversation` is given
   * (else requires it to exist), inserts the running row and bumps the
   * conversation's updated_at. Throws NotFoundError or RunInProgressError and
   * then has written nothing.
   */
  startRun(run: NewRun, newConversation?: { title: string }): Promise<{ run: RunRecord; conversation: ConversationRecord }>;
  /** In one transaction: the outcome, updated_at and message_count. Null when the run was no longer running (terminal states never change). */
  finishRun(runId: string, outcome: RunOutcome): Promise<RunRecord | null>;
  getRun(id: string): Promise<RunRecord | null>;
  getConversation(id: string): Promise<ConversationRecord | null>;
  activeRun(conversationId: string): Promise<RunRecord | null>;
  renameConversation(id: string, title: string, at: Date): Promise<ConversationRecord>;
  /** Deletes the conversation, its runs and its thread's checkpoints and writes, in one transaction. */
  deleteConversation(id: string): Promise<ConversationRecord>;

  registerOwner(owner: OwnerRecord): Promise<void>;
  heartbeat(ownerId: string, at: Date): Promise<void>;
  removeOwner(ownerId: string): Promise<void>;
  listOwners(): Promise<OwnerRecord[]>;
  /**
   * Marks `running` rows interrupted when their owner is in `goneOwnerIds`, or is
   * not a registered owner at all, and forgets the gone owners. `endMark` closes
   * their correlation windows. Returns the runs it changed.
   */
  interruptRunsOfGoneOwners(goneOwnerIds: string[], at: Date, endMark: string, message: string): Promise<RunRecord[]>;
  /** Ids among `runIds` that are no longer `running` (cancelled by another process, say). */
  notRunning(runIds: string[]): Promise<string[]>;
  /**
   * What only the executing process knows, added to a run another process ended
   * (a cross-process cancel): the seq of its terminal event, the text it streamed
   * (kept if none was recorded) and the end of its correlation window (moved
   * later, never earlier). Status, code and message stay as recorded.
   */
  completeEndedElsewhere(runId: string, facts: { lastEventSeq: number; partialOutput: string | null; endMark: string }): Promise<void>;
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === "P2002";
}

/**
 * A write that changes nothing, run first in every transaction so that the
 * transaction holds the write lock from its start (BEGIN IMMEDIATE, which Prisma
 * cannot issue). A deferred transaction that reads first and writes later fails
 * at once with SQLITE_BUSY_SNAPSHOT, without waiting, when another process
 * committed in between; one that starts by writing waits its turn (busy_timeout).
 */
const TAKE_WRITE_LOCK = `UPDATE "run_owners" SET "id" = "id" WHERE 0`;

export class PrismaRunStore implements RunStore {
  /** `gate` is shared with every other writer of the file in this process (see WriteGate). */
  constructor(
    private readonly prisma: PrismaClient,
    private readonly gate: WriteGate = new WriteGate(),
  ) {}

  /** A write transaction: one at a time in this process, holding the write lock from its first statement. */
  #transaction<T>(work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
    return this.gate.run(() =>
      this.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(TAKE_WRITE_LOCK);
        return work(tx);
      }),
    );
  }

  /** A single-statement write, kept out of any transaction another caller has open on the shared connection. */
  #write<T>(work: () => Promise<T>): Promise<T> {
    return this.gate.run(work);
  }

  async startRun(run: NewRun, newConversation?: { title: string }) {
    try {
      return await this.#transaction(async (tx) => {
        let conversation: ConversationRecord;
        if (newConversation) {
          conversation = await tx.conversation.create({
            data: { id: run.conversationId, title: newConversation.title, createdAt: run.startedAt, updatedAt: run.startedAt, messageCount: 0 },
          });
        } else {
          const updated = await tx.conversation.updateMany({ where: { id: run.conversationId }, data: { updatedAt: run.startedAt } });
          if (updated.count === 0) throw new NotFoundError("Conversation", run.conversationId);
          conversation = (await tx.conversation.findUnique({ where: { id: run.conversationId } }))!;
        }
        const created = await tx.run.create({
          data: { ...run, status: "running" },
        });
        return { run: created, conversation };
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        const active = await this.activeRun(run.conversationId);
        throw new RunInProgressError(run.conversationId, active?.id ?? null);
      }
      throw error;
    }
  }

  async finishRun(runId: string, outcome: RunOutcome) {
    return this.#transaction(async (tx) => {
      const updated = await tx.run.updateMany({
        where: { id: runId, status: "running" },
        data: {
          status: outcome.status,
          errorCode: outcome.errorCode,
          errorMessage: outcome.errorMessage,
          partialOutput: outcome.partialOutput,
          finishedAt: outcome.finishedAt,
          endMark: outcome.endMark,
          lastEventSeq: outcome.lastEventSeq,
        },
      });
      if (updated.count === 0) return null;
      const run = (await tx.run.findUnique({ where: { id: runId } }))!;
      await tx.conversation.update({
        where: { id: run.conversationId },
        data: { updatedAt: outcome.finishedAt, ...(outcome.messageCount === null ? {} : { messageCount: outcome.messageCount }) },
      });
      return run;
    });
  }

  getRun(id: string) {
    return this.prisma.run.findUnique({ where: { id } });
  }

  getConversation(id: string) {
    return this.prisma.conversation.findUnique({ where: { id } });
  }

  activeRun(conversationId: string) {
    return this.prisma.run.findFirst({ where: { conversationId, status: "running" } });
  }

  async renameConversation(id: string, title: string, at: Date) {
    const updated = await this.#write(() => this.prisma.conversation.updateMany({ where: { id }, data: { title, updatedAt: at } }));
    if (updated.count === 0) throw new NotFoundError("Conversation", id);
    return (await this.getConversation(id))!;
  }

  async deleteConversation(id: string) {
    try {
      return await this.#transaction(async (tx) => {
        const conversation = await tx.conversation.findUnique({ where: { id } });
        if (!conversation) throw new NotFoundError("Conversation", id);
        const active = await tx.run.findFirst({ where: { conversationId: id, status: "running" } });
        if (active) throw new RunInProgressError(id, active.id);
        // LangGraph's tables live in the same file: the thread goes in the same
        // transaction, so a crash cannot leave a conversation without its thread.
        await tx.$executeRawUnsafe(`DELETE FROM writes WHERE thread_id = ?`, id);
        await tx.$executeRawUnsafe(`DELETE FROM checkpoints WHERE thread_id = ?`, id);
        await tx.conversation.delete({ where: { id } });
        return conversation;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new RunInProgressError(id, null);
      throw error;
    }
  }

  async registerOwner(owner: OwnerRecord) {
    await this.#write(() => this.prisma.runOwner.create({ data: owner }));
  }

  async heartbeat(ownerId: string, at: Date) {
    await this.#write(() => this.prisma.runOwner.updateMany({ where: { id: ownerId }, data: { heartbeatAt: at } }));
  }

  async removeOwner(ownerId: string) {
    await this.#write(() => this.prisma.runOwner.deleteMany({ where: { id: ownerId } }));
  }

  listOwners() {
    return this.prisma.runOwner.findMany();
  }

  async interruptRunsOfGoneOwners(goneOwnerIds: string[], at: Date, endMark: string, message: string) {
    return this.#transaction(async (tx) => {
      const owners = await tx.runOwner.findMany({ select: { id: true } });
      const live = owners.map((o) => o.id).filter((id) => !goneOwnerIds.includes(id));
      const orphans = await tx.run.findMany({
        where: { status: "running", OR: [{ ownerId: null }, { ownerId: { notIn: live } }] },
      });
      if (orphans.length === 0) {
        if (goneOwnerIds.length) await tx.runOwner.deleteMany({ where: { id: { in: goneOwnerIds } } });
        return [];
      }
      const ids = orphans.map((r) => r.id);
      await tx.run.updateMany({
        where: { id: { in: ids }, status: "running" },
        data: { status: "interrupted", errorCode: "INTERRUPTED", errorMessage: message, finishedAt: at, endMark },
      });
      const conversationIds = [...new Set(orphans.map((r) => r.conversationId))];
      await tx.conversation.updateMany({ where: { id: { in: conversationIds } }, data: { updatedAt: at } });
      if (goneOwnerIds.length) await tx.runOwner.deleteMany({ where: { id: { in: goneOwnerIds } } });
      return tx.run.findMany({ where: { id: { in: ids } } });
    });
  }

  async completeEndedElsewhere(runId: string, facts: { lastEventSeq: number; partialOutput: string | null; endMark: string }) {
    await this.#write(() =>
      this.prisma.$executeRawUnsafe(
        `UPDATE "runs" SET "last_event_seq" = ?, "partial_output" = COALESCE("partial_output", ?), "end_mark" = MAX(COALESCE("end_mark", ''), ?)
         WHERE "id" = ? AND "status" <> 'running'`,
        facts.lastEventSeq,
        facts.partialOutput,
        facts.endMark,
        runId,
      ),
    );
  }

  async notRunning(runIds: string[]) {
    if (runIds.length === 0) return [];
    const rows = await this.prisma.run.findMany({ where: { id: { in: runIds }, status: { not: "running" } }, select: { id: true } });
    return rows.map((r) => r.id);
  }
}
