// The run store's conformance suite: every RunStore backend must pass it.
// Writes and refusals, owners and recovery, and every batch reader against a
// reference computed here from what was written.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { NotFoundError, QuotaExceededError, RunInProgressError } from "../../src/domain/errors.ts";
import type { NewRun, RunOutcome, RunRecord } from "../../src/domain/records.ts";
import type { RunStore } from "../../src/storage/run-store/types.ts";
import type { PageQuery } from "../../src/storage/page.ts";
import { emptyCheckpoint, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { StorageBackend } from "./backends.ts";
import { referencePage } from "./reference-page.ts";
import { conversation as newConversation, OUTCOME_EXTRAS } from "./records.ts";
import { HumanMessage } from "@langchain/core/messages";
import type { CheckpointReads } from "../../src/storage/checkpoint-reads/types.ts";
import { threadMessageCounts } from "../../src/runs/message-counts.ts";

/** A head checkpoint holding `count` messages, as LangGraph writes one. */
async function writeThread(saver: BaseCheckpointSaver, threadId: string, checkpointId: string, count: number): Promise<void> {
  const messages = Array.from({ length: count }, (_, i) => new HumanMessage({ content: `m${i}`, id: `m${i}` }));
  const checkpoint = { ...emptyCheckpoint(), id: checkpointId, channel_values: { messages }, channel_versions: { messages: checkpointId } };
  await saver.put(
    { configurable: { thread_id: threadId, checkpoint_ns: "" } },
    checkpoint,
    { source: "loop", step: count, parents: {} },
    { messages: checkpointId },
  );
}

/**
 * The invariant every scenario ends on: a conversation's derived fields say what
 * its runs say (activeRun the queued or running one, latestRun the last started, updatedAt
 * no earlier than any run's start or end) and, where its thread has a head
 * checkpoint and no run is active, what the thread says (messageCount).
 */
async function expectDerivedFieldsTrue(store: RunStore, reads: CheckpointReads, ids: string[]): Promise<void> {
  const [conversations, runsOf, active, latest, heads] = await Promise.all([
    store.conversations(ids),
    store.runsOf(ids),
    store.activeRuns(ids),
    store.latestRuns(ids),
    reads.heads(ids),
  ]);
  const counts = await threadMessageCounts(reads, [...heads.keys()]);
  const problems: string[] = [];
  for (const [id, conversation] of conversations) {
    const runs = runsOf.get(id) ?? [];
    const running = runs.filter((r) => r.status === "running" || r.status === "queued");
    if ((active.get(id)?.id ?? null) !== (running[0]?.id ?? null) || running.length > 1)
      problems.push(`${id}: activeRun ${active.get(id)?.id}, running ${running.map((r) => r.id)}`);
    const byStart = [...runs].sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if ((latest.get(id)?.id ?? null) !== (byStart.at(-1)?.id ?? null))
      problems.push(`${id}: latestRun ${latest.get(id)?.id}, last started ${byStart.at(-1)?.id}`);
    const lastChange = Math.max(0, ...runs.flatMap((r) => [r.startedAt.getTime(), r.finishedAt?.getTime() ?? 0]));
    if (conversation.updatedAt.getTime() < lastChange)
      problems.push(`${id}: updatedAt ${conversation.updatedAt.toISOString()} before ${new Date(lastChange).toISOString()}`);
    if (heads.has(id) && running.length === 0 && conversation.messageCount !== counts.get(id))
      problems.push(`${id}: messageCount ${conversation.messageCount}, thread ${counts.get(id)}`);
  }
  expect(problems).toEqual([]);
}

export function describeRunStoreConformance(backend: StorageBackend) {
  const createStore = async () => {
    const opened = await backend.open();
    return { store: opened.storage.runs, saver: opened.storage.saver, reads: opened.storage.checkpointReads, close: () => opened.close() };
  };
  describe(`RunStore conformance: ${backend.name}`, () => {
    const at = (ms: number) => new Date(Date.UTC(2026, 10, 30, 14, 2, 0, ms));
    // The conversations a scenario wrote to, for the invariant checked after it.
    const touched = new Set<string>();
    const newRun = (conversationId: string, overrides: Partial<NewRun> = {}): NewRun => (
      touched.add(conversationId),
      {
        id: randomUUID(),
        conversationId,
        kind: "start",
        input: "hello",
        startedAt: at(0),
        startMark: "0001",
        ownerId: "owner-a",
        startCheckpointId: null,
        ...overrides,
      }
    );
    const outcome = (overrides: Partial<RunOutcome> = {}): RunOutcome => ({
      status: "completed",
      errorCode: null,
      errorMessage: null,
      partialOutput: null,
      finishedAt: at(500),
      endMark: "0002",
      lastEventSeq: 7,
      messageCount: 2,
      ...OUTCOME_EXTRAS,
      ...overrides,
    });

    async function withStore(fn: (store: RunStore, saver: BaseCheckpointSaver, reads: CheckpointReads) => Promise<void>) {
      const { store, saver, reads, close } = await createStore();
      touched.clear();
      try {
        await fn(store, saver, reads);
        await expectDerivedFieldsTrue(store, reads, [...touched]);
      } finally {
        await close();
      }
    }

    it("creates a conversation with its running run in one step", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run, conversation } = await store.startRun(newRun(id), newConversation("First"));
        expect(conversation).toMatchObject({ id, title: "First", messageCount: 0 });
        expect(conversation.createdAt.getTime()).toBe(at(0).getTime());
        expect(run).toMatchObject({ conversationId: id, status: "running", kind: "start", input: "hello", ownerId: "owner-a", finishedAt: null });
        expect((await store.activeRun(id))?.id).toBe(run.id);
      }));

    it("records an edit run with what it wrote and the checkpoint it edited; it is an active run like any other until it ends", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run: first } = await store.startRun(newRun(id), newConversation("Edited"));
        await store.finishRun(first.id, outcome());
        const edit = { values: { messages: [{ id: "m1", role: "USER", content: "changed" }], notes: [1, { deep: true }] }, asNode: "__start__" };
        const { run } = await store.startRun(
          newRun(id, { kind: "edit", input: null, startCheckpointId: "1f0c0000-0000-6000-8000-000000000001", startMark: "0003", edit }),
        );
        expect(run).toMatchObject({ kind: "edit", status: "running", input: null, startCheckpointId: "1f0c0000-0000-6000-8000-000000000001", edit });
        await expect(store.startRun(newRun(id, { startMark: "0004" }))).rejects.toBeInstanceOf(RunInProgressError);
        await store.finishRun(run.id, outcome({ endMark: "0005" }));
        expect((await store.getRun(run.id))?.edit).toEqual(edit);
        expect((await store.runs([run.id])).get(run.id)).toMatchObject({ kind: "edit", status: "completed", edit });
        expect((await store.runsOf([id])).get(id)!.map((r) => [r.kind, r.edit])).toEqual([
          ["start", null],
          ["edit", edit],
        ]);
      }));

    it("creates a fork with its origin, agent and copied message count, with or without a first run; deleting the source forgets the origin", () =>
      withStore(async (store) => {
        const source = randomUUID();
        const { run } = await store.startRun(newRun(source), newConversation("Source"));
        await store.finishRun(run.id, outcome());
        const forkedFrom = { conversationId: source, checkpointId: "1f0c0000-0000-6000-8000-000000000001" };
        const quiet = randomUUID();
        const created = await store.createConversation(quiet, newConversation("Source (fork)", { agent: "planner", forkedFrom, messageCount: 3 }), at(700));
        expect(created).toMatchObject({
          id: quiet,
          title: "Source (fork)",
          agent: "planner",
          messageCount: 3,
          forkedFromConversationId: source,
          forkedFromCheckpointId: forkedFrom.checkpointId,
        });
        expect(created.createdAt.getTime()).toBe(at(700).getTime());
        expect(await store.getConversation(quiet)).toEqual(created);
        const busy = randomUUID();
        const started = await store.startRun(newRun(busy, { startedAt: at(800) }), newConversation("Source (fork)", { forkedFrom, messageCount: 2 }));
        expect(started.conversation).toMatchObject({ id: busy, messageCount: 2, forkedFromConversationId: source });
        expect(await store.createConversation(randomUUID(), newConversation("plain"), at(900))).toMatchObject({
          messageCount: 0,
          forkedFromConversationId: null,
          forkedFromCheckpointId: null,
        });
        await store.deleteConversation(source);
        expect(await store.getConversation(quiet)).toMatchObject({ messageCount: 3, forkedFromConversationId: null });
      }));

    it("refuses a second running run and an unknown conversation, writing nothing", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id), newConversation("t"));
        const refused = (await store.startRun(newRun(id, { startedAt: at(100) })).catch((e: unknown) => e)) as RunInProgressError;
        expect(refused).toBeInstanceOf(RunInProgressError);
        expect(refused.activeRunId).toBe(run.id);
        expect((await store.getConversation(id))?.updatedAt.getTime()).toBe(at(0).getTime());
        const missing = randomUUID();
        await expect(store.startRun(newRun(missing))).rejects.toBeInstanceOf(NotFoundError);
        expect(await store.getConversation(missing)).toBeNull();
      }));

    it("finishes once: outcome, updated_at and message_count together; terminal states never change", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id), newConversation("t"));
        const finished = await store.finishRun(run.id, outcome({ status: "failed", errorCode: "MODEL_ERROR", errorMessage: "boom", partialOutput: "par" }));
        expect(finished).toMatchObject({
          status: "failed",
          errorCode: "MODEL_ERROR",
          errorMessage: "boom",
          partialOutput: "par",
          endMark: "0002",
          lastEventSeq: 7,
        });
        expect(finished?.finishedAt?.getTime()).toBe(at(500).getTime());
        const conversation = await store.getConversation(id);
        expect(conversation).toMatchObject({ messageCount: 2 });
        expect(conversation?.updatedAt.getTime()).toBe(at(500).getTime());
        expect(await store.finishRun(run.id, outcome({ status: "completed" }))).toBeNull();
        expect((await store.getRun(run.id))?.status).toBe("failed");
        // The next run may start now.
        const next = await store.startRun(newRun(id, { startedAt: at(600), kind: "resume", input: null }));
        expect(next.run.kind).toBe("resume");
        expect(next.conversation.updatedAt.getTime()).toBe(at(600).getTime());
      }));

    it("renames and deletes conversations (runs go with them)", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id), newConversation("t"));
        await expect(store.deleteConversation(id)).rejects.toBeInstanceOf(RunInProgressError);
        await store.finishRun(run.id, outcome());
        expect((await store.renameConversation(id, "New", at(900))).title).toBe("New");
        await expect(store.renameConversation(randomUUID(), "x", at(900))).rejects.toBeInstanceOf(NotFoundError);
        expect((await store.deleteConversation(id)).id).toBe(id);
        expect(await store.getConversation(id)).toBeNull();
        expect(await store.getRun(run.id)).toBeNull();
        await expect(store.deleteConversation(id)).rejects.toBeInstanceOf(NotFoundError);
      }));

    it("interrupts only the runs of gone or unknown owners", () =>
      withStore(async (store) => {
        await store.registerOwner({ id: "live", pid: 1, host: "h", startedAt: at(0), heartbeatAt: at(0) });
        await store.registerOwner({ id: "gone", pid: 2, host: "h", startedAt: at(0), heartbeatAt: at(0) });
        const live = await store.startRun(newRun(randomUUID(), { ownerId: "live" }), newConversation("a"));
        const gone = await store.startRun(newRun(randomUUID(), { ownerId: "gone" }), newConversation("b"));
        const orphan = await store.startRun(newRun(randomUUID(), { ownerId: "never-registered" }), newConversation("c"));
        const changed = await store.interruptRunsOfGoneOwners(["gone"], at(700), "0003", "stopped", new Map());
        expect(changed.map((r: RunRecord) => r.id).sort()).toEqual([gone.run.id, orphan.run.id].sort());
        for (const r of changed) expect(r).toMatchObject({ status: "interrupted", errorCode: "INTERRUPTED", errorMessage: "stopped", endMark: "0003" });
        expect((await store.getRun(live.run.id))?.status).toBe("running");
        expect((await store.listOwners()).map((o: { id: string }) => o.id)).toEqual(["live"]);
        expect(await store.notRunning([live.run.id, gone.run.id])).toEqual([gone.run.id]);
        await store.heartbeat("live", at(800));
        expect((await store.listOwners())[0]?.heartbeatAt.getTime()).toBe(at(800).getTime());
        await store.removeOwner("live");
        expect(await store.listOwners()).toEqual([]);
      }));
    it("records the thread's message count wherever an outcome is recorded without the executing process", () =>
      withStore(async (store, saver, reads) => {
        const conversations = [randomUUID(), randomUUID(), randomUUID()];
        const runs: RunRecord[] = [];
        for (const [i, id] of conversations.entries()) {
          runs.push((await store.startRun(newRun(id, { ownerId: "gone", startedAt: at(i) }), newConversation(`t${i}`))).run);
          await writeThread(saver, id, `000${i}`, i + 1);
        }
        // Recovery reads its orphans first, then records them with their threads' counts, without changing them on the read.
        expect((await store.runsOfGoneOwners(["gone"])).map((r) => r.id).sort()).toEqual(runs.map((r) => r.id).sort());
        expect((await store.getRun(runs[0]!.id))?.status).toBe("running");
        const counts = await threadMessageCounts(reads, conversations.slice(0, 2));
        expect([...counts.values()]).toEqual([1, 2]);
        const changed = await store.interruptRunsOfGoneOwners(["gone"], at(700), "0009", "stopped", counts);
        expect(changed).toHaveLength(3);
        const recorded = await store.conversations(conversations);
        expect(conversations.map((id) => recorded.get(id)?.messageCount)).toEqual([1, 2, 0]); // the third was not counted: kept
        for (const id of conversations) expect(recorded.get(id)?.updatedAt.getTime()).toBe(at(700).getTime());
        await store.recordMessageCounts(await threadMessageCounts(reads, [conversations[2]!]));
        expect((await store.getConversation(conversations[2]!))?.messageCount).toBe(3);
        // A cancel recorded by another process, then the executing one's own count.
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id, { startedAt: at(800) }), newConversation("c"));
        await writeThread(saver, id, "0010", 2);
        await store.finishRun(run.id, outcome({ status: "cancelled", errorCode: "CANCELLED", messageCount: 2, finishedAt: at(850) }));
        await writeThread(saver, id, "0011", 3);
        await store.completeEndedElsewhere(run.id, { lastEventSeq: 4, partialOutput: null, endMark: "0012", messageCount: 3 });
        expect((await store.getConversation(id))?.messageCount).toBe(3);
        await store.completeEndedElsewhere(run.id, { lastEventSeq: 5, partialOutput: null, endMark: "0012" });
        expect((await store.getConversation(id))?.messageCount).toBe(3);
      }));

    it("holds a starter to its quotas inside the start: active runs at once, runs per minute; a refusal writes nothing", () =>
      withStore(async (store) => {
        const quota = { activeRuns: 2, runsPerMinute: 3 };
        const bob = (conversationId: string, ms: number) => newRun(conversationId, { startedBy: "bob", startedAt: at(ms), quota });
        const a = await store.startRun(bob(randomUUID(), 0), newConversation("a"));
        await store.startRun(bob(randomUUID(), 10), newConversation("b"));
        // Someone else's runs do not count against bob.
        await store.startRun(newRun(randomUUID(), { startedBy: "carol", startedAt: at(15), quota }), newConversation("c"));
        const refusedId = randomUUID();
        const active = (await store.startRun(bob(refusedId, 20), newConversation("refused")).catch((e: unknown) => e)) as QuotaExceededError;
        expect(active).toBeInstanceOf(QuotaExceededError);
        expect(active).toMatchObject({ limit: "QUOTA_ACTIVE_RUNS", retryAfterSeconds: 1 });
        expect(await store.getConversation(refusedId)).toBeNull();
        // Concurrent starts at the limit: exactly the ones that fit win.
        await store.finishRun(a.run.id, outcome({ finishedAt: at(30) }));
        const raced = await Promise.allSettled([0, 1, 2].map((i) => store.startRun(bob(randomUUID(), 40 + i), newConversation(`r${i}`))));
        expect(raced.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        // Three starts within the minute (0, 10, 40-42): a fourth waits until the oldest is a minute old.
        const perMinute = (await store
          .startRun(newRun(randomUUID(), { startedBy: "bob", startedAt: at(500), quota: { activeRuns: 0, runsPerMinute: 3 } }), newConversation("late"))
          .catch((e: unknown) => e)) as QuotaExceededError;
        expect(perMinute).toMatchObject({ limit: "QUOTA_RUNS_PER_MINUTE", retryAfterSeconds: 60 });
        // Without a quota nothing is counted.
        await store.startRun(newRun(randomUUID(), { startedBy: "bob", startedAt: at(600) }), newConversation("free"));
      }));

    it("counts a starter's forks toward its writes per minute: one as one write, with its run once; a refused fork writes nothing", () =>
      withStore(async (store) => {
        const quota = { activeRuns: 0, runsPerMinute: 3 };
        const { conversation: source } = await store.startRun(newRun(randomUUID(), { startedBy: "carol" }), newConversation("source", { owner: "carol" }));
        const fork = (title: string) => newConversation(title, { owner: "dana", forkedFrom: { conversationId: source.id, checkpointId: randomUUID() } });
        // A fork with a message: its run and its conversation are one write.
        await store.startRun(newRun(randomUUID(), { startedBy: "dana", startedAt: at(0), quota }), fork("with a run"));
        await store.createConversation(randomUUID(), fork("without"), at(10), quota);
        await store.checkQuota("dana", quota, at(20));
        await store.createConversation(randomUUID(), fork("the third"), at(30), quota);
        const checked = (await store.checkQuota("dana", quota, at(40)).catch((e: unknown) => e)) as QuotaExceededError;
        expect(checked).toBeInstanceOf(QuotaExceededError);
        expect(checked).toMatchObject({ limit: "QUOTA_RUNS_PER_MINUTE", retryAfterSeconds: 60 });
        const refusedId = randomUUID();
        const refused = await store.createConversation(refusedId, fork("refused"), at(50), quota).catch((e: unknown) => e);
        expect(refused).toMatchObject({ limit: "QUOTA_RUNS_PER_MINUTE" });
        expect(await store.getConversation(refusedId)).toBeNull();
        // Dana's writes are not carol's; without a quota nothing is checked.
        await store.checkQuota("carol", quota, at(60));
        await store.createConversation(randomUUID(), fork("free"), at(70));
      }));

    it("lets exactly one of concurrent starts on a conversation win", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id), newConversation("t"));
        await store.finishRun(run.id, outcome());
        const attempts = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => store.startRun(newRun(id, { startedAt: at(600 + i) }))));
        const won = attempts.filter((a) => a.status === "fulfilled");
        expect(won).toHaveLength(1);
        for (const lost of attempts.filter((a) => a.status === "rejected")) expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(RunInProgressError);
        expect((await store.activeRun(id))?.id).toBe((won[0] as PromiseFulfilledResult<{ run: { id: string } }>).value.run.id);
      }));

    it("queues a run that names an endpoint and admits it by claim: within each endpoint's concurrency and the claimer's room, starters in turn", () =>
      withStore(async (store) => {
        const E = "http://127.0.0.1:11434#qwen3";
        const F = "agent:other";
        const ids = Array.from({ length: 5 }, () => randomUUID());
        const queue = (i: number, who: string, endpoint: string) =>
          store.startRun(newRun(ids[i]!, { startedAt: at(i * 10), startedBy: who, startedByRole: "user", endpoint }), newConversation(`q${i}`));
        const started = [
          await queue(0, "alice", E),
          await queue(1, "alice", E),
          await queue(2, "alice", E),
          await queue(3, "bob", E),
          await queue(4, "carol", F),
        ];
        const [a0, a1, a2, b0, c0] = started.map((s) => s.run);
        for (const [i, run] of [a0, a1, a2, b0, c0].entries()) {
          expect(run).toMatchObject({
            status: "queued",
            ownerId: null,
            queueReason: null,
            endpoint: i === 4 ? F : E,
            startedBy: ["alice", "alice", "alice", "bob", "carol"][i],
          });
          expect(run!.queuedAt?.getTime()).toBe(at(i * 10).getTime());
        }
        // A queued run is the conversation's active run: a second one is refused.
        await expect(store.startRun(newRun(ids[0]!, { startedAt: at(100), endpoint: E }))).rejects.toBeInstanceOf(RunInProgressError);
        expect((await store.activeRun(ids[0]!))?.id).toBe(a0!.id);
        expect([...(await store.activeRuns(ids)).values()].map((r) => r.id).sort()).toEqual([a0, a1, a2, b0, c0].map((r) => r!.id).sort());
        const positions = await store.queuePositions([a0, a1, a2, b0, c0].map((r) => r!.id));
        expect([a0, a1, a2, b0, c0].map((r) => positions.get(r!.id))).toEqual([1, 2, 3, 4, 1]);

        // No room: nothing is claimed, but each run on an endpoint the claimer serves learns why it waits.
        expect(await store.claimQueued({ ownerId: "owner-a", room: 0, endpoints: new Map([[E, 1]]), at: at(200) })).toEqual([]);
        expect((await store.runs([a0!.id, c0!.id])).get(a0!.id)?.queueReason).toBe("INSTANCE_FULL");
        expect((await store.getRun(c0!.id))?.queueReason).toBeNull();

        // E serves one run at once: the oldest goes; the rest wait MODEL_BUSY. F is not the claimer's.
        const first = await store.claimQueued({ ownerId: "owner-a", room: 5, endpoints: new Map([[E, 1]]), at: at(300) });
        expect(first.map((r) => [r.id, r.status, r.ownerId, r.queueReason])).toEqual([[a0!.id, "running", "owner-a", null]]);
        expect((await store.getRun(a1!.id))?.queueReason).toBe("MODEL_BUSY");
        expect(await store.claimQueued({ ownerId: "owner-a", room: 5, endpoints: new Map([[E, 1]]), at: at(310) })).toEqual([]);

        // Alice was served last: bob, never served, goes before her older runs; carol's endpoint has room.
        await store.finishRun(a0!.id, outcome({ finishedAt: at(400) }));
        const second = await store.claimQueued({
          ownerId: "owner-b",
          room: 5,
          endpoints: new Map([
            [E, 1],
            [F, 2],
          ]),
          at: at(410),
        });
        expect(second.map((r) => r.id).sort()).toEqual([b0!.id, c0!.id].sort());
        expect(second.every((r) => r.status === "running" && r.ownerId === "owner-b")).toBe(true);

        // A queued run's cancel ends it at once; the queue behind it moves up.
        expect(await store.finishRun(a1!.id, outcome({ status: "cancelled", errorCode: "CANCELLED", finishedAt: at(420), messageCount: null }))).toMatchObject({
          status: "cancelled",
        });
        expect((await store.queuePositions([a2!.id])).get(a2!.id)).toBe(1);
        expect((await store.queuePositions([a1!.id])).has(a1!.id)).toBe(false);

        // Two claims racing for E's one free slot: exactly one takes alice's last run.
        await store.finishRun(b0!.id, outcome({ finishedAt: at(500) }));
        const racing = await Promise.all(
          ["owner-a", "owner-b"].map((ownerId) => store.claimQueued({ ownerId, room: 5, endpoints: new Map([[E, 1]]), at: at(510) })),
        );
        expect(racing.flat().map((r) => r.id)).toEqual([a2!.id]);
        await store.finishRun(a2!.id, outcome({ finishedAt: at(600) }));
        await store.finishRun(c0!.id, outcome({ finishedAt: at(600) }));
      }));

    it("leaves a queued run to the instance that took its request for preferOwnMs, then lets any instance take it", () =>
      withStore(async (store) => {
        const E = "agent:prefer";
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id, { startedAt: at(0), endpoint: E }), newConversation("p"));
        const claim = (ownerId: string, ms: number, own: string[]) =>
          store.claimQueued({ ownerId, room: 5, endpoints: new Map([[E, 1]]), at: at(ms), own: new Set(own), preferOwnMs: 5_000 });
        // Another instance, within the window: nothing.
        expect(await claim("owner-b", 4_000, [])).toEqual([]);
        expect((await store.getRun(run.id))?.status).toBe("queued");
        // Past the window (the instance that queued it is gone, say): anyone takes it, once.
        const taken = await claim("owner-b", 5_000, []);
        expect(taken.map((r) => [r.id, r.ownerId])).toEqual([[run.id, "owner-b"]]);
        expect(await claim("owner-a", 5_100, [run.id])).toEqual([]);
        await store.finishRun(run.id, outcome({ finishedAt: at(6_000) }));

        // The instance that queued it takes it at once.
        const next = (await store.startRun(newRun(randomUUID(), { startedAt: at(7_000), endpoint: E }), newConversation("p2"))).run;
        expect((await claim("owner-a", 7_010, [next.id])).map((r) => r.ownerId)).toEqual(["owner-a"]);
        await store.finishRun(next.id, outcome({ finishedAt: at(8_000) }));
      }));

    it("puts a run its model turned away back in the queue, held by its owner: its slot free, admitted again by that owner alone, recovered with it", () =>
      withStore(async (store) => {
        const E = "agent:busy";
        await store.registerOwner({ id: "owner-a", pid: 1, host: "h", startedAt: at(0), heartbeatAt: at(0) });
        await store.registerOwner({ id: "owner-b", pid: 2, host: "h", startedAt: at(0), heartbeatAt: at(0) });
        const claim = (ownerId: string, ms: number, own: string[] = []) =>
          store.claimQueued({ ownerId, room: 5, endpoints: new Map([[E, 1]]), at: at(ms), own: new Set(own) });
        const held = (await store.startRun(newRun(randomUUID(), { startedAt: at(0), startMark: "0001", endpoint: E }), newConversation("held"))).run;
        expect((await claim("owner-a", 10)).map((r) => r.id)).toEqual([held.id]);

        // Only its owner puts it back, and only while it runs.
        expect(await store.requeueHeld(held.id, "owner-b", at(20))).toBe(false);
        expect(await store.requeueHeld(held.id, "owner-a", at(30))).toBe(true);
        expect(await store.requeueHeld(held.id, "owner-a", at(31))).toBe(false);
        const waiting = await store.getRun(held.id);
        expect(waiting).toMatchObject({ status: "queued", queueReason: "MODEL_BUSY", ownerId: "owner-a", startMark: "0001" });
        expect(waiting?.queuedAt?.getTime()).toBe(at(30).getTime());
        expect((await store.activeRun(held.conversationId))?.id).toBe(held.id);
        expect((await store.queuePositions([held.id])).get(held.id)).toBe(1);
        // Still executing for its owner: not one a heartbeat should stop.
        expect(await store.notRunning([held.id])).toEqual([]);

        // Its slot is free: another run of the endpoint is admitted, by any instance; the held one is not taken.
        const other = (await store.startRun(newRun(randomUUID(), { startedAt: at(40), endpoint: E }), newConversation("other"))).run;
        expect((await claim("owner-b", 50, [held.id])).map((r) => r.id)).toEqual([other.id]);
        await store.finishRun(other.id, outcome({ finishedAt: at(60) }));
        // Not another instance's to take, nor its owner's until it names it (its backoff over).
        expect(await claim("owner-b", 70, [held.id])).toEqual([]);
        expect(await claim("owner-a", 80)).toEqual([]);
        expect((await claim("owner-a", 90, [held.id])).map((r) => [r.id, r.status, r.ownerId, r.queueReason])).toEqual([[held.id, "running", "owner-a", null]]);

        // Cancelled while held, its correlation window keeps what it recorded before.
        expect(await store.requeueHeld(held.id, "owner-a", at(100))).toBe(true);
        expect(await store.finishRun(held.id, outcome({ status: "cancelled", errorCode: "CANCELLED", finishedAt: at(110), endMark: "0011" }))).toMatchObject({
          status: "cancelled",
          startMark: "0001",
          endMark: "0011",
        });

        // Its owner gone, a held run is recovered as interrupted; a plain queued run stays for any instance.
        const second = (await store.startRun(newRun(randomUUID(), { startedAt: at(200), startMark: "0020", endpoint: E }), newConversation("held 2"))).run;
        expect((await claim("owner-a", 210)).map((r) => r.id)).toEqual([second.id]);
        expect(await store.requeueHeld(second.id, "owner-a", at(220))).toBe(true);
        const plain = (await store.startRun(newRun(randomUUID(), { startedAt: at(230), endpoint: E }), newConversation("plain"))).run;
        expect((await store.runsOfGoneOwners(["owner-a"])).map((r) => r.id)).toEqual([second.id]);
        const recovered = await store.interruptRunsOfGoneOwners(["owner-a"], at(300), "0030", "stopped", new Map());
        expect(recovered.map((r) => [r.id, r.status, r.errorCode, r.startMark])).toEqual([[second.id, "interrupted", "INTERRUPTED", "0020"]]);
        expect((await store.getRun(plain.id))?.status).toBe("queued");
        expect((await claim("owner-b", 310)).map((r) => r.id)).toEqual([plain.id]);
        await store.finishRun(plain.id, outcome({ finishedAt: at(400) }));
      }));

    it("queues a run behind the conversation's active one when asked (ENQUEUE), and promotes the oldest once nothing else is active", () =>
      withStore(async (store) => {
        const E = "agent:line";
        const conversationId = randomUUID();
        const claim = (ms: number) => store.claimQueued({ ownerId: "owner-a", room: 5, endpoints: new Map([[E, 5]]), at: at(ms) });
        const first = (await store.startRun(newRun(conversationId, { startedAt: at(0), endpoint: E }), newConversation("line"))).run;
        expect((await claim(10)).map((r) => r.id)).toEqual([first.id]);
        // Without `behind` the active run refuses; with it the run waits behind, and so does the next.
        await expect(store.startRun(newRun(conversationId, { startedAt: at(20), endpoint: E }))).rejects.toBeInstanceOf(RunInProgressError);
        const second = (await store.startRun(newRun(conversationId, { startedAt: at(30), startMark: "0003", endpoint: E, behind: true }))).run;
        const third = (await store.startRun(newRun(conversationId, { startedAt: at(40), startMark: "0004", endpoint: E, behind: true }))).run;
        const dropped = (await store.startRun(newRun(conversationId, { startedAt: at(50), startMark: "0005", endpoint: E, behind: true }))).run;
        for (const run of [second, third, dropped]) expect(run).toMatchObject({ status: "queued", queueReason: "BEHIND_ACTIVE_RUN", ownerId: null });
        expect((await store.activeRun(conversationId))?.id).toBe(first.id);
        expect((await store.activeRuns([conversationId])).get(conversationId)?.id).toBe(first.id);
        // While the active run runs, claims leave the line alone.
        expect(await claim(60)).toEqual([]);
        // A cancel in line closes its window where it ends: it holds no checkpoint of the run ahead.
        const cancelled = await store.finishRun(dropped.id, outcome({ status: "cancelled", errorCode: "CANCELLED", finishedAt: at(70), endMark: "0007" }));
        expect(cancelled).toMatchObject({ status: "cancelled", startMark: "0007", endMark: "0007" });

        await store.finishRun(first.id, outcome({ finishedAt: at(100), endMark: "0010" }));
        // Between the end and the next claim, the first in line stands as the active run; a plain start is still refused.
        expect((await store.activeRun(conversationId))?.id).toBe(second.id);
        await expect(store.startRun(newRun(conversationId, { startedAt: at(110), endpoint: E }))).rejects.toMatchObject({ activeRunId: second.id });
        expect((await claim(120)).map((r) => r.id)).toEqual([second.id]);
        expect((await store.getRun(third.id))?.queueReason).toBe("BEHIND_ACTIVE_RUN");
        // Its start moves past what the run ahead recorded.
        await store.moveStart(second.id, "0011", "checkpoint-after-first");
        expect(await store.getRun(second.id)).toMatchObject({ startMark: "0011", startCheckpointId: "checkpoint-after-first" });
        await store.finishRun(second.id, outcome({ finishedAt: at(200), endMark: "0020" }));
        expect((await claim(210)).map((r) => r.id)).toEqual([third.id]);
        await store.finishRun(third.id, outcome({ finishedAt: at(300), endMark: "0030" }));
        expect(await store.activeRun(conversationId)).toBeNull();
      }));

    it("counts a starter's queued runs among its active ones for the quota", () =>
      withStore(async (store) => {
        const quota = { activeRuns: 1, runsPerMinute: 0 };
        const first = randomUUID();
        await store.startRun(newRun(first, { startedBy: "dana", quota, endpoint: "agent:a" }), newConversation("one"));
        const second = randomUUID();
        await expect(store.startRun(newRun(second, { startedBy: "dana", quota, endpoint: "agent:a" }), newConversation("two"))).rejects.toBeInstanceOf(
          QuotaExceededError,
        );
        expect(await store.getConversation(second)).toBeNull();
      }));

    it("adds what only the executing process knows to a run another process ended", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id), newConversation("t"));
        // Still running: nothing changes.
        await store.completeEndedElsewhere(run.id, { lastEventSeq: 3, partialOutput: "x", endMark: "0009" });
        expect(await store.getRun(run.id)).toMatchObject({ lastEventSeq: 0, partialOutput: null, endMark: null });
        await store.finishRun(
          run.id,
          outcome({ status: "cancelled", errorCode: "CANCELLED", errorMessage: "cancelled", partialOutput: null, endMark: "0005", lastEventSeq: 1 }),
        );
        await store.completeEndedElsewhere(run.id, { lastEventSeq: 12, partialOutput: "streamed", endMark: "0004" });
        // The seq is replaced, the text kept if none was recorded, the window end only moved later.
        expect(await store.getRun(run.id)).toMatchObject({
          status: "cancelled",
          errorCode: "CANCELLED",
          lastEventSeq: 12,
          partialOutput: "streamed",
          endMark: "0005",
        });
        await store.completeEndedElsewhere(run.id, { lastEventSeq: 13, partialOutput: "other", endMark: "0010" });
        expect(await store.getRun(run.id)).toMatchObject({ lastEventSeq: 13, partialOutput: "streamed", endMark: "0010" });
        expect(await store.notRunning([])).toEqual([]);
        expect(await store.notRunning([run.id, randomUUID()])).toEqual([run.id]);
      }));
    it("answers the batch readers as the rows say: conversations, runs, active, latest, all runs in start order, counts", () =>
      withStore(async (store) => {
        const a = randomUUID();
        const b = randomUUID();
        const none = randomUUID();
        const first = await store.startRun(newRun(a, { startedAt: at(10), startMark: "0010" }), newConversation("a"));
        await store.finishRun(first.run.id, outcome({ finishedAt: at(20), endMark: "0020" }));
        const second = await store.startRun(newRun(a, { startedAt: at(30), startMark: "0030", kind: "resume", input: null }));
        const onB = await store.startRun(newRun(b, { startedAt: at(40), startMark: "0040" }), newConversation("b"));
        await store.finishRun(onB.run.id, outcome({ finishedAt: at(50), endMark: "0050", status: "failed", errorCode: "MODEL_ERROR", errorMessage: "x" }));

        const conversations = await store.conversations([a, b, none]);
        expect([...conversations.keys()].sort()).toEqual([a, b].sort());
        expect(conversations.get(a)).toEqual(await store.getConversation(a));
        const runs = await store.runs([first.run.id, onB.run.id, randomUUID()]);
        expect([...runs.keys()].sort()).toEqual([first.run.id, onB.run.id].sort());
        expect(runs.get(onB.run.id)).toEqual(await store.getRun(onB.run.id));
        expect(runs.get(onB.run.id)).toMatchObject({ status: "failed", errorCode: "MODEL_ERROR", errorMessage: "x", endMark: "0050" });

        const active = await store.activeRuns([a, b, none]);
        expect([...active.keys()]).toEqual([a]);
        expect(active.get(a)?.id).toBe(second.run.id);
        const latest = await store.latestRuns([a, b, none]);
        expect(latest.get(a)?.id).toBe(second.run.id);
        expect(latest.get(b)?.id).toBe(onB.run.id);
        expect(latest.has(none)).toBe(false);

        const all = await store.runsOf([a, b, none]);
        expect(all.get(a)?.map((r) => r.id)).toEqual([first.run.id, second.run.id]);
        expect(all.get(b)?.map((r) => r.id)).toEqual([onB.run.id]);
        expect(all.get(none)).toEqual([]);
        const counts = await store.runCounts([a, b, none]);
        expect(Object.fromEntries(counts)).toEqual({ [a]: 2, [b]: 1, [none]: 0 });
        for (const empty of [store.conversations([]), store.runs([]), store.activeRuns([]), store.latestRuns([])]) expect((await empty).size).toBe(0);
      }));

    it("pages each conversation's runs, oldest first (startedAt, then id), for every first/after and last/before shape", () =>
      withStore(async (store) => {
        // Twelve runs per conversation over four start times, so most ties are broken by id.
        const conversations = [randomUUID(), randomUUID(), randomUUID()];
        const written = new Map<string, RunRecord[]>(conversations.map((id) => [id, []]));
        for (const [c, conversationId] of conversations.entries()) {
          for (let i = 0; i < 12; i++) {
            const { run } = await store.startRun(
              newRun(conversationId, { startedAt: at(1000 + c * 10 + (i % 4)), startMark: `m${c}-${i}` }),
              i === 0 ? newConversation("t") : undefined,
            );
            await store.finishRun(run.id, outcome({ finishedAt: at(2000 + i), endMark: `e${c}-${i}` }));
            written.get(conversationId)!.push((await store.getRun(run.id))!);
          }
        }
        const order = (x: RunRecord, y: RunRecord) => x.startedAt.getTime() - y.startedAt.getTime() || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
        const lists = new Map([...written].map(([id, list]) => [id, [...list].sort(order)]));
        const a = conversations[0]!;
        const aList = lists.get(a)!;
        const queries: PageQuery[] = [];
        for (const take of [1, 2, 5, 13, -1, -2, -5, -13, 0]) {
          for (const skip of [0, 1, 3]) {
            queries.push({ skip, take });
            for (const cursor of [aList[0]!.id, aList[5]!.id, aList[11]!.id, randomUUID()]) queries.push({ cursor, skip, take });
          }
        }
        for (const query of queries) {
          const pages = await store.runPages(conversations, query);
          for (const conversationId of conversations) {
            const list = lists.get(conversationId)!;
            const expected = query.cursor !== undefined && !list.some((r) => r.id === query.cursor) ? [] : referencePage(list, query);
            expect(
              pages.get(conversationId)?.map((r) => r.id),
              JSON.stringify({ conversationId, query }),
            ).toEqual(expected.map((r) => r.id));
          }
        }
        expect((await store.runPages([], { skip: 0, take: 5 })).size).toBe(0);
      }));
    it("stores each run's usage when it ends (none while it runs) and sums every conversation's runs in usageOf", () =>
      withStore(async (store) => {
        const a = randomUUID();
        const b = randomUUID();
        const none = randomUUID();
        const first = await store.startRun(newRun(a, { startedAt: at(10), startMark: "0010" }), newConversation("a"));
        expect(first.run.usage).toBeNull();
        expect((await store.getRun(first.run.id))?.usage).toBeNull();
        // A failed run's usage counts too: its model calls were made.
        const failedUsage = { inputTokens: 11, outputTokens: 3, modelCalls: 1, timeToFirstTokenMs: 42, modelDurationMs: 250 };
        const failed = await store.finishRun(
          first.run.id,
          outcome({ status: "failed", errorCode: "MODEL_ERROR", errorMessage: "x", usage: failedUsage, finishedAt: at(20) }),
        );
        expect(failed?.usage).toEqual(failedUsage);
        const second = await store.startRun(newRun(a, { startedAt: at(30), startMark: "0030", kind: "resume", input: null }));
        // A run that streamed no token has no time to first token.
        const silentUsage = { inputTokens: 20, outputTokens: 0, modelCalls: 2, timeToFirstTokenMs: null, modelDurationMs: 900 };
        await store.finishRun(second.run.id, outcome({ usage: silentUsage, finishedAt: at(35) }));
        expect((await store.getRun(second.run.id))?.usage).toEqual(silentUsage);
        // Still running: nothing to add yet.
        await store.startRun(newRun(a, { startedAt: at(40), startMark: "0040" }));
        const onB = await store.startRun(newRun(b, { startedAt: at(50), startMark: "0050" }), newConversation("b"));
        await store.finishRun(
          onB.run.id,
          outcome({ usage: { inputTokens: 7, outputTokens: 5, modelCalls: 1, timeToFirstTokenMs: 3, modelDurationMs: 60 }, finishedAt: at(60) }),
        );
        expect((await store.runs([first.run.id])).get(first.run.id)?.usage).toEqual(failedUsage);

        const usage = await store.usageOf([a, b, none]);
        expect(Object.fromEntries(usage)).toEqual({
          [a]: { inputTokens: 31, outputTokens: 3, modelCalls: 3, modelDurationMs: 1150 },
          [b]: { inputTokens: 7, outputTokens: 5, modelCalls: 1, modelDurationMs: 60 },
          [none]: { inputTokens: 0, outputTokens: 0, modelCalls: 0, modelDurationMs: 0 },
        });
        expect((await store.usageOf([])).size).toBe(0);
      }));

    it("records a waiting run's interrupts with its outcome, and the resume that answers them with its start; interruptsOf lists them oldest first", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const other = randomUUID();
        const none = randomUUID();
        const approval = { type: "tool_approval", toolCalls: [{ id: "call-1", name: "calculator", args: { expression: "6 * 7" } }], note: "naïve ✓" };
        const { run: asking } = await store.startRun(newRun(id, { startedAt: at(10), startMark: "0010" }), newConversation("t"));
        const { run: elsewhere } = await store.startRun(newRun(other, { startedAt: at(10) }), newConversation("o"));
        await store.finishRun(elsewhere.id, outcome());
        const waiting = await store.finishRun(
          asking.id,
          outcome({
            status: "waiting",
            finishedAt: at(20),
            endMark: "0020",
            messageCount: 3,
            interrupts: [
              { id: "int-1", node: "approve", value: approval },
              { id: "int-2", node: "ask", value: "What is your name?" },
            ],
          }),
        );
        expect(waiting).toMatchObject({ status: "waiting", errorCode: null });
        const raised = (interruptId: string, node: string, value: unknown) => ({
          id: interruptId,
          runId: asking.id,
          conversationId: id,
          node,
          value,
          createdAt: at(20),
          answeredByRunId: null,
          answer: null,
          answeredAt: null,
        });
        expect(await store.interruptsOf([id, other, none])).toEqual(
          new Map([
            [id, [raised("int-1", "approve", approval), raised("int-2", "ask", "What is your name?")]],
            [other, []],
            [none, []],
          ]),
        );
        // A second finish is refused and records nothing more.
        expect(await store.finishRun(asking.id, outcome({ status: "waiting", interrupts: [{ id: "int-3", node: "ask", value: 1 }] }))).toBeNull();
        expect((await store.interruptsOf([id])).get(id)?.map((i) => i.id)).toEqual(["int-1", "int-2"]);

        // A resume refused because a run is active answers nothing.
        const { run: busy } = await store.startRun(newRun(id, { startedAt: at(27), startMark: "0027" }));
        await expect(
          store.startRun(newRun(id, { startedAt: at(28), kind: "resume", input: null, answers: [{ interruptId: "int-1", value: "no" }] })),
        ).rejects.toBeInstanceOf(RunInProgressError);
        expect((await store.interruptsOf([id])).get(id)?.every((i) => i.answeredByRunId === null)).toBe(true);
        // A finish that keeps the stored message count (null) leaves the waiting run's count.
        await store.finishRun(
          busy.id,
          outcome({ status: "cancelled", errorCode: "CANCELLED", errorMessage: "cancelled", messageCount: null, finishedAt: at(29) }),
        );
        expect((await store.getConversation(id))?.messageCount).toBe(3);

        // The resume answers both; an id that is not raised is ignored.
        const decision = { toolCalls: [{ id: "call-1", decision: "edit", args: { expression: "6 * 8" } }] };
        const { run: resume } = await store.startRun(
          newRun(id, {
            startedAt: at(30),
            startMark: "0030",
            kind: "resume",
            input: null,
            answers: [
              { interruptId: "int-1", value: decision },
              { interruptId: "int-2", value: "Ada" },
              { interruptId: "int-9", value: 1 },
            ],
          }),
        );
        const answered = (await store.interruptsOf([id])).get(id)!;
        expect(answered).toEqual([
          { ...raised("int-1", "approve", approval), answeredByRunId: resume.id, answer: decision, answeredAt: at(30) },
          { ...raised("int-2", "ask", "What is your name?"), answeredByRunId: resume.id, answer: "Ada", answeredAt: at(30) },
        ]);

        // The same interrupt raised again by a later run is a row of its own; an answer goes to the unanswered one only.
        await store.finishRun(
          resume.id,
          outcome({ status: "waiting", finishedAt: at(40), endMark: "0040", interrupts: [{ id: "int-2", node: "ask", value: "And your age?" }] }),
        );
        const { run: again } = await store.startRun(
          newRun(id, { startedAt: at(50), startMark: "0050", kind: "resume", input: null, answers: [{ interruptId: "int-2", value: 36 }] }),
        );
        const all = (await store.interruptsOf([id])).get(id)!;
        expect(all.map((i) => [i.id, i.runId, i.answeredByRunId, i.answer])).toEqual([
          ["int-1", asking.id, resume.id, decision],
          ["int-2", asking.id, resume.id, "Ada"],
          ["int-2", resume.id, again.id, 36],
        ]);
        expect(all[2]?.createdAt.getTime()).toBe(at(40).getTime());

        // They go with their conversation.
        await store.finishRun(again.id, outcome({ finishedAt: at(60), endMark: "0060" }));
        await store.deleteConversation(id);
        expect((await store.interruptsOf([id])).get(id)).toEqual([]);
        expect((await store.interruptsOf([])).size).toBe(0);
      }));

    it("keeps a run's interrupts in the order raised when the answers come in another order", () =>
      withStore(async (store) => {
        const id = randomUUID();
        const { run } = await store.startRun(newRun(id, { startedAt: at(10), startMark: "0010" }), newConversation("t"));
        const raised = ["int-a", "int-b", "int-c"];
        await store.finishRun(run.id, outcome({ status: "waiting", finishedAt: at(20), interrupts: raised.map((i) => ({ id: i, node: "ask", value: i })) }));
        expect((await store.interruptsOf([id])).get(id)?.map((i) => i.id)).toEqual(raised);
        // A client may list its responses in any order.
        await store.startRun(
          newRun(id, {
            startedAt: at(30),
            startMark: "0030",
            kind: "resume",
            input: null,
            answers: ["int-c", "int-a", "int-b"].map((i) => ({ interruptId: i, value: i })),
          }),
        );
        expect((await store.interruptsOf([id])).get(id)?.map((i) => i.id)).toEqual(raised);
      }));

    it("knows a conversation's last recorded moment, and never ends an interrupted run's window before its thread's last checkpoint", () =>
      withStore(async (store, saver) => {
        const id = randomUUID();
        expect(await store.lastMark(id)).toBeNull();
        const { run } = await store.startRun(newRun(id, { startMark: "0003" }), newConversation("t"));
        expect(await store.lastMark(id)).toBe("0003");
        // A checkpoint written by the run, stamped by a clock ahead of the instance that will recover it.
        await saver.put(
          { configurable: { thread_id: id, checkpoint_ns: "" } },
          { ...emptyCheckpoint(), id: "0007" },
          { source: "input", step: -1, parents: {} },
          {},
        );
        expect(await store.lastMark(id)).toBe("0007");
        expect(await store.lastMark(randomUUID())).toBeNull();
        const [interrupted] = await store.interruptRunsOfGoneOwners(["owner-a"], at(900), "0005", "stopped", new Map());
        expect(interrupted).toMatchObject({ id: run.id, status: "interrupted", endMark: "0007" });
        const other = randomUUID();
        const second = await store.startRun(newRun(other, { startMark: "0010" }), newConversation("u"));
        const [later] = await store.interruptRunsOfGoneOwners([], at(900), "0012", "stopped", new Map());
        expect(later).toMatchObject({ id: second.run.id, endMark: "0012" });
        expect(await store.lastMark(other)).toBe("0012");
      }));
  });
}
