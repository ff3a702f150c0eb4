// Graceful shutdown for real: the server runs as a child process with runs
// mid-stream and live subscribers, and gets SIGTERM (or SIGINT). It records each
// active run INTERRUPTED itself, sends every subscriber that terminal event,
// closes WebSockets with 1001, closes the database and exits 0 in bounded time.
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import Database from "better-sqlite3";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, startTestApp, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import type { ServerProcess } from "../testkit/processes.ts";
import { collect, gqlOk, sseClient, startRun, wsClient } from "../testkit/graphql.ts";
import { CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";

const SHUTDOWN_MESSAGE = "the server shut down while the run was active";

let fake: FakeOllama;
const startServer = trackedServerProcesses();

beforeAll(async () => {
  fake = await startFakeOllama();
  // "slow ..." messages stream one token and then stall, like a model still thinking.
  fake.setResponder((request) =>
    request.messages.findLast((m) => m.role === "user")?.content.startsWith("slow") ? { kind: "silence", tokens: ["Partial "] } : defaultResponder(request),
  );
});
afterAll(async () => {
  await fake?.close();
});

async function serve(databaseUrl: string): Promise<ServerProcess> {
  return startServer({ DATABASE_URL: databaseUrl, OLLAMA_HOST: fake.url, MODEL_IDLE_TIMEOUT_MS: "600000", SHUTDOWN_TIMEOUT_MS: "5000" });
}

/** Exit code and how long the process took to exit after the signal. */
async function signal(server: ServerProcess, name: NodeJS.Signals) {
  const sent = Date.now();
  server.child.kill(name);
  const code = await server.exited;
  return { code, ms: Date.now() - sent };
}

function readRuns(file: string) {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT id, status, error_code, error_message, partial_output, finished_at FROM runs").all() as {
      id: string;
      status: string;
      error_code: string | null;
      error_message: string | null;
      partial_output: string | null;
      finished_at: number | null;
    }[];
  } finally {
    db.close();
  }
}

describe("SIGTERM", () => {
  it(
    "records active runs INTERRUPTED, ends every subscription with that event, closes WebSockets with 1001, closes the database, exits 0",
    async () => {
      const { url: databaseUrl, file } = tempDatabaseUrl("runledger-sigterm-");
      const server = await serve(databaseUrl);
      const done = await startRun(server.url, "an answered question");
      expect((await waitForRun(server.url, done.runId)).status).toBe("COMPLETED");
      const active = [await startRun(server.url, "slow one"), await startRun(server.url, "slow two"), await startRun(server.url, "slow three")];

      // Not lazy: a lazy client closes the socket itself (1000) once its last subscription completes, racing the server's 1001.
      const ws = wsClient(server.url, { lazy: false });
      const closeCodes: number[] = [];
      ws.on("closed", (event) => closeCodes.push((event as { code: number }).code));
      const sse = sseClient(server.url);
      const subscriptions = [
        collect(ws, RUN_EVENTS, { runId: active[0]!.runId }),
        collect(ws, RUN_EVENTS, { runId: active[1]!.runId }),
        collect(sse, RUN_EVENTS, { runId: active[2]!.runId }),
      ];
      await vi.waitFor(
        () => {
          expect(fake.openChatRequests()).toBe(3);
          for (const sub of subscriptions) expect(sub.results.some((r) => r.runEvents.__typename === "TokenEvent")).toBe(true);
        },
        { timeout: 10_000 },
      );

      const { code, ms } = await signal(server, "SIGTERM");
      expect(code).toBe(0);
      expect(ms).toBeLessThan(10_000);

      // Each subscription completed normally after its terminal event, over both transports.
      for (const sub of subscriptions) {
        const events = (await sub.done).map((r) => r.runEvents);
        expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "INTERRUPTED", errorCode: "INTERRUPTED", errorMessage: SHUTDOWN_MESSAGE });
        expect(events.filter((e) => e.__typename === "RunStatusEvent" && e.status !== "RUNNING")).toHaveLength(1);
      }
      await vi.waitFor(() => expect(closeCodes).toEqual([1001]));
      await ws.dispose();
      sse.dispose();
      await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));

      // Every connection was closed: the last one to close folds the WAL back into the file and removes it.
      expect(fs.existsSync(`${file}-wal`)).toBe(false);
      const rows = new Map(readRuns(file).map((r) => [r.id, r]));
      expect(rows.get(done.runId)).toMatchObject({ status: "completed" });
      for (const { runId } of active) {
        expect(rows.get(runId)).toMatchObject({
          status: "interrupted",
          error_code: "INTERRUPTED",
          error_message: SHUTDOWN_MESSAGE,
          partial_output: "Partial ",
        });
        expect(rows.get(runId)!.finished_at).not.toBeNull();
      }
      expect([...rows.values()].filter((r) => r.status === "failed" || r.status === "running")).toEqual([]);

      // The next start has nothing to recover: the shutdown told the truth itself. The steps stay resumable.
      const next = await serve(databaseUrl);
      expect(next.output()).not.toContain("recovered runs");
      for (const { runId, conversationId } of active) {
        expect((await gqlOk(next.url, RUN, { id: runId })).run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED", partialOutput: "Partial " });
        expect((await gqlOk(next.url, CONVERSATION, { id: conversationId })).conversation).toMatchObject({ next: ["agent"], resumable: true });
      }
      fake.enqueue({ kind: "text", tokens: ["Resumed."] });
      const { resumeRun } = await gqlOk(next.url, RESUME_RUN, { conversationId: active[0]!.conversationId });
      expect((await waitForRun(next.url, resumeRun.run.id)).status).toBe("COMPLETED");
      expect((await signal(next, "SIGTERM")).code).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("SIGINT", () => {
  it(
    "does the same: the active run is recorded INTERRUPTED and the process exits 0",
    async () => {
      const { url: databaseUrl, file } = tempDatabaseUrl("runledger-sigint-");
      const server = await serve(databaseUrl);
      const { runId } = await startRun(server.url, "slow and interrupted");
      await vi.waitFor(() => expect(fake.openChatRequests()).toBe(1), { timeout: 10_000 });

      const { code, ms } = await signal(server, "SIGINT");
      expect(code).toBe(0);
      expect(ms).toBeLessThan(10_000);
      expect(server.output()).toContain('"signal":"SIGINT"');
      expect(fs.existsSync(`${file}-wal`)).toBe(false);
      expect(readRuns(file)).toEqual([
        expect.objectContaining({
          id: runId,
          status: "interrupted",
          error_code: "INTERRUPTED",
          error_message: SHUTDOWN_MESSAGE,
          finished_at: expect.anything(),
        }),
      ]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("closing with many live subscribers", () => {
  const CONVERSATION_EVENTS = /* GraphQL */ `
    subscription ($id: ID!) {
      conversationEvents(conversationId: $id) { __typename runId ... on RunStatusEvent { status errorCode } }
    }
  `;

  it(
    "every subscription, over graphql-ws and SSE, for a run or a conversation, gets its terminal event and completes before the socket closes",
    async () => {
      const app = await startTestApp({ ollamaUrl: fake.url });
      const ws = wsClient(app.url);
      const sse = sseClient(app.url);
      const runs: { runId: string; subs: ReturnType<typeof collect<any>>[] }[] = [];
      try {
        for (let i = 0; i < 8; i++) {
          const { runId, conversationId } = await startRun(app.url, `slow number ${i}`);
          runs.push({
            runId,
            subs: [collect(ws, RUN_EVENTS, { runId }), collect(sse, RUN_EVENTS, { runId }), collect(ws, CONVERSATION_EVENTS, { id: conversationId })],
          });
        }
        await vi.waitFor(() => expect(fake.openChatRequests()).toBe(8), { timeout: 10_000 });
        // Every subscription is live: the run ones have replayed their first events, the conversation ones are registered.
        await vi.waitFor(() => {
          for (const { subs } of runs) for (const sub of subs.slice(0, 2)) expect(sub.results.length).toBeGreaterThan(0);
          expect(app.services.bus.stats().conversationSubscribers).toBe(8);
        });
        await app.close();
        for (const { runId, subs } of runs) {
          for (const sub of subs) {
            // done rejects if the socket went before the subscription completed.
            const events = (await sub.done).map((r) => r.runEvents ?? r.conversationEvents);
            expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", runId, status: "INTERRUPTED", errorCode: "INTERRUPTED" });
          }
        }
      } finally {
        await ws.dispose();
        sse.dispose();
        await app.close();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("a run asked for while the server shuts down", () => {
  it("is refused with SHUTTING_DOWN and HTTP 503, over HTTP and WebSocket, and nothing is written", async () => {
    const app = await startTestApp({ ollamaUrl: fake.url });
    try {
      const before = await gqlOk(app.url, "{ conversations(first: 1) { totalCount } }");
      // Shutdown's first step: the run service stops accepting runs; the HTTP server is still open.
      await app.services.runs.shutdown(1_000);
      const response = await fetch(`${app.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
        body: JSON.stringify({ query: START_RUN, variables: { message: "too late" } }),
      });
      expect(response.status).toBe(503);
      const body = await response.json();
      expect(body.errors).toEqual([
        expect.objectContaining({ message: expect.stringMatching(/shutting down/), path: ["startRun"], extensions: { code: "SHUTTING_DOWN" } }),
      ]);
      const ws = wsClient(app.url);
      const overWs = await collect(ws, START_RUN, { message: "too late" }).done.then(
        () => null,
        (error: Error) => JSON.parse(error.message),
      );
      expect(overWs).toEqual([expect.objectContaining({ path: ["startRun"], extensions: { code: "SHUTTING_DOWN" } })]);
      await ws.dispose();
      expect(await gqlOk(app.url, "{ conversations(first: 1) { totalCount } }")).toEqual(before);
    } finally {
      await app.close();
    }
  });
});
