// Start-up recovery: runs left `running` by a process that is gone become
// INTERRUPTED before the server answers; runs of a live process are left alone.
import os from "node:os";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { CONVERSATION, RUN } from "../testkit/documents.ts";
import { openSqlite } from "../src/storage/sqlite/database.ts";
import { migrate } from "../src/storage/sqlite/migrate.ts";

let fake: FakeOllama;
beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake.close();
});

/** A pid that is certainly not running: spawn-free, just beyond the kernel's limit. */
const DEAD_PID = 2 ** 22 + 17;

function seed(file: string, owners: { id: string; pid: number; host: string; heartbeatAgoMs: number }[], runs: { owner: string | null }[]) {
  const db = openSqlite(file);
  migrate(db);
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  for (const o of owners) {
    db.prepare("INSERT INTO run_owners (id, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)").run(
      o.id,
      o.pid,
      o.host,
      iso(now - 60_000),
      iso(now - o.heartbeatAgoMs),
    );
  }
  const ids = runs.map((r) => {
    const conversationId = randomUUID();
    const runId = randomUUID();
    db.prepare("INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, 't', ?, ?, 0)").run(
      conversationId,
      iso(now - 5_000),
      iso(now - 5_000),
    );
    db.prepare(
      "INSERT INTO runs (id, conversation_id, kind, status, input, started_at, start_mark, owner_id) VALUES (?, ?, 'start', 'running', 'hi', ?, ?, ?)",
    ).run(runId, conversationId, iso(now - 5_000), "00000000-0000-6000-8000-000000000000", r.owner);
    return { runId, conversationId };
  });
  db.close();
  return ids;
}

describe("start-up recovery", () => {
  it("interrupts the runs of dead, silent or unknown owners before serving, and leaves a live owner's run alone", async () => {
    const { url, file } = tempDatabaseUrl("runledger-recovery-");
    const [deadPid, silent, unknown, noOwner, live] = seed(
      file,
      [
        { id: "dead-pid", pid: DEAD_PID, host: os.hostname(), heartbeatAgoMs: 100 },
        { id: "silent", pid: 1, host: "another-host", heartbeatAgoMs: 10 * 60_000 },
        { id: "live", pid: 1, host: "another-host", heartbeatAgoMs: 100 },
      ],
      [{ owner: "dead-pid" }, { owner: "silent" }, { owner: "never-registered" }, { owner: null }, { owner: "live" }],
    );
    const app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: url, env: { RUN_LEASE_MS: "30000" } });
    try {
      for (const { runId, conversationId } of [deadPid!, silent!, unknown!, noOwner!]) {
        const { run } = await gqlOk(app.url, RUN, { id: runId });
        expect(run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED", errorMessage: expect.stringMatching(/stopped before it finished/) });
        expect(run.finishedAt).not.toBeNull();
        const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
        expect(conversation.activeRun).toBeNull();
      }
      const { run } = await gqlOk(app.url, RUN, { id: live!.runId });
      expect(run.status).toBe("RUNNING");
    } finally {
      await app.close();
    }
  });

  it("takes a live-looking owner's runs once its heartbeat goes stale (periodic sweep)", async () => {
    const { url, file } = tempDatabaseUrl("runledger-recovery-");
    const [stale] = seed(file, [{ id: "fading", pid: 1, host: "another-host", heartbeatAgoMs: 0 }], [{ owner: "fading" }]);
    const app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: url, env: { RUN_HEARTBEAT_MS: "100", RUN_LEASE_MS: "400" } });
    try {
      expect((await gqlOk(app.url, RUN, { id: stale!.runId })).run.status).toBe("RUNNING");
      const deadline = Date.now() + 10_000;
      let status = "RUNNING";
      while (status === "RUNNING" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await gqlOk(app.url, RUN, { id: stale!.runId })).run.status;
      }
      expect(status).toBe("INTERRUPTED");
    } finally {
      await app.close();
    }
  });
});
