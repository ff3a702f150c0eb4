// Seeds one conversation with many runs and their checkpoints into a
// PostgreSQL database, as bench/lib/seed.ts does a SQLite file: the same runs
// (bench/lib/seed.ts, runMessages), each checkpoint written through runledger's
// PostgresSaver (channel values in checkpoint_blobs, by version), the
// conversation and run rows through the run store.
import { randomUUID } from "node:crypto";
import { uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { mintMark } from "../../src/correlation/marks.ts";
import type { Storage } from "../../src/storage/types.ts";
import { CHECKPOINTS_PER_RUN, runMessages } from "./seed.ts";

const usage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 };

export async function seedPostgresConversation(storage: Storage, runs: number): Promise<{ conversationId: string; checkpoints: number }> {
  const conversationId = randomUUID();
  let parentId: string | undefined;
  let step = -1;
  let checkpoints = 0;
  for (let run = 0; run < runs; run++) {
    const runId = randomUUID();
    const messages = runMessages(run);
    const start = {
      id: runId,
      conversationId,
      kind: "start" as const,
      input: "seeded",
      startedAt: new Date(),
      startMark: mintMark(),
      ownerId: "seed",
      startCheckpointId: parentId ?? null,
    };
    await storage.runs.startRun(start, run === 0 ? { title: "Seeded conversation", agent: "default", owner: null } : undefined);
    for (let k = 0; k < CHECKPOINTS_PER_RUN; k++) {
      const thisStep = step++;
      const versions = { __start__: storage.saver.getNextVersion(thisStep + 1), messages: storage.saver.getNextVersion(thisStep + 1) };
      const checkpoint: Checkpoint = {
        v: 4,
        id: uuid6(k === 0 ? -1 : thisStep),
        ts: new Date().toISOString(),
        channel_values: { messages: messages.slice(0, k + 1) },
        channel_versions: versions,
        versions_seen: { __input__: {}, __start__: { __start__: thisStep + 1 } },
      };
      const config = { configurable: { thread_id: conversationId, checkpoint_ns: "", checkpoint_id: parentId } };
      const stored = await storage.saver.put(config, checkpoint, { source: k === 0 ? "input" : "loop", step: thisStep, parents: {} }, versions);
      if (k + 1 < CHECKPOINTS_PER_RUN) await storage.saver.putWrites(stored, [["messages", [messages[k + 1]]]], randomUUID());
      parentId = checkpoint.id;
      checkpoints += 1;
    }
    const outcome = { status: "completed" as const, errorCode: null, errorMessage: null, partialOutput: null, finishedAt: new Date(), endMark: mintMark() };
    await storage.runs.finishRun(runId, { ...outcome, lastEventSeq: 20, messageCount: messages.length, usage, interrupts: [] });
  }
  return { conversationId, checkpoints };
}
