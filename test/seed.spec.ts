// The seed's experiment, replayed through the GraphQL API against real server
// processes: two completed turns; a restart with the model unreachable and a
// third message (FAILED, MODEL_UNAVAILABLE); a restart with the model back and a
// resume. Then the seed's "Observed" list, checked with its own sqlite3 queries.
// It runs with a RUNLEDGER_CONFIG that declares two agents (the experiment runs
// `default`, today's agent; every other spec runs the built-in one without a file).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { closedPort, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { startServerProcess, type ServerProcess } from "../testkit/processes.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { CONVERSATION, RESUME_RUN, START_RUN } from "../testkit/documents.ts";

function sqlite(file: string, sql: string, mode: "-json" | "-column" = "-json"): any {
  const out = execFileSync("sqlite3", mode === "-json" ? ["-json", file, sql] : ["-header", "-column", file, sql], { encoding: "utf8" });
  return mode === "-json" ? (out.trim() ? JSON.parse(out) : []) : out;
}

/** Two agents: the experiment's `default`, and another it never uses. */
function twoAgents(): Record<string, string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-seed-agents-"));
  const file = path.join(dir, "agents.json");
  fs.writeFileSync(
    file,
    JSON.stringify({
      agents: { default: { type: "chat", description: "The seed's agent." }, terse: { type: "chat", description: "Answers without tools.", tools: [] } },
    }),
  );
  return { RUNLEDGER_CONFIG: file };
}

describe.each([["a configuration of two agents", twoAgents]])("the seed's experiment with %s", (_label, agentsEnv) => {
  let fake: FakeOllama;
  let server: ServerProcess | undefined;
  const db = tempDatabaseUrl("runledger-seed-");
  let agents: Record<string, string> = {};

  beforeAll(async () => {
    fake = await startFakeOllama();
    agents = agentsEnv();
  });
  afterAll(async () => {
    await server?.stop();
    await fake.close();
  });

  async function restart(ollamaHost: string): Promise<ServerProcess> {
    if (server) expect(await server.stop("SIGTERM")).toBe(0);
    server = await startServerProcess({ DATABASE_URL: db.url, OLLAMA_HOST: ollamaHost, ...agents });
    return server;
  }

  describe("the experiment", () => {
    let C = "";
    const runIds: string[] = [];
    let checkpointsBeforeResume = 0;

    it("run 1 and run 2: two completed turns", async () => {
      const s = await restart(fake.url);
      const first = await gqlOk(s.url, START_RUN, { message: "Name one prime number. Answer in one word." });
      expect(first.startRun.__typename).toBe("StartRunSuccess");
      C = first.startRun.conversation.id;
      runIds.push(first.startRun.run.id);
      expect((await waitForRun(s.url, first.startRun.run.id)).status).toBe("COMPLETED");

      const second = await gqlOk(s.url, START_RUN, { message: "Name another one.", conversationId: C });
      runIds.push(second.startRun.run.id);
      expect((await waitForRun(s.url, second.startRun.run.id)).status).toBe("COMPLETED");
    });

    it("run 3: with the model unreachable the run fails with MODEL_UNAVAILABLE and the step stays pending", async () => {
      const s = await restart(`http://127.0.0.1:${await closedPort()}`);
      const third = await gqlOk(s.url, START_RUN, { message: "And a third one.", conversationId: C });
      runIds.push(third.startRun.run.id);
      const run = await waitForRun(s.url, third.startRun.run.id);
      expect(run.status).toBe("FAILED");
      expect(run.errorCode).toBe("MODEL_UNAVAILABLE");
      expect(run.errorMessage).toMatch(/fetch failed/);
      expect(run.errorMessage).toMatch(/ECONNREFUSED/);

      const { conversation } = await gqlOk(s.url, CONVERSATION, { id: C });
      expect(conversation.next).toEqual(["agent"]);
      expect(conversation.resumable).toBe(true);
      expect(conversation.messages.at(-1)).toMatchObject({ role: "USER", content: "And a third one." });
      checkpointsBeforeResume = sqlite(db.file, `SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = '${C}'`)[0].n;
    });

    it("run 4: with the model back, resumeRun completes the pending step with exactly one checkpoint", async () => {
      const s = await restart(fake.url);
      const resume = await gqlOk(s.url, RESUME_RUN, { conversationId: C });
      expect(resume.resumeRun.__typename).toBe("ResumeRunSuccess");
      expect(resume.resumeRun.run).toMatchObject({ kind: "RESUME", input: null });
      runIds.push(resume.resumeRun.run.id);
      expect((await waitForRun(s.url, resume.resumeRun.run.id)).status).toBe("COMPLETED");

      const after = sqlite(db.file, `SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = '${C}'`)[0].n;
      expect(after - checkpointsBeforeResume).toBe(1);
      const { conversation } = await gqlOk(s.url, CONVERSATION, { id: C });
      expect(conversation.next).toEqual([]);
      expect(conversation.resumable).toBe(false);
      expect(conversation.messageCount).toBe(6);
      expect(conversation.runs.edges.map((e: any) => [e.node.kind, e.node.status])).toEqual([
        ["START", "COMPLETED"],
        ["START", "COMPLETED"],
        ["START", "FAILED"],
        ["RESUME", "COMPLETED"],
      ]);
      // Three answers; the failure is visible only in the runs.
      expect(conversation.messages.filter((m: any) => m.role === "ASSISTANT")).toHaveLength(3);
    });

    it("matches the seed's Observed list, read with its own sqlite3 queries", async () => {
      await server?.stop();
      server = undefined;
      const file = db.file;

      // conversations: one row.
      const conversations = sqlite(file, "SELECT id, title, message_count FROM conversations");
      expect(conversations).toEqual([{ id: C, title: "Name one prime number. Answer in one word.", message_count: 6 }]);

      // runs: four rows, completed, completed, failed, completed.
      const runs = sqlite(file, `SELECT id, status, error_code, started_at, finished_at FROM runs WHERE conversation_id = '${C}' ORDER BY started_at`);
      expect(runs.map((r: any) => r.id)).toEqual(runIds);
      expect(runs.map((r: any) => r.status)).toEqual(["completed", "completed", "failed", "completed"]);
      expect(runs.map((r: any) => r.error_code)).toEqual([null, null, "MODEL_UNAVAILABLE", null]);
      for (const r of runs) expect(r.finished_at >= r.started_at).toBe(true);
      // The seed's -header -column form runs unchanged too.
      expect(
        sqlite(file, `SELECT id, status, error_code, started_at, finished_at FROM runs WHERE conversation_id = '${C}' ORDER BY started_at`, "-column"),
      ).toMatch(/status\s+error_code/);

      // One input checkpoint per user message, at steps -1, 2 and 5: step numbers continue across runs.
      const inputs = sqlite(
        file,
        `SELECT json_extract(CAST(metadata AS TEXT), '$.step') AS step FROM checkpoints
       WHERE thread_id = '${C}' AND json_extract(CAST(metadata AS TEXT), '$.source') = 'input' ORDER BY checkpoint_id`,
      );
      expect(inputs.map((r: any) => r.step)).toEqual([-1, 2, 5]);

      // Metadata is {source, step, parents}: no run id.
      const metadata = sqlite(file, `SELECT DISTINCT CAST(metadata AS TEXT) AS m FROM checkpoints WHERE thread_id = '${C}' LIMIT 3`);
      expect(metadata.length).toBeGreaterThan(0);
      for (const { m } of metadata) {
        expect(Object.keys(JSON.parse(m)).sort()).toEqual(["parents", "source", "step"]);
        for (const id of runIds) expect(m).not.toContain(id);
      }

      // writes holds one __error__ row: the failed task, with no application run id.
      const errors = sqlite(file, `SELECT checkpoint_id, idx, channel FROM writes WHERE thread_id = '${C}' AND channel = '__error__'`);
      expect(errors).toHaveLength(1);

      // Assistant message ids start with run-: LangChain callback ids, unrelated to runs.id.
      const s = await restart(fake.url);
      const { conversation } = await gqlOk(s.url, CONVERSATION, { id: C });
      const assistantIds = conversation.messages.filter((m: any) => m.role === "ASSISTANT").map((m: any) => m.id);
      for (const id of assistantIds) {
        expect(id).toMatch(/^run-/);
        expect(runIds).not.toContain(id.slice(4));
      }
    });
  });
});
