// Seeds one conversation with many runs and their checkpoints, directly into the
// database file (no model, no graph): conversation and runs rows in runledger's
// row format, checkpoints and writes through LangGraph's own
// SqliteSaver.put/putWrites, so every row is in the format LangGraph writes. Each run is one user turn with four tool rounds:
// an input checkpoint and nine loop checkpoints (agent, tools, ..., agent),
// between start and end marks taken from the same UUID v6 generator, as
// runledger takes them.
import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { openSqlite } from "../../src/storage/sqlite/database.ts";
import { migrate } from "../../src/storage/sqlite/migrate.ts";
import { formatSqliteDate } from "../../src/storage/sqlite/rows.ts";
import { mintMark } from "../../src/correlation/marks.ts";

export const CHECKPOINTS_PER_RUN = 10;
const TOOL_ROUNDS = 4;

export interface SeedOptions {
  runs: number;
  /**
   * false: each checkpoint holds only its own run's messages (at most ten), so
   * blob size does not grow with the thread. true: each holds the whole thread
   * so far, as LangGraph writes it, so blobs grow with every run.
   */
  wholeThread: boolean;
}

/** The messages of one run, in the order its checkpoints add them (one per loop step). */
export function runMessages(run: number): BaseMessage[] {
  const messages: BaseMessage[] = [new HumanMessage({ id: randomUUID(), content: `Question ${run}: what is ${run} * 7, then plus 1, 2 and 3?` })];
  for (let round = 0; round < TOOL_ROUNDS; round++) {
    const callId = `call_${run}_${round}`;
    messages.push(
      new AIMessage({
        id: `run-${randomUUID()}`,
        content: "",
        tool_calls: [{ id: callId, name: "calculator", args: { expression: `${run} * 7 + ${round}` }, type: "tool_call" }],
      }),
    );
    messages.push(new ToolMessage({ id: randomUUID(), tool_call_id: callId, name: "calculator", content: String(run * 7 + round) }));
  }
  messages.push(new AIMessage({ id: `run-${randomUUID()}`, content: `The answer for question ${run} is ${run * 7 + 6}.` }));
  return messages;
}

export async function seedConversation(databasePath: string, options: SeedOptions): Promise<{ conversationId: string; checkpoints: number }> {
  const db = openSqlite(databasePath);
  migrate(db);
  const saver = new SqliteSaver(db);
  const conversationId = randomUUID();
  const runRows: {
    id: string;
    conversationId: string;
    kind: string;
    status: string;
    input: string | null;
    startedAt: Date;
    finishedAt: Date;
    startMark: string;
    endMark: string;
    lastEventSeq: number;
  }[] = [];
  let history: BaseMessage[] = [];
  let parentId: string | undefined;
  let step = -1;
  let checkpoints = 0;
  db.exec("BEGIN");
  try {
    for (let run = 0; run < options.runs; run++) {
      const startedAt = new Date();
      const startMark = mintMark();
      const messages = runMessages(run);
      for (let k = 0; k < CHECKPOINTS_PER_RUN; k++) {
        const shown = messages.slice(0, k + 1);
        const channelMessages = options.wholeThread ? [...history, ...shown] : shown;
        // Steps continue across runs (-1, 0, 1, ... 8, 9, ...), as LangGraph numbers them.
        const thisStep = step++;
        const checkpoint: Checkpoint = {
          v: 4,
          id: uuid6(k === 0 ? -1 : thisStep),
          ts: new Date().toISOString(),
          channel_values: { messages: channelMessages },
          channel_versions: { __start__: thisStep + 2, messages: thisStep + 2 },
          versions_seen: { __input__: {}, __start__: { __start__: thisStep + 1 } },
        };
        const config = { configurable: { thread_id: conversationId, checkpoint_ns: "", checkpoint_id: parentId } };
        const stored = await saver.put(config, checkpoint, { source: k === 0 ? "input" : "loop", step: thisStep, parents: {} });
        // The task that produced the next step records its output against this checkpoint.
        if (k + 1 < CHECKPOINTS_PER_RUN) {
          await saver.putWrites(
            stored,
            [
              ["messages", [messages[k + 1]]],
              [k % 2 === 0 ? "branch:to:tools" : "branch:to:agent", null],
            ],
            randomUUID(),
          );
        }
        parentId = checkpoint.id;
        checkpoints += 1;
      }
      history = [...history, ...messages];
      runRows.push({
        id: randomUUID(),
        conversationId,
        kind: "start",
        status: "completed",
        input: (messages[0]!.content as string) ?? null,
        startedAt,
        finishedAt: new Date(),
        startMark,
        endMark: mintMark(),
        lastEventSeq: 20,
      });
    }
    const now = formatSqliteDate(new Date());
    db.prepare("INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, 'Seeded conversation', ?, ?, ?)").run(
      conversationId,
      now,
      now,
      history.length,
    );
    const insertRun = db.prepare(
      `INSERT INTO runs (id, conversation_id, kind, status, input, started_at, finished_at, start_mark, end_mark, last_event_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const r of runRows) {
      insertRun.run(
        r.id,
        r.conversationId,
        r.kind,
        r.status,
        r.input,
        formatSqliteDate(r.startedAt),
        formatSqliteDate(r.finishedAt),
        r.startMark,
        r.endMark,
        r.lastEventSeq,
      );
    }
    db.exec("COMMIT");
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  } finally {
    db.close();
  }
  return { conversationId, checkpoints };
}
