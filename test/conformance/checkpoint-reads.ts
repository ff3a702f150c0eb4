// The checkpoint read model's conformance suite: on real LangGraph threads
// written through the backend's own saver (inputs, loops, a failed step and its
// resume, a state update, a second thread, a thread without a conversation),
// every read must agree with what LangGraph's saver itself reads back (the
// truth), and each window's checkpoints with the correlation rule.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { emptyCheckpoint, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { holds, mintMark } from "../../src/correlation/index.ts";
import { ERROR_CHANNEL, type CheckpointRecord } from "../../src/domain/records.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { conversation as newConversation, OUTCOME_EXTRAS } from "./records.ts";

interface Truth {
  threadId: string;
  /** Oldest first, as LangGraph's saver lists them. */
  tuples: CheckpointTuple[];
}

export function describeCheckpointReadsConformance(backend: StorageBackend) {
  describe(`CheckpointReads conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    const truths: Truth[] = [];
    let orphanThread: string;

    async function listTruth(threadId: string): Promise<Truth> {
      const tuples: CheckpointTuple[] = [];
      for await (const tuple of opened.storage.saver.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
      return { threadId, tuples: tuples.reverse() };
    }

    beforeAll(async () => {
      opened = await backend.open();
      const { saver, runs } = opened.storage;
      let failNext = false;
      let replies = 0;
      const graph = new StateGraph(MessagesAnnotation)
        .addNode("agent", async () => {
          if (failNext) {
            failNext = false;
            throw new Error("the agent step failed");
          }
          return { messages: [new AIMessage({ id: `reply-${(replies += 1)}`, content: `reply ${replies}` })] };
        })
        .addEdge(START, "agent")
        .addEdge("agent", END)
        .compile({ checkpointer: saver });

      const threads = [randomUUID(), randomUUID()];
      for (const [t, threadId] of threads.entries()) {
        // A conversation row, so the thread's checkpoints are the API's.
        await runs.startRun(
          {
            id: randomUUID(),
            conversationId: threadId,
            kind: "start",
            input: "x",
            startedAt: new Date(),
            startMark: mintMark(),
            ownerId: "o",
            startCheckpointId: null,
          },
          newConversation("t"),
        );
        const config = { configurable: { thread_id: threadId } };
        for (let turn = 0; turn < 2 + t; turn++)
          await graph.invoke({ messages: [new HumanMessage({ id: `q-${t}-${turn}`, content: `question ${turn}` })] }, config);
        failNext = true;
        await expect(graph.invoke({ messages: [new HumanMessage({ id: `q-${t}-fail`, content: "this fails" })] }, config)).rejects.toThrow(/failed/);
        await graph.invoke(null, config);
        await graph.updateState(config, { messages: [new AIMessage({ id: `update-${t}`, content: "an operator's note" })] }, "agent");
        truths.push(await listTruth(threadId));
      }
      orphanThread = randomUUID();
      await graph.invoke({ messages: [new HumanMessage({ id: "orphan", content: "no conversation" })] }, { configurable: { thread_id: orphanThread } });
    }, 60_000);
    afterAll(async () => {
      await opened?.close();
    });

    const idOf = (tuple: CheckpointTuple) => String(tuple.config.configurable?.checkpoint_id);
    const asRecord = (threadId: string, tuple: CheckpointTuple): CheckpointRecord => ({
      id: idOf(tuple),
      threadId,
      parentId: (tuple.parentConfig?.configurable?.checkpoint_id as string | undefined) ?? null,
      step: tuple.metadata!.step,
      source: tuple.metadata!.source as CheckpointRecord["source"],
      createdAt: new Date(tuple.checkpoint.ts),
    });

    it("reads each thread's checkpoints and failed tasks as LangGraph's saver does", async () => {
      const ids = [...truths.map((t) => t.threadId), randomUUID()];
      const threads = await opened.storage.checkpointReads.threads(ids);
      expect([...threads.keys()].sort()).toEqual([...ids].sort());
      for (const { threadId, tuples } of truths) {
        const read = threads.get(threadId)!;
        expect(read.checkpoints).toEqual(tuples.map((t) => asRecord(threadId, t)));
        expect(new Set(read.checkpoints.map((c) => c.source))).toEqual(new Set(["input", "loop", "update"]));
        const errors = tuples.flatMap((t) =>
          (t.pendingWrites ?? []).filter(([, channel]) => channel === ERROR_CHANNEL).map(([taskId, , value]) => ({ checkpointId: idOf(t), taskId, value })),
        );
        expect(errors).toHaveLength(1);
        expect(read.errorWrites.map((w) => ({ checkpointId: w.checkpointId, taskId: w.taskId, channel: w.channel }))).toEqual(
          errors.map((e) => ({ checkpointId: e.checkpointId, taskId: e.taskId, channel: ERROR_CHANNEL })),
        );
        expect((read.errorWrites[0]!.value as { message?: string }).message).toBe("the agent step failed");
      }
      expect(threads.get(ids.at(-1)!)).toEqual({ checkpoints: [], errorWrites: [] });
    });

    it("reads every write recorded against each checkpoint", async () => {
      const keys = truths.flatMap(({ threadId, tuples }) => tuples.map((t) => ({ threadId, checkpointId: idOf(t) })));
      const writes = await opened.storage.checkpointReads.writes(keys);
      for (const { threadId, tuples } of truths) {
        for (const tuple of tuples) {
          const expected = (tuple.pendingWrites ?? []).map(([taskId, channel]) => `${taskId} ${channel}`).sort();
          const read = writes
            .filter((w) => w.threadId === threadId && w.checkpointId === idOf(tuple))
            .map((w) => `${w.taskId} ${w.channel}`)
            .sort();
          expect(read, idOf(tuple)).toEqual(expected);
        }
      }
      expect(await opened.storage.checkpointReads.writes([])).toEqual([]);
    });

    it("reads each checkpoint's message count and last message without reviving its state", async () => {
      const keys = truths.flatMap(({ threadId, tuples }) => tuples.map((t) => ({ threadId, checkpointId: idOf(t) })));
      const contents = await opened.storage.checkpointReads.contents(keys);
      expect(contents).toHaveLength(keys.length);
      for (const { threadId, tuples } of truths) {
        for (const tuple of tuples) {
          const messages = ((tuple.checkpoint.channel_values as { messages?: BaseMessage[] }).messages ?? []) as BaseMessage[];
          const read = contents.find((c) => c.threadId === threadId && c.checkpointId === idOf(tuple))!;
          expect(read.messageCount, idOf(tuple)).toBe(messages.length);
          expect(read.lastMessage?.id ?? null).toBe(messages.at(-1)?.id ?? null);
          expect(read.lastMessage?.content ?? null).toEqual(messages.at(-1)?.content ?? null);
          expect(read.lastMessage?.getType() ?? null).toBe(messages.at(-1)?.getType() ?? null);
        }
      }
    });

    it("finds checkpoints by id, only for threads whose conversation exists", async () => {
      const wanted = truths.flatMap((t) => [t.tuples[0]!, t.tuples.at(-1)!].map((tuple) => asRecord(t.threadId, tuple)));
      const orphan = (await listTruth(orphanThread)).tuples.map(idOf);
      const found = await opened.storage.checkpointReads.checkpointsByIds([...wanted.map((c) => c.id), ...orphan, randomUUID()]);
      expect([...found].sort((a, b) => (a.id < b.id ? -1 : 1))).toEqual([...wanted].sort((a, b) => (a.id < b.id ? -1 : 1)));
    });

    it("pages each thread's checkpoints, from either end, between exclusive bounds", async () => {
      const ids = truths.map((t) => t.threadId);
      for (const { threadId, tuples } of truths) {
        const all = tuples.map((t) => asRecord(threadId, t));
        for (const limit of [1, 3, 100]) {
          for (const [after, before] of [
            [null, null],
            [all[1]!.id, null],
            [null, all.at(-2)!.id],
            [all[0]!.id, all.at(-1)!.id],
          ] as const) {
            for (const fromEnd of [false, true]) {
              const inRange = all.filter((c) => (after === null || c.id > after) && (before === null || c.id < before));
              const expected = fromEnd ? inRange.slice(Math.max(0, inRange.length - limit)) : inRange.slice(0, limit);
              const pages = await opened.storage.checkpointReads.pages(ids, { after, before, limit, fromEnd });
              expect(pages.get(threadId), JSON.stringify({ limit, after, before, fromEnd })).toEqual(expected);
            }
          }
        }
      }
    });

    it("names each thread's head as LangGraph's saver reads the latest: the greatest root checkpoint id, whatever the order of writing", async () => {
      const { saver, checkpointReads } = opened.storage;
      const latestOf = async (threadId: string) =>
        String((await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } }))?.config.configurable?.checkpoint_id);
      const unknown = randomUUID();
      const heads = await checkpointReads.heads([...truths.map((t) => t.threadId), orphanThread, unknown]);
      for (const { threadId, tuples } of truths) {
        expect(heads.get(threadId)).toBe(idOf(tuples.at(-1)!));
        expect(heads.get(threadId)).toBe(await latestOf(threadId));
      }
      // A thread is a thread, with or without a conversation; one without checkpoints is left out.
      expect(heads.get(orphanThread)).toBe(await latestOf(orphanThread));
      expect(heads.has(unknown)).toBe(false);
      expect((await checkpointReads.heads([])).size).toBe(0);

      // Written out of order (a checkpoint from an instance whose clock is behind) and under a
      // subgraph's namespace: the head is still the greatest id of the root namespace.
      const threadId = randomUUID();
      const put = (id: string, checkpointNs = "") =>
        saver.put(
          { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs } },
          { ...emptyCheckpoint(), id },
          { source: "loop", step: 0, parents: {} },
          {},
        );
      const [early, middle, late, later] = [mintMark(), mintMark(), mintMark(), mintMark()];
      await put(middle!);
      expect((await checkpointReads.heads([threadId])).get(threadId)).toBe(middle);
      await put(early!);
      await put(later!, "tools:1");
      expect((await checkpointReads.heads([threadId])).get(threadId)).toBe(middle);
      expect(await latestOf(threadId)).toBe(middle);
      await put(late!);
      expect(Object.fromEntries(await checkpointReads.heads([threadId, truths[0]!.threadId]))).toEqual({
        [threadId]: late,
        [truths[0]!.threadId]: idOf(truths[0]!.tuples.at(-1)!),
      });
      expect(await latestOf(threadId)).toBe(late);
    });

    it("selects each run window's checkpoints exactly as the correlation rule says", async () => {
      // Windows over the real ids and over marks minted between and around them, open ones included.
      const windows = [];
      for (const { threadId, tuples } of truths) {
        const ids = tuples.map(idOf);
        const marks = [ids[0]!, ids[2]!, ids[3]!, ids.at(-1)!, mintMark(), "0", "f"];
        let k = 0;
        for (const startMark of marks) {
          for (const endMark of [...marks, null]) windows.push({ key: `w${(k += 1)}-${threadId}`, threadId, startMark, endMark });
        }
      }
      const found = await opened.storage.checkpointReads.checkpointsInWindows(windows);
      for (const window of windows) {
        const truth = truths.find((t) => t.threadId === window.threadId)!;
        const expected = truth.tuples.filter((t) => holds(window, idOf(t))).map((t) => asRecord(window.threadId, t));
        expect(found.get(window.key), JSON.stringify(window)).toEqual(expected);
      }
    });
  });
}
