// Scenario: the tool journal's cost per tool call. Every call of a chat agent
// reads the journal for its call id, writes the attempt before the tool runs and
// its outcome after (src/agent/tool-journal.ts). Measured here on the storage
// seam itself, on a fresh SQLite file in the harness process (the server's
// writer and reader connections, the write gate included): a call of the
// fastest tool there is, the built-in calculator, invoked as the tools step
// invokes it, with the journal's read and first write before it and the
// outcome after, one call after another. The baseline is the same call without
// the journal, so "added" is the journal's cost per call.
import { randomUUID } from "node:crypto";
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, type Row } from "../lib/report.ts";
import { tempDatabaseUrl } from "../../testkit/processes.ts";
import { nowMs } from "../../testkit/clock.ts";
import { openSqliteStorage } from "../../src/storage/open-sqlite.ts";
import { calculatorTool } from "../../src/agent/tools.ts";
import { repetitions, type Scenario } from "./scenario.ts";

const WARM_UP = 200;

export const journal: Scenario = {
  name: "journal",
  title: "the tool journal's cost per tool call",
  async run(options) {
    const reps = repetitions(options, 5);
    const calls = options.quick ? 300 : 2_000;
    const database = tempDatabaseUrl("runledger-bench-journal-");
    const storage = await openSqliteStorage(database.file);
    const journaled: Percentiles[] = [];
    const bare: Percentiles[] = [];
    try {
      // A conversation with a running run, as every journaled call has.
      const conversationId = randomUUID();
      const runId = randomUUID();
      await storage.runs.startRun(
        { id: runId, conversationId, kind: "start", input: "bench", startedAt: new Date(), startMark: "0001", ownerId: "bench", startCheckpointId: null },
        { title: "bench", agent: "default", owner: null },
      );
      const args = { expression: "(17 + 4) * 2" };
      const oneCall = async () => {
        const toolCallId = randomUUID();
        const started = nowMs();
        await storage.toolJournal.latest(conversationId, toolCallId);
        await storage.toolJournal.start({ conversationId, toolCallId, attempt: 1, runId, name: "calculator", args, startedAt: new Date() });
        const message = await calculatorTool.invoke({ id: toolCallId, name: "calculator", args, type: "tool_call" });
        await storage.toolJournal.finish({ conversationId, toolCallId, attempt: 1 }, { state: "succeeded", result: message.content, finishedAt: new Date() });
        return nowMs() - started;
      };
      const oneBareCall = async () => {
        const started = nowMs();
        await calculatorTool.invoke({ id: randomUUID(), name: "calculator", args, type: "tool_call" });
        return nowMs() - started;
      };
      for (let i = 0; i < WARM_UP; i++) {
        await oneCall();
        await oneBareCall();
      }
      for (let rep = 0; rep < reps; rep++) {
        const withJournal: number[] = [];
        const without: number[] = [];
        for (let i = 0; i < calls; i++) {
          withJournal.push(await oneCall());
          without.push(await oneBareCall());
        }
        journaled.push(percentiles(withJournal));
        bare.push(percentiles(without));
        options.log(
          `  rep ${rep + 1}/${reps}: journal p50 ${journaled.at(-1)!.p50.toFixed(3)} ms, p99 ${journaled.at(-1)!.p99.toFixed(3)} ms; calculator p50 ${bare.at(-1)!.p50.toFixed(3)} ms`,
        );
      }
    } finally {
      await storage.close();
      database.remove();
    }
    const rows: Row[] = [
      {
        scenario: "journal",
        case: "SQLite, one call after another",
        metric: "a calculator call, journaled (1 read and 2 writes added)",
        runledger: dist("ms", journaled),
        baseline: { label: "the same call, not journaled", measure: dist("ms", bare) },
      },
    ];
    return {
      rows,
      notes: [
        `${calls} calls per repetition, ${reps} repetitions, after ${WARM_UP} of each to warm up; journaled and bare calls interleaved; the journal on the seam as the server opens it (writes on the writer connection behind the write gate, the read on the reader)`,
      ],
    };
  },
};
