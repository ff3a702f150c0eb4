// The run event store's conformance suite: every RunEventStore backend must pass
// it. What a run stored reads back as stored (JSON data of any shape, dates to
// the millisecond), in seq order per run, whichever order the batches came in;
// a batch written again changes nothing; the rows go with their run's
// conversation.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEventStore, StoredRunEvent } from "../../src/storage/run-events/types.ts";
import type { RunStore } from "../../src/storage/run-store/types.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { SERVICES_TIMEOUT_MS } from "../../testkit/services.ts";

export function describeRunEventsConformance(backend: StorageBackend) {
  describe(`RunEventStore conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    let store: RunEventStore;
    let runs: RunStore;
    beforeAll(async () => {
      opened = await backend.open();
      store = opened.storage.runEvents;
      runs = opened.storage.runs;
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => opened?.close());

    const at = (second: number, ms = 0) => new Date(Date.UTC(2026, 11, 2, 3, 0, second, ms));

    /** A running run: in a new conversation, or the next one of `conversationId` (whose run must have ended). */
    async function conversationWithRun(conversationId?: string): Promise<{ conversationId: string; runId: string }> {
      const runId = randomUUID();
      const id = conversationId ?? randomUUID();
      await runs.startRun(
        { id: runId, conversationId: id, kind: "start", input: "plan", startedAt: at(0), startMark: "0001", ownerId: "owner-a", startCheckpointId: null },
        conversationId ? undefined : { title: "plan", agent: "planner", owner: "alice" },
      );
      return { conversationId: id, runId };
    }

    const finish = (runId: string) =>
      runs.finishRun(runId, {
        status: "completed",
        errorCode: null,
        errorMessage: null,
        partialOutput: null,
        finishedAt: at(20),
        endMark: "0002",
        lastEventSeq: 4,
        messageCount: 2,
        usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
        interrupts: [],
      });

    const custom = (seq: number, name: string, data: unknown): StoredRunEvent => ({ kind: "custom", seq, at: at(seq, 125), name, data });
    const message = (seq: number, messageId: string, node: string): StoredRunEvent => ({ kind: "message", seq, at: at(seq, 500), messageId, node });

    it("reads back what a run stored, in seq order across batches, JSON data of any shape included", async () => {
      const { runId } = await conversationWithRun();
      const plan = custom(2, "plan", { steps: ["read the question", "answer it briefly"], question: "Ünïcode — 質問?", depth: 2, done: false, note: null });
      const first = message(3, "run-msg-1", "answer");
      // Batches as a run writes them: at a checkpoint, then before its outcome; a later batch may carry an earlier seq.
      await store.record(runId, [first, plan]);
      const later = [
        message(9, "run-msg-2", "agent"),
        custom(7, "progress", 0.5),
        custom(8, "text", "plain"),
        custom(10, "nothing", null),
        custom(11, "list", [1, "two", [3]]),
      ];
      await store.record(runId, later);
      await store.record(runId, []);
      const stored = (await store.byRuns([runId])).get(runId)!;
      expect(stored.map((e) => e.seq)).toEqual([2, 3, 7, 8, 9, 10, 11]);
      expect(stored).toEqual([plan, first, ...later].sort((a, b) => a.seq - b.seq));
      expect(stored[0]!.at.toISOString()).toBe("2026-12-02T03:00:02.125Z");
    });

    it("answers every run asked for, an empty list for one that stored nothing or does not exist, and keeps runs apart", async () => {
      const a = await conversationWithRun();
      await finish(a.runId);
      const b = await conversationWithRun(a.conversationId);
      const quiet = await conversationWithRun();
      const unknown = randomUUID();
      await store.record(a.runId, [custom(2, "a", { of: "a" })]);
      await store.record(b.runId, [custom(2, "b", { of: "b" }), message(3, "b-1", "answer")]);
      const found = await store.byRuns([a.runId, b.runId, quiet.runId, unknown]);
      expect([...found.keys()].sort()).toEqual([a.runId, b.runId, quiet.runId, unknown].sort());
      expect(found.get(a.runId)).toEqual([custom(2, "a", { of: "a" })]);
      expect(found.get(b.runId)!.map((e) => e.kind)).toEqual(["custom", "message"]);
      expect(found.get(quiet.runId)).toEqual([]);
      expect(found.get(unknown)).toEqual([]);
      expect((await store.byRuns([])).size).toBe(0);
    });

    it("keeps an event as first stored when its seq comes again (a batch retried after it committed)", async () => {
      const { runId } = await conversationWithRun();
      await store.record(runId, [custom(2, "plan", { v: 1 }), message(3, "m", "answer")]);
      await store.record(runId, [custom(2, "plan", { v: 2 }), message(3, "m", "other"), custom(4, "next", true)]);
      expect((await store.byRuns([runId])).get(runId)).toEqual([custom(2, "plan", { v: 1 }), message(3, "m", "answer"), custom(4, "next", true)]);
    });

    it("refuses events of a run that does not exist, writing none of the batch", async () => {
      const ghost = randomUUID();
      await expect(store.record(ghost, [custom(2, "plan", {})])).rejects.toThrow();
      expect((await store.byRuns([ghost])).get(ghost)).toEqual([]);
    });

    it("deletes a run's events with its conversation, leaving other conversations' alone", async () => {
      const gone = await conversationWithRun();
      const kept = await conversationWithRun();
      await store.record(gone.runId, [custom(2, "plan", {}), message(3, "m", "answer")]);
      await store.record(kept.runId, [custom(2, "plan", {})]);
      await finish(gone.runId);
      await runs.deleteConversation(gone.conversationId);
      const found = await store.byRuns([gone.runId, kept.runId]);
      expect(found.get(gone.runId)).toEqual([]);
      expect(found.get(kept.runId)).toHaveLength(1);
      // Nothing is left behind for a run id that comes again.
      expect(await opened.evaluate(`(SELECT count(*) FROM run_events WHERE run_id = ${opened.dialect === "sqlite" ? "@p1" : "$1"})`, [gone.runId])).toEqual(
        opened.dialect === "sqlite" ? 0 : "0",
      );
    });
  });
}
