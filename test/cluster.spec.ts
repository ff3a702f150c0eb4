// The cluster for real (WORKERS > 1, src/cluster/): a primary process and its
// workers sharing one port and one SQLite file, no Redis. A subscriber on one
// worker follows a run executing on another, replaying with `after` with no gap;
// /metrics sums the workers; a worker killed with SIGKILL mid-run leaves its run
// INTERRUPTED, never RUNNING, and another worker takes its place; a primary
// killed with SIGKILL takes its workers with it and frees the port; SIGTERM
// records every worker's runs and exits 0; WORKERS=1 is one process, no primary.
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { isAlive } from "../testkit/built.ts";
import type { ServerProcess } from "../testkit/processes.ts";
import { collect, gqlOk, wsClient } from "../testkit/graphql.ts";
import { CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";
import { parsePrometheus, sampleValue } from "../testkit/prometheus.ts";

let fake: FakeOllama;
const startServer = trackedServerProcesses();

beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

/** Two workers whatever the machine's cores; fast heartbeats, so a dead worker's runs are found within a second. */
const CLUSTER = { WORKERS: "2", RUN_HEARTBEAT_MS: "200", RUN_LEASE_MS: "3000", MODEL_IDLE_TIMEOUT_MS: "600000", SHUTDOWN_TIMEOUT_MS: "5000" };

async function cluster(databaseUrl = tempDatabaseUrl("runledger-cluster-").url, env: Record<string, string> = {}) {
  return startServer({ DATABASE_URL: databaseUrl, OLLAMA_HOST: fake.url, ...CLUSTER, ...env });
}

/** The workers' pids, from their "worker listening" lines. */
function workerPids(server: ServerProcess): number[] {
  return [...server.output().matchAll(/"msg":"worker listening","worker":\d+,"pid":(\d+)/g)].map((m) => Number(m[1]));
}

/**
 * startRun over a connection of its own: the primary hands each new connection
 * to the next worker in turn, so consecutive calls alternate between workers
 * (fetch would keep one connection, and one worker).
 */
function startRunApart(url: string, message: string): Promise<{ runId: string; conversationId: string }> {
  const body = JSON.stringify({ query: START_RUN, variables: { message } });
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/graphql`, { method: "POST", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => {
        const started = JSON.parse(text).data?.startRun;
        if (started?.__typename !== "StartRunSuccess") return reject(new Error(text));
        resolve({ runId: started.run.id, conversationId: started.conversation.id });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

function readDb<T>(file: string, read: (db: Database.Database) => T): T {
  const db = new Database(file, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** The pid of the process whose owner row holds the run (the worker executing it). */
const ownerPid = (file: string, runId: string) =>
  readDb(
    file,
    (db) => (db.prepare("SELECT o.pid FROM runs r JOIN run_owners o ON o.id = r.owner_id WHERE r.id = ?").get(runId) as { pid: number } | undefined)?.pid,
  );

const runningRuns = (file: string) => readDb(file, (db) => db.prepare("SELECT id FROM runs WHERE status IN ('running', 'queued')").all());

/** A model answer held until released. */
function heldAnswer(tokens: string[]): { step: Promise<FakeStep>; release: () => void } {
  let release = () => {};
  const step = new Promise<FakeStep>((resolve) => {
    release = () => resolve({ kind: "text", tokens, delayMs: 20 });
  });
  return { step, release };
}

describe("a cluster of two workers on one SQLite file, without Redis", () => {
  it(
    "is a primary and two workers on one port; a subscriber on either worker follows a run on the other and replays after any seq with no gap; /metrics sums the workers",
    async () => {
      const { url: databaseUrl, file } = tempDatabaseUrl("runledger-cluster-follow-");
      const server = await cluster(databaseUrl);
      const pids = workerPids(server);
      expect(pids).toHaveLength(2);
      expect(pids).not.toContain(server.pid);
      const listening = JSON.parse(
        server
          .output()
          .split("\n")
          .find((line) => line.includes('"msg":"runledger listening"'))!,
      );
      expect(listening).toMatchObject({ events: "cluster", workers: 2, pid: server.pid });

      const tokens = Array.from({ length: 30 }, (_, i) => `t${i} `);
      const answer = heldAnswer(tokens);
      fake.setResponder(() => answer.step);
      try {
        const { runId } = await startRunApart(server.url, "Follow me from both workers.");
        // Four connections, alternating between the workers: two of them follow the run from the other one.
        const clients = Array.from({ length: 4 }, () => wsClient(server.url, { lazy: false }));
        const live = clients.map((client) => collect(client, RUN_EVENTS, { runId }));
        await vi.waitFor(() => expect(live.every((s) => s.results.length > 0)).toBe(true), { timeout: 10_000 });
        answer.release();
        // Mid-stream, more subscribers join with `after`, on both workers.
        await vi.waitFor(() => expect(live[0]!.results.filter((r) => r.runEvents.__typename === "TokenEvent").length).toBeGreaterThan(10), {
          timeout: 10_000,
        });
        const replays = clients.flatMap((client, i) => [
          collect(client, RUN_EVENTS, { runId, after: 0 }),
          collect(client, RUN_EVENTS, { runId, after: 3 + i * 2 }),
        ]);
        const everyone = (await Promise.all(live.map((s) => s.done))).map((results) => results.map((r) => r.runEvents));
        const full = everyone[0]!;
        expect(full.map((e) => e.seq)).toEqual(full.map((_, i) => i + 1));
        expect(
          full
            .filter((e) => e.__typename === "TokenEvent")
            .map((e) => e.text)
            .join(""),
        ).toBe(tokens.join(""));
        expect(full.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
        for (const events of everyone) expect(events).toEqual(full);
        for (const [i, replay] of replays.entries()) {
          const after = i % 2 === 0 ? 0 : 3 + Math.floor(i / 2) * 2;
          expect((await replay.done).map((r) => r.runEvents)).toEqual(full.slice(after));
        }
        for (const client of clients) await client.dispose();

        // The events of the run reached the other worker through the primary (the lag is measured only there),
        // and the counts are every worker's together.
        const metrics = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
        expect(sampleValue(metrics, "runledger_event_bus_delivery_lag_seconds_count")).toBeGreaterThan(0);
        expect(sampleValue(metrics, "runledger_runs_started_total", { agent: "default", kind: "start" })).toBe(1);
        expect(sampleValue(metrics, "runledger_runs_finished_total", { agent: "default", kind: "start", status: "completed", error_code: "" })).toBe(1);
        expect(sampleValue(metrics, "runledger_admission_limit")).toBe(128);
        // Every process's memory: the primary's and both workers'.
        expect(sampleValue(metrics, "process_resident_memory_bytes")).toBeGreaterThan(3 * 40 * 1024 * 1024);
        expect(await server.stop("SIGTERM")).toBe(0);
      } finally {
        answer.release();
        fake.setResponder(defaultResponder);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "SIGKILL to the worker executing a run: the run is recorded INTERRUPTED (its subscriber on the other worker told), never left RUNNING, a new worker takes its place, and the step resumes",
    async () => {
      const { url: databaseUrl, file } = tempDatabaseUrl("runledger-cluster-kill-worker-");
      const server = await cluster(databaseUrl);
      fake.setResponder((request) =>
        request.messages.at(-1)?.content.startsWith("stall") ? { kind: "silence", tokens: ["Half "] } : defaultResponder(request),
      );
      try {
        const { runId, conversationId } = await startRunApart(server.url, "stall on one worker");
        await vi.waitFor(() => expect(fake.openChatRequests()).toBe(1), { timeout: 10_000 });
        const victim = ownerPid(file, runId)!;
        expect(workerPids(server)).toContain(victim);
        const clients = Array.from({ length: 4 }, () => wsClient(server.url, { lazy: false }));
        for (const client of clients) client.on("error", () => {});
        const subscriptions = clients.map((client) => collect(client, RUN_EVENTS, { runId }));
        await vi.waitFor(() => expect(subscriptions.every((s) => s.results.some((r) => r.runEvents.__typename === "TokenEvent"))).toBe(true), {
          timeout: 10_000,
        });

        process.kill(victim, "SIGKILL");
        const outcomes = await Promise.all(
          subscriptions.map((s) =>
            s.done.then(
              (results) => results.at(-1)!.runEvents,
              () => "socket lost",
            ),
          ),
        );
        // On the killed worker the socket went with it; on the other, the subscription ends with the recorded outcome.
        const told = outcomes.filter((o) => o !== "socket lost");
        expect(told.length).toBeGreaterThan(0);
        for (const event of told) expect(event).toMatchObject({ __typename: "RunStatusEvent", status: "INTERRUPTED", errorCode: "INTERRUPTED" });
        for (const client of clients) await client.dispose();

        expect((await waitForRun(server.url, runId)).status).toBe("INTERRUPTED");
        expect(runningRuns(file)).toEqual([]);
        // The primary starts another worker in its place.
        await vi.waitFor(() => expect(server.output()).toContain('"msg":"worker started again"'), { timeout: 30_000 });
        expect(server.output()).toContain('"msg":"a worker stopped; starting another"');
        const workers = workerPids(server);
        expect(workers).toHaveLength(3);
        expect(workers.filter(isAlive)).toHaveLength(2);
        expect(isAlive(victim)).toBe(false);

        fake.setResponder(defaultResponder);
        const { resumeRun } = await gqlOk(server.url, RESUME_RUN, { conversationId });
        expect(await waitForRun(server.url, resumeRun.run.id)).toMatchObject({ status: "COMPLETED" });
        expect((await gqlOk(server.url, CONVERSATION, { id: conversationId })).conversation.messages.at(-1).content).toBe("Echo: stall on one worker");
        expect(await server.stop("SIGTERM")).toBe(0);
      } finally {
        fake.setResponder(defaultResponder);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "SIGKILL to the primary: its workers exit at once and free the port; the next start records their runs INTERRUPTED",
    async () => {
      const { url: databaseUrl, file } = tempDatabaseUrl("runledger-cluster-kill-primary-");
      const server = await cluster(databaseUrl);
      const port = Number(new URL(server.url).port);
      const workers = workerPids(server);
      fake.setResponder((request) =>
        request.messages.at(-1)?.content.startsWith("stall") ? { kind: "silence", tokens: ["Half "] } : defaultResponder(request),
      );
      try {
        const runs = [await startRunApart(server.url, "stall one"), await startRunApart(server.url, "stall two")];
        await vi.waitFor(() => expect(fake.openChatRequests()).toBe(2), { timeout: 10_000 });
        expect(new Set(runs.map(({ runId }) => ownerPid(file, runId)))).toEqual(new Set(workers));

        expect(await server.stop("SIGKILL")).toBeNull();
        await vi.waitFor(() => expect(workers.filter(isAlive)).toEqual([]), { timeout: 5_000 });
        await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
        // Nothing holds the port any more.
        const probe = net.createServer();
        await new Promise<void>((resolve, reject) => {
          probe.once("error", reject);
          probe.listen(port, "127.0.0.1", resolve);
        });
        await new Promise((resolve) => probe.close(resolve));

        const next = await cluster(databaseUrl);
        for (const { runId } of runs)
          expect((await gqlOk(next.url, RUN, { id: runId })).run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED" });
        expect(runningRuns(file)).toEqual([]);
        expect(await next.stop("SIGTERM")).toBe(0);
      } finally {
        fake.setResponder(defaultResponder);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "SIGTERM to the primary: every worker records its active runs INTERRUPTED, their subscribers on either worker get that event, and the primary exits 0",
    async () => {
      const { url: databaseUrl, file } = tempDatabaseUrl("runledger-cluster-sigterm-");
      const server = await cluster(databaseUrl);
      const workers = workerPids(server);
      fake.setResponder((request) =>
        request.messages.at(-1)?.content.startsWith("stall") ? { kind: "silence", tokens: ["Half "] } : defaultResponder(request),
      );
      try {
        const runs = [await startRunApart(server.url, "stall one"), await startRunApart(server.url, "stall two")];
        await vi.waitFor(() => expect(fake.openChatRequests()).toBe(2), { timeout: 10_000 });
        expect(new Set(runs.map(({ runId }) => ownerPid(file, runId)))).toEqual(new Set(workers));
        const clients = [wsClient(server.url, { lazy: false }), wsClient(server.url, { lazy: false })];
        const subscriptions = clients.flatMap((client) => runs.map(({ runId }) => collect(client, RUN_EVENTS, { runId })));
        await vi.waitFor(() => expect(subscriptions.every((s) => s.results.some((r) => r.runEvents.__typename === "TokenEvent"))).toBe(true), {
          timeout: 10_000,
        });

        const sent = Date.now();
        expect(await server.stop("SIGTERM")).toBe(0);
        expect(Date.now() - sent).toBeLessThan(10_000);
        for (const s of subscriptions) {
          expect((await s.done).at(-1)!.runEvents).toMatchObject({ __typename: "RunStatusEvent", status: "INTERRUPTED", errorCode: "INTERRUPTED" });
        }
        for (const client of clients) await client.dispose();
        expect(workers.filter(isAlive)).toEqual([]);
        // Every connection closed, the write-ahead log folded back into the file (before this test opens it again).
        expect(fs.existsSync(`${file}-wal`)).toBe(false);
        expect(runningRuns(file)).toEqual([]);
        expect(readDb(file, (db) => db.prepare("SELECT count(*) AS n FROM run_owners").get())).toEqual({ n: 0 });
      } finally {
        fake.setResponder(defaultResponder);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "stops with the worker's own message and exit code when a worker cannot start, leaving no process behind",
    async () => {
      const taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
      const port = (taken.address() as net.AddressInfo).port;
      try {
        await expect(cluster(undefined, { PORT: String(port) })).rejects.toThrow(
          /exited with 2 before its "runledger listening" line:[^]*PORT: 127\.0\.0\.1:\d+ is already in use/,
        );
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("WORKERS=1", () => {
  it(
    "is one process, as before the cluster: no primary, no worker",
    async () => {
      const server = await startServer({ DATABASE_URL: tempDatabaseUrl("runledger-one-worker-").url, OLLAMA_HOST: fake.url, WORKERS: "1" });
      expect(server.output()).toContain(`"pid":${server.pid}`);
      expect(workerPids(server)).toEqual([]);
      expect(server.output()).not.toContain('"workers"');
      const children = fs.readdirSync("/proc").filter((entry) => {
        if (!/^\d+$/.test(entry)) return false;
        try {
          const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
          return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === server.pid;
        } catch {
          return false;
        }
      });
      expect(children).toEqual([]);
      expect(await server.stop("SIGTERM")).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
