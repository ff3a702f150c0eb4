// The tool journal's conformance suite: every ToolJournal backend must pass it.
// The rules that keep a side effect from running twice by accident: an attempt
// is recorded once, an outcome is never overwritten, a started attempt can be
// put in doubt and then still be given an outcome, and the latest attempt is
// what a resume reads.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NewToolCall, ToolJournal } from "../../src/storage/tool-journal/types.ts";
import type { RunStore } from "../../src/storage/run-store/types.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { SERVICES_TIMEOUT_MS } from "../../testkit/services.ts";

export function describeToolJournalConformance(backend: StorageBackend) {
  describe(`ToolJournal conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    let journal: ToolJournal;
    let runs: RunStore;
    beforeAll(async () => {
      opened = await backend.open();
      journal = opened.storage.toolJournal;
      runs = opened.storage.runs;
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => opened?.close());

    const at = (second: number, ms = 0) => new Date(Date.UTC(2026, 11, 2, 1, 0, second, ms));

    /** A conversation with one running run, as a tool call needs. */
    async function conversationWithRun(): Promise<{ conversationId: string; runId: string }> {
      const conversationId = randomUUID();
      const runId = randomUUID();
      await runs.startRun(
        { id: runId, conversationId, kind: "start", input: "pay", startedAt: at(0), startMark: "0001", ownerId: "owner-a", startCheckpointId: null },
        { title: "pay", agent: "default", owner: "alice" },
      );
      return { conversationId, runId };
    }

    const newCall = (ids: { conversationId: string; runId: string }, overrides: Partial<NewToolCall> = {}): NewToolCall => ({
      ...ids,
      toolCallId: randomUUID(),
      attempt: 1,
      name: "pay",
      args: { invoice: "INV-7", amount: 12.5, to: ["ops", "finance"], note: null },
      startedAt: at(1, 250),
      ...overrides,
    });

    it("records an attempt as started, with its arguments as given, and reads it back as the latest", async () => {
      const ids = await conversationWithRun();
      const call = newCall(ids);
      const started = await journal.start(call);
      expect(started).toEqual({ ...call, state: "started", result: null, finishedAt: null });
      expect(await journal.latest(ids.conversationId, call.toolCallId)).toEqual(started);
      expect(await journal.latest(ids.conversationId, randomUUID())).toBeNull();
      // The same call id in another conversation is another call.
      expect(await journal.latest(randomUUID(), call.toolCallId)).toBeNull();
    });

    it("refuses an attempt recorded twice, keeping the first", async () => {
      const ids = await conversationWithRun();
      const call = newCall(ids);
      await journal.start(call);
      await expect(journal.start({ ...call, name: "other", startedAt: at(2) })).rejects.toThrow();
      expect(await journal.latest(ids.conversationId, call.toolCallId)).toMatchObject({ name: "pay", startedAt: call.startedAt });
    });

    it("records an outcome once: a second outcome is refused (null) and the first is kept", async () => {
      const ids = await conversationWithRun();
      const call = newCall(ids);
      await journal.start(call);
      const key = { conversationId: ids.conversationId, toolCallId: call.toolCallId, attempt: 1 };
      const done = await journal.finish(key, { state: "succeeded", result: "paid INV-7", finishedAt: at(4, 500) });
      expect(done).toEqual({ ...call, state: "succeeded", result: "paid INV-7", finishedAt: at(4, 500) });
      expect(await journal.finish(key, { state: "failed", result: "late", finishedAt: at(5) })).toBeNull();
      expect(await journal.markInDoubt(key)).toEqual(done);
      expect(await journal.latest(ids.conversationId, call.toolCallId)).toEqual(done);
      expect(await journal.finish({ ...key, attempt: 2 }, { state: "succeeded", result: "x", finishedAt: at(6) })).toBeNull();
    });

    it("keeps a result of content blocks as it was given", async () => {
      const ids = await conversationWithRun();
      const call = newCall(ids);
      await journal.start(call);
      const blocks = [
        { type: "text", text: "first" },
        { type: "text", text: 'second, with "quotes" and ünïcode' },
      ];
      const done = await journal.finish({ ...ids, toolCallId: call.toolCallId, attempt: 1 }, { state: "failed", result: blocks, finishedAt: at(3) });
      expect(done?.result).toEqual(blocks);
    });

    it("puts a started attempt in doubt; one in doubt can still be skipped or answered, and a retry is the next attempt", async () => {
      const ids = await conversationWithRun();
      const first = newCall(ids);
      await journal.start(first);
      const key = { conversationId: ids.conversationId, toolCallId: first.toolCallId, attempt: 1 };
      expect(await journal.markInDoubt(key)).toMatchObject({ state: "in_doubt", finishedAt: null, result: null });
      expect(await journal.markInDoubt(key)).toMatchObject({ state: "in_doubt" });
      expect(await journal.markInDoubt({ ...key, attempt: 9 })).toBeNull();

      // A retry in a later run: a second attempt of the same call.
      const later = await conversationWithRun();
      const retry = await journal.start({ ...first, attempt: 2, runId: later.runId, startedAt: at(10) });
      expect(await journal.latest(ids.conversationId, first.toolCallId)).toEqual(retry);
      expect(await journal.finish({ ...key, attempt: 2 }, { state: "succeeded", result: "paid", finishedAt: at(11) })).toMatchObject({
        attempt: 2,
        state: "succeeded",
      });

      // Another call in doubt, skipped with a result for the model.
      const other = newCall(ids);
      await journal.start(other);
      const otherKey = { conversationId: ids.conversationId, toolCallId: other.toolCallId, attempt: 1 };
      await journal.markInDoubt(otherKey);
      expect(await journal.finish(otherKey, { state: "skipped", result: "it went through", finishedAt: at(12) })).toMatchObject({
        state: "skipped",
        result: "it went through",
        finishedAt: at(12),
      });
      expect(await journal.markInDoubt(otherKey)).toMatchObject({ state: "skipped" });
    });

    it("refuses a state outside the five, and an attempt of a run or conversation that does not exist", async () => {
      const ids = await conversationWithRun();
      const call = newCall(ids);
      await journal.start(call);
      await expect(
        journal.finish({ ...ids, toolCallId: call.toolCallId, attempt: 1 }, { state: "done" as never, result: null, finishedAt: at(3) }),
      ).rejects.toThrow();
      await expect(journal.start(newCall({ conversationId: ids.conversationId, runId: randomUUID() }))).rejects.toThrow();
      await expect(journal.start(newCall({ conversationId: randomUUID(), runId: ids.runId }))).rejects.toThrow();
    });

    it("lists each run's attempts oldest first, every run asked for a key, and forgets them with their conversation", async () => {
      const a = await conversationWithRun();
      const b = await conversationWithRun();
      const late = await journal.start(newCall(a, { startedAt: at(30), name: "late" }));
      const early = await journal.start(newCall(a, { startedAt: at(20), name: "early" }));
      const other = await journal.start(newCall(b, { startedAt: at(25) }));
      const nobody = randomUUID();
      const listed = await journal.byRuns([a.runId, b.runId, nobody]);
      expect([...listed.keys()].sort()).toEqual([a.runId, b.runId, nobody].sort());
      expect(listed.get(a.runId)).toEqual([early, late]);
      expect(listed.get(b.runId)).toEqual([other]);
      expect(listed.get(nobody)).toEqual([]);
      expect((await journal.byRuns([])).size).toBe(0);

      // A conversation with a running run cannot be deleted: the run ends first.
      await runs.finishRun(a.runId, {
        status: "completed",
        errorCode: null,
        errorMessage: null,
        partialOutput: null,
        finishedAt: at(40),
        endMark: "0002",
        lastEventSeq: 2,
        messageCount: 2,
        usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
        interrupts: [],
      });
      await runs.deleteConversation(a.conversationId);
      expect((await journal.byRuns([a.runId])).get(a.runId)).toEqual([]);
      expect(await journal.latest(a.conversationId, early.toolCallId)).toBeNull();
      expect((await journal.byRuns([b.runId])).get(b.runId)).toEqual([other]);
    });
  });
}
