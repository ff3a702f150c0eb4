// The retention store's conformance suite: every RetentionStore backend must
// pass it. A conversation's own expiry; which conversations are due (own
// expiry, agent days, deployment days, never one with an active run); which
// checkpoints go (never a run's start or end, a fork's source or the latest K;
// nothing while a run is active) and that what remains reads back whole; aged
// events, journals and keys; and a lease held by one holder at a time.
import { randomUUID } from "node:crypto";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintCheckpointId, mintMark } from "../../src/correlation/index.ts";
import { NotFoundError } from "../../src/domain/errors.ts";
import type { RunOutcome } from "../../src/domain/records.ts";
import type { Storage } from "../../src/storage/types.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { SERVICES_TIMEOUT_MS } from "../../testkit/services.ts";

const DAY = 24 * 60 * 60 * 1000;

export function describeRetentionStoreConformance(backend: StorageBackend) {
  describe(`RetentionStore conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    let storage: Storage;
    beforeAll(async () => {
      opened = await backend.open();
      storage = opened.storage;
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => opened?.close());

    const now = new Date(Date.UTC(2027, 5, 1, 12));
    const daysAgo = (days: number) => new Date(now.getTime() - days * DAY);
    const outcome = (finishedAt: Date, endMark: string, status: RunOutcome["status"] = "completed"): RunOutcome => ({
      status,
      errorCode: null,
      errorMessage: null,
      partialOutput: null,
      finishedAt,
      endMark,
      lastEventSeq: 1,
      messageCount: null,
      usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
      interrupts: [],
    });

    /** A conversation whose last activity was `at`, with one finished run; answers its id and the run's. */
    async function conversation(at: Date, agent = "default", owner = "alice"): Promise<{ id: string; runId: string }> {
      const id = randomUUID();
      const runId = randomUUID();
      const start = {
        id: runId,
        conversationId: id,
        kind: "start" as const,
        input: "hi",
        startedAt: at,
        startMark: mintMark(),
        ownerId: "o",
        startCheckpointId: null,
      };
      await storage.runs.startRun(start, { title: "hi", agent, owner });
      await storage.runs.finishRun(runId, outcome(at, mintMark()));
      return { id, runId };
    }

    it("sets a conversation's own expiry and clears it; an unknown conversation is NotFoundError", async () => {
      const { id } = await conversation(daysAgo(1));
      expect((await storage.runs.getConversation(id))!.expiresAt).toBeNull();
      const when = new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 678));
      expect((await storage.retention.setExpiry(id, when)).expiresAt).toEqual(when);
      expect((await storage.runs.getConversation(id))!.expiresAt).toEqual(when);
      expect((await storage.runs.conversations([id])).get(id)!.expiresAt).toEqual(when);
      expect((await storage.retention.setExpiry(id, null)).expiresAt).toBeNull();
      await expect(storage.retention.setExpiry(randomUUID(), when)).rejects.toBeInstanceOf(NotFoundError);
    });

    it("finds conversations due: own expiry passed, or idle past their agent's or the deployment's days; never one with an active run", async () => {
      const old = await conversation(daysAgo(40));
      const recent = await conversation(daysAgo(5));
      const plannerOld = await conversation(daysAgo(12), "planner");
      const plannerNew = await conversation(daysAgo(8), "planner");
      const ownPast = await conversation(daysAgo(1));
      await storage.retention.setExpiry(ownPast.id, daysAgo(0.5));
      const ownFuture = await conversation(daysAgo(100));
      await storage.retention.setExpiry(ownFuture.id, new Date(now.getTime() + DAY));
      const busy = await conversation(daysAgo(50));
      await storage.runs.startRun({
        id: randomUUID(),
        conversationId: busy.id,
        kind: "start",
        input: "again",
        startedAt: daysAgo(50),
        startMark: mintMark(),
        ownerId: "o",
        startCheckpointId: null,
      });
      const mine = new Set([old, recent, plannerOld, plannerNew, ownPast, ownFuture, busy].map((c) => c.id));
      const due = async (defaultDays: number | null, agentDays: Record<string, number> = {}) =>
        (await storage.retention.expiredConversations({ defaultDays, agentDays }, now, 1000)).filter((id) => mine.has(id));

      // Oldest activity first.
      expect(await due(30, { planner: 10 })).toEqual([old.id, plannerOld.id, ownPast.id]);
      expect(await due(30)).toEqual([old.id, ownPast.id]);
      expect(await due(null, { planner: 10 })).toEqual([plannerOld.id, ownPast.id]);
      expect(await due(null)).toEqual([ownPast.id]);
      expect(await due(4, { planner: 100 })).toEqual([old.id, recent.id, ownPast.id]);
      expect((await storage.retention.expiredConversations({ defaultDays: 1, agentDays: {} }, now, 1)).length).toBe(1);
    });

    it("prunes only checkpoints no run starts from or ends at, no fork comes from and not the latest K; what remains reads back whole", async () => {
      const { saver, runs, retention } = storage;
      const threadId = randomUUID();
      const ids: string[] = [];
      let parent: string | undefined;
      /** Writes a checkpoint whose "messages" channel changes each time and whose "settings" channel never does. */
      const put = async (n: number) => {
        const id = mintCheckpointId();
        const first = ids.length === 0;
        const checkpoint = {
          ...emptyCheckpoint(),
          id,
          channel_values: { messages: [`m${n}`], settings: "fixed" },
          channel_versions: { messages: `${String(n).padStart(32, "0")}.0`, settings: `${"1".padStart(32, "0")}.0` },
        };
        const config = { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: parent } };
        const written = await saver.put(
          config,
          checkpoint,
          { source: "loop", step: n, parents: {} },
          first ? checkpoint.channel_versions : { messages: checkpoint.channel_versions.messages },
        );
        await saver.putWrites(written, [["messages", `w${n}`]], `task-${n}`);
        ids.push(id);
        parent = id;
      };
      const run1 = randomUUID();
      const s1 = mintMark();
      await runs.startRun(
        { id: run1, conversationId: threadId, kind: "start", input: "a", startedAt: daysAgo(3), startMark: s1, ownerId: "o", startCheckpointId: null },
        { title: "t", agent: "default", owner: "alice" },
      );
      for (const n of [0, 1, 2]) await put(n); // a b c
      await runs.finishRun(run1, outcome(daysAgo(3), mintMark()));
      const run2 = randomUUID();
      await runs.startRun({
        id: run2,
        conversationId: threadId,
        kind: "start",
        input: "b",
        startedAt: daysAgo(2),
        startMark: mintMark(),
        ownerId: "o",
        startCheckpointId: ids[2]!,
      });
      for (const n of [3, 4, 5, 6]) await put(n); // d e f g
      await runs.finishRun(run2, outcome(daysAgo(2), mintMark(), "waiting"));
      const run3 = randomUUID();
      await runs.startRun({
        id: run3,
        conversationId: threadId,
        kind: "resume",
        input: null,
        startedAt: daysAgo(1),
        startMark: mintMark(),
        ownerId: "o",
        startCheckpointId: ids[6]!,
      });
      for (const n of [7, 8, 9]) await put(n); // h i j
      await runs.finishRun(run3, outcome(daysAgo(1), mintMark()));
      await runs.createConversation(
        randomUUID(),
        { title: "fork", agent: "default", owner: "alice", forkedFrom: { conversationId: threadId, checkpointId: ids[1]! } },
        daysAgo(1),
      );
      const [a, b, c, d, e, f, g, h, i, j] = ids as [string, string, string, string, string, string, string, string, string, string];
      const before = new Map(
        await Promise.all(
          ids.map(async (id) => [id, await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: id } })] as const),
        ),
      );

      // Kept: b (a fork's source), c (run 1's end, run 2's start), g (run 2 waits there, run 3 starts there), j (run 3's end, the latest).
      expect(await retention.prunableCheckpoints(threadId, 1, 100)).toEqual([a, d, e, f, h, i]);
      expect(await retention.prunableCheckpoints(threadId, 3, 100)).toEqual([a, d, e, f]);
      expect(await retention.prunableCheckpoints(threadId, 1, 2)).toEqual([a, d]);
      expect(await retention.threadsOverKeep(9, null, 1000)).toContain(threadId);
      expect(await retention.threadsOverKeep(10, null, 1000)).not.toContain(threadId);
      expect(await retention.threadsOverKeep(1, threadId, 1000)).not.toContain(threadId);

      const batches = [
        await retention.pruneCheckpoints(threadId, 1, 4),
        await retention.pruneCheckpoints(threadId, 1, 4),
        await retention.pruneCheckpoints(threadId, 1, 4),
      ];
      expect(batches.map((b) => b.checkpoints)).toEqual([4, 2, 0]);
      const total = (table: string) => batches.reduce((sum, b) => sum + (b[table] ?? 0), 0);
      // Each pruned checkpoint had one task write; on PostgreSQL its own "messages" value goes too, the shared "settings" one stays.
      expect(total(opened.dialect === "postgres" ? "checkpoint_writes" : "writes")).toBe(6);
      if (opened.dialect === "postgres") expect(total("checkpoint_blobs")).toBe(6);
      expect(await retention.prunableCheckpoints(threadId, 1, 100)).toEqual([]);

      const remaining = [];
      for await (const tuple of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) remaining.push(tuple.checkpoint.id);
      expect(remaining.sort()).toEqual([b, c, g, j]);
      for (const id of [b, c, g, j]) {
        const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: id } });
        expect(tuple!.checkpoint.channel_values).toEqual(before.get(id)!.checkpoint.channel_values);
        expect(tuple!.pendingWrites).toEqual(before.get(id)!.pendingWrites);
      }
      expect((await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } }))!.checkpoint.id).toBe(j);
      for (const id of [a, d, e, f, h, i])
        expect(await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: id } })).toBeUndefined();
      const writes = await storage.checkpointReads.writes([a, d, j].map((checkpointId) => ({ threadId, checkpointId })));
      expect(writes.map((w) => w.checkpointId)).toEqual([j]);

      // While a run is active nothing of its thread goes.
      await put(10);
      await put(11);
      await runs.startRun({
        id: randomUUID(),
        conversationId: threadId,
        kind: "start",
        input: "c",
        startedAt: now,
        startMark: mintMark(),
        ownerId: "o",
        startCheckpointId: ids[11]!,
      });
      expect(await retention.prunableCheckpoints(threadId, 1, 100)).toEqual([]);
      expect((await retention.pruneCheckpoints(threadId, 1, 100)).checkpoints).toBe(0);
    });

    it("counts and prunes the events and tool journal of runs ended before the cutoff, and idempotency keys recorded before it", async () => {
      const oldRun = await conversation(daysAgo(30));
      const newRun = await conversation(daysAgo(2));
      const at = daysAgo(30);
      for (const { runId } of [oldRun, newRun]) {
        await storage.runEvents.record(runId, [
          { kind: "custom", seq: 1, at, name: "progress", data: { n: 1 } },
          { kind: "message", seq: 2, at, messageId: "m1", node: "agent" },
          { kind: "custom", seq: 3, at, name: "progress", data: { n: 2 } },
        ]);
      }
      for (const c of [oldRun, newRun]) {
        await storage.toolJournal.start({
          conversationId: c.id,
          toolCallId: "call-1",
          attempt: 1,
          runId: c.runId,
          name: "calculator",
          args: {},
          startedAt: at,
        });
      }
      const key = (k: string, createdAt: Date) =>
        storage.runs.recordIdempotencyKey({
          principal: "retention",
          key: k,
          operation: "cancelRun",
          requestHash: "h",
          conversationId: null,
          runId: null,
          createdAt,
        });
      // Recording a key forgets those past their TTL as of its own time: the newer one first.
      await key(`new-${randomUUID()}`, daysAgo(0.5));
      await key(`old-${randomUUID()}`, daysAgo(20));
      const cutoff = daysAgo(10);
      const counts = async () => ({
        run_events: await storage.retention.countAged("run_events", cutoff),
        tool_calls: await storage.retention.countAged("tool_calls", cutoff),
        idempotency_keys: await storage.retention.countAged("idempotency_keys", cutoff),
      });
      const start = await counts();
      expect(start.run_events).toBeGreaterThanOrEqual(3);
      expect(start.tool_calls).toBeGreaterThanOrEqual(1);
      expect(start.idempotency_keys).toBeGreaterThanOrEqual(1);
      expect(await storage.retention.pruneAged("run_events", cutoff, 2)).toBe(2);
      while ((await storage.retention.pruneAged("run_events", cutoff, 2)) > 0);
      while ((await storage.retention.pruneAged("tool_calls", cutoff, 2)) > 0);
      while ((await storage.retention.pruneAged("idempotency_keys", cutoff, 2)) > 0);
      expect(await counts()).toEqual({ run_events: 0, tool_calls: 0, idempotency_keys: 0 });
      const events = await storage.runEvents.byRuns([oldRun.runId, newRun.runId]);
      expect(events.get(oldRun.runId)).toEqual([]);
      expect(events.get(newRun.runId)!.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(await storage.toolJournal.latest(oldRun.id, "call-1")).toBeNull();
      expect(await storage.toolJournal.latest(newRun.id, "call-1")).not.toBeNull();
    });

    it("holds a lease for one holder at a time until it expires or is let go", async () => {
      const name = `lease-${randomUUID()}`;
      const t0 = new Date(Date.UTC(2027, 0, 1));
      const later = (ms: number) => new Date(t0.getTime() + ms);
      expect(await storage.retention.acquireLease(name, "a", t0, 1000)).toBe(true);
      expect(await storage.retention.acquireLease(name, "b", later(500), 1000)).toBe(false);
      expect(await storage.retention.acquireLease(name, "a", later(900), 1000)).toBe(true); // renewed to 1900
      expect(await storage.retention.acquireLease(name, "b", later(1500), 1000)).toBe(false);
      expect(await storage.retention.acquireLease(name, "b", later(1900), 1000)).toBe(true);
      await storage.retention.releaseLease(name, "a"); // not a's: nothing changes
      expect(await storage.retention.acquireLease(name, "a", later(2000), 1000)).toBe(false);
      await storage.retention.releaseLease(name, "b");
      expect(await storage.retention.acquireLease(name, "a", later(2000), 1000)).toBe(true);
      const results = await Promise.all(["x", "y", "z"].map((holder) => storage.retention.acquireLease(`${name}-race`, holder, t0, 1000)));
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it("reclaims space only where the engine can give pages back, and says how many", async () => {
      const pages = await storage.retention.reclaimSpace(100);
      expect(pages).toBeGreaterThanOrEqual(0);
      if (opened.dialect === "postgres") expect(pages).toBe(0);
      else expect(await opened.evaluate("(SELECT auto_vacuum FROM pragma_auto_vacuum)", [])).toBe(2);
    });
  });
}
