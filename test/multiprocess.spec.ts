// Two server processes on one SQLite file: the database, not a map in memory,
// keeps one active run per conversation; contention never leaks SQLITE_BUSY;
// start-up recovery and the heartbeat sweep leave a live process's run alone; a
// cancel sent to the other process stops the run where it executes.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, ROOT, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import type { ServerProcess } from "../testkit/processes.ts";
import { collect, gql, gqlOk, startRun, wsClient } from "../testkit/graphql.ts";
import { CANCEL_RUN, CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";
import { openSqlite } from "../src/storage/sqlite/database.ts";
import { openSqliteStorage } from "../src/storage/open-sqlite.ts";

/** Fast heartbeats so that sweeps by the other process happen many times during a test. */
const OWNERSHIP_ENV = { RUN_HEARTBEAT_MS: "100", RUN_LEASE_MS: "3000" };

let fake: FakeOllama;
const startServer = trackedServerProcesses();

beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

async function twoServers(prefix: string): Promise<[ServerProcess, ServerProcess]> {
  const { url } = tempDatabaseUrl(prefix);
  const env = { DATABASE_URL: url, OLLAMA_HOST: fake.url, ...OWNERSHIP_ENV };
  // One after the other: the first creates and migrates the file.
  const a = await startServer(env);
  const b = await startServer(env);
  return [a, b];
}

/** A model answer that waits until the test releases it. */
function heldAnswer(): { step: Promise<FakeStep>; release: () => void } {
  let release = () => {};
  const step = new Promise<FakeStep>((resolve) => {
    release = () => resolve({ kind: "text", tokens: ["Held ", "answer."] });
  });
  return { step, release };
}

const BUSY = /SQLITE_BUSY|database is locked|SocketTimeout/i;

describe("two processes on one database file", () => {
  let a: ServerProcess;
  let b: ServerProcess;
  beforeAll(async () => {
    [a, b] = await twoServers("runledger-twoproc-");
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    "concurrent startRun on one conversation, 50 times: exactly one StartRunSuccess and one RunInProgressError each time",
    async () => {
      fake.setResponder(defaultResponder);
      const { runId, conversationId } = await startRun(a.url, "the conversation both processes race for");
      await waitForRun(a.url, runId);

      const winners = { a: 0, b: 0 };
      for (let i = 0; i < 50; i++) {
        // The winner's run stays running until both answers are in, so the loser always meets it.
        const held = heldAnswer();
        fake.setResponder(() => held.step);
        const results = await Promise.all([a, b].map((server) => gql(server.url, START_RUN, { conversationId, message: `attempt ${i}` })));
        held.release();
        for (const result of results) expect(result.errors).toBeUndefined();
        const [fromA, fromB] = results.map((r) => r.data.startRun);
        const kinds = [fromA.__typename, fromB.__typename].sort();
        expect(kinds).toEqual(["RunInProgressError", "StartRunSuccess"]);
        const winner = fromA.__typename === "StartRunSuccess" ? fromA : fromB;
        const loser = winner === fromA ? fromB : fromA;
        expect(loser).toMatchObject({ code: "RUN_IN_PROGRESS", activeRunId: winner.run.id });
        winners[winner === fromA ? "a" : "b"] += 1;
        expect((await waitForRun(a.url, winner.run.id)).status).toBe("COMPLETED");
      }

      const { conversation } = await gqlOk(b.url, CONVERSATION, { id: conversationId });
      expect(conversation.runs.totalCount).toBe(51);
      expect(conversation.runs.edges.every((e: any) => e.node.status === "COMPLETED")).toBe(true);
      expect(conversation.messageCount).toBe(102);
      expect(conversation.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "Held answer." });
      // Both processes won some races: the contention was real on both sides.
      expect(winners.a).toBeGreaterThan(0);
      expect(winners.b).toBeGreaterThan(0);
      for (const server of [a, b]) {
        expect(server.output()).not.toMatch(BUSY);
        expect(server.output()).not.toContain('"level":"error"');
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "cancelRun sent to the other process: CANCELLED at once, and the owner stops the model request on its next heartbeat",
    async () => {
      fake.setResponder((request) =>
        request.messages.at(-1)?.content.startsWith("stall") ? { kind: "silence", tokens: ["Started "] } : defaultResponder(request),
      );
      const { runId, conversationId } = await startRun(a.url, "stall here");
      const client = wsClient(a.url);
      try {
        const sub = collect(client, RUN_EVENTS, { runId });
        await vi.waitFor(() => expect(sub.results.some((r) => r.runEvents.__typename === "TokenEvent")).toBe(true), { timeout: 10_000 });

        const { cancelRun } = await gqlOk(b.url, CANCEL_RUN, { runId });
        expect(cancelRun).toMatchObject({ __typename: "CancelRunSuccess", run: { id: runId, status: "CANCELLED", errorCode: "CANCELLED" } });
        // The owner notices within a few heartbeats: its model request closes and its subscriber gets the recorded outcome.
        await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0), { timeout: 10_000 });
        const events = (await sub.done).map((r) => r.runEvents);
        expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "CANCELLED", errorCode: "CANCELLED" });

        expect((await gqlOk(a.url, RUN, { id: runId })).run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
        // The owner adds what only it knew: the text streamed before the cancel, and the seq of
        // the terminal event, so a subscriber of the other process gets that same event from the database.
        await vi.waitFor(async () => expect((await gqlOk(b.url, RUN, { id: runId })).run.partialOutput).toBe("Started "));
        const other = wsClient(b.url);
        try {
          const fromDatabase = (await collect(other, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
          expect(fromDatabase).toEqual([{ ...events.at(-1), at: expect.any(String) }]);
        } finally {
          await other.dispose();
        }
        expect((await gqlOk(a.url, CONVERSATION, { id: conversationId })).conversation).toMatchObject({ next: ["agent"], resumable: true, activeRun: null });
        // Nothing left running anywhere: the other process may resume the pending step.
        fake.setResponder(defaultResponder);
        const { resumeRun } = await gqlOk(b.url, RESUME_RUN, { conversationId });
        expect(resumeRun.__typename).toBe("ResumeRunSuccess");
        expect((await waitForRun(b.url, resumeRun.run.id)).status).toBe("COMPLETED");
      } finally {
        await client.dispose();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "both processes stop cleanly",
    async () => {
      expect(await Promise.all([a.stop(), b.stop()])).toEqual([0, 0]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("start-up recovery and the heartbeat sweep with two processes", () => {
  it(
    "a second process starting up, and sweeping on every heartbeat, leaves the first process's running run alone",
    async () => {
      const held = heldAnswer();
      fake.setResponder(() => held.step);
      const { url } = tempDatabaseUrl("runledger-twoproc-recovery-");
      const env = { DATABASE_URL: url, OLLAMA_HOST: fake.url, ...OWNERSHIP_ENV };
      const a = await startServer(env);
      const { runId, conversationId } = await startRun(a.url, "a long question");
      await vi.waitFor(() => expect(fake.openChatRequests()).toBe(1));

      const b = await startServer(env);
      expect(b.output()).not.toContain("recovered runs");
      expect((await gqlOk(b.url, RUN, { id: runId })).run.status).toBe("RUNNING");
      // Many sweeps by b later (heartbeat every 100 ms), the run is still a's and still running.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await gqlOk(b.url, RUN, { id: runId })).run.status).toBe("RUNNING");
      expect((await gqlOk(b.url, CONVERSATION, { id: conversationId })).conversation.activeRun).toEqual({ id: runId });

      held.release();
      expect(await waitForRun(b.url, runId)).toMatchObject({ status: "COMPLETED", errorCode: null });
      const { conversation } = await gqlOk(b.url, CONVERSATION, { id: conversationId });
      expect(conversation.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "Held answer." });
      for (const server of [a, b]) expect(server.output()).not.toContain("recovered runs");
      expect(await Promise.all([a.stop(), b.stop()])).toEqual([0, 0]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("SQLite contention between processes", () => {
  it(
    "a transaction that reads before it writes never fails with SQLITE_BUSY while another process writes",
    async () => {
      const { file } = tempDatabaseUrl("runledger-twoproc-busy-");
      const storage = await openSqliteStorage(file);
      const store = storage.runs;
      const db = openSqlite(file);
      db.prepare("INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES ('other', 't', 0, 0, 0)").run();
      // Another process commits small writes to the same file, back to back.
      const writer = spawn(
        process.execPath,
        [
          "-e",
          `const db = new (require("better-sqlite3"))(process.argv[1], { timeout: 10000 }); const s = db.prepare("UPDATE conversations SET title = ? WHERE id = 'other'"); let n = 0; const end = Date.now() + 4000; while (Date.now() < end) s.run(String(n++));`,
          file,
        ],
        { cwd: ROOT, stdio: "ignore" },
      );
      const writerDone = new Promise((resolve) => writer.once("exit", resolve));
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        // Deleting a conversation looks it up, then deletes it and its thread: a read first, then writes.
        let deleted = 0;
        const failures: string[] = [];
        const until = Date.now() + 2_000;
        while (Date.now() < until) {
          const id = randomUUID();
          db.prepare("INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, 't', 0, 0, 0)").run(id);
          try {
            await store.deleteConversation(id);
            deleted += 1;
          } catch (error) {
            failures.push((error as Error).message);
          }
        }
        expect(failures).toEqual([]);
        expect(deleted).toBeGreaterThan(10);
      } finally {
        writer.kill();
        await writerDone;
        db.close();
        await storage.close();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
