// LangSmith tracing through LangChain's own LANGSMITH_* variables, against a
// stand-in of LangSmith's ingest API: each run arrives as a trace with its run
// id, conversation id and agent as metadata and its model and tool calls
// inside, while tokens still stream; with tracing off nothing is sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { collect, sseClient, startRun } from "../testkit/graphql.ts";
import { RUN_EVENTS } from "../testkit/documents.ts";
import { sleep, until } from "../testkit/streaming.ts";
import { startLangSmithStandIn, type LangSmithStandIn, type TracedRun } from "../testkit/langsmith-standin.ts";

const startServerProcess = trackedServerProcesses();
let fake: FakeOllama;
let standIn: LangSmithStandIn;
const databases: { remove(): void }[] = [];

beforeAll(async () => {
  fake = await startFakeOllama();
  standIn = await startLangSmithStandIn();
});
afterAll(async () => {
  await standIn?.close();
  await fake?.close();
  for (const db of databases) db.remove();
});

function serverEnv(langsmith: Record<string, string>): Record<string, string> {
  const db = tempDatabaseUrl();
  databases.push(db);
  return {
    DATABASE_URL: db.url,
    OLLAMA_HOST: fake.url,
    LANGSMITH_API_KEY: "lsv2-stand-in-key",
    LANGSMITH_ENDPOINT: standIn.url,
    LANGSMITH_PROJECT: "runledger-tests",
    ...langsmith,
  };
}

describe("LangSmith", () => {
  it(
    "with LANGSMITH_TRACING=true a run arrives as one trace: its metadata, and its model and tool calls inside; tokens still stream",
    async () => {
      const server = await startServerProcess(serverEnv({ LANGSMITH_TRACING: "true" }));
      try {
        const { runId, conversationId } = await startRun(server.url, "calculate 2+3");
        const client = sseClient(server.url);
        const events = (await collect(client, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
        await client.dispose();
        expect((await waitForRun(server.url, runId)).status).toBe("COMPLETED");
        expect(
          events
            .filter((e) => e.__typename === "TokenEvent")
            .map((e) => e.text)
            .join(""),
        ).toBe("The result is 5.");

        const isRoot = (r: TracedRun) => r.extra?.metadata?.run_id === runId && !r.parent_run_id;
        await until(async () => [...standIn.runs.values()].some((r) => isRoot(r) && r.end_time !== undefined), "the run's trace, ended", 20_000);
        const root = [...standIn.runs.values()].find(isRoot)!;
        expect(root.name).toBe("default");
        expect(root.extra!.metadata).toMatchObject({ run_id: runId, conversation_id: conversationId, agent: "default" });
        const inside = () => [...standIn.runs.values()].filter((r) => r.trace_id === root.id && r.id !== root.id);
        await until(async () => inside().filter((r) => r.run_type === "llm" && r.end_time !== undefined).length === 2, "both model calls", 20_000);
        const tool = inside().find((r) => r.run_type === "tool");
        expect(tool?.name).toBe("calculator");
        // Every call inside carries the run's metadata too: a search by run id finds them.
        for (const r of inside().filter((r) => r.run_type === "llm")) expect(r.extra?.metadata).toMatchObject({ run_id: runId, agent: "default" });
        expect(standIn.requests.some((r) => r === "POST /runs/multipart" || r === "POST /runs/batch")).toBe(true);
      } finally {
        await server.stop();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "with LANGSMITH_TRACING unset nothing is sent, the key and endpoint notwithstanding",
    async () => {
      const before = standIn.requests.length;
      const server = await startServerProcess(serverEnv({}));
      try {
        const { runId } = await startRun(server.url, "calculate 1+1");
        expect((await waitForRun(server.url, runId)).status).toBe("COMPLETED");
      } finally {
        // Shutdown would flush anything queued: nothing is.
        await server.stop();
      }
      await sleep(500);
      expect(standIn.requests.slice(before)).toEqual([]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
