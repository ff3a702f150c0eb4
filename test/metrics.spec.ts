// GET /metrics over real HTTP on every deployment: after a scripted set of
// runs (one completed, one failed, one cancelled, one waiting, one edit) the counters and
// histograms hold exactly the expected counts, live subscriptions are counted
// by transport, and the exposition parses. Then who may read it: admins beside
// the API, anyone on METRICS_PORT.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, closedPort, startTestApp, waitForRun } from "../testkit/app.ts";
import { collect, gqlOk, sseClient, wsClient } from "../testkit/graphql.ts";
import { CANCEL_RUN, RUN_EVENTS } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { parsePrometheus, sampleValue, type Family } from "../testkit/prometheus.ts";
import { deployments } from "./conformance/backends.ts";
import type { App } from "../src/app.ts";

const START = /* GraphQL */ `
  mutation Start($message: String!, $agent: String) {
    startRun(input: { message: $message, agent: $agent }) { __typename ... on StartRunSuccess { run { id } } }
  }
`;

function agentsFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-metrics-"));
  const file = path.join(dir, "agents.json");
  const ask = path.join(ROOT, "test", "fixtures", "graphs", "ask.ts");
  fs.writeFileSync(file, JSON.stringify({ agents: { default: { type: "chat" }, interviewer: { type: "graph", module: ask, export: "graph" } } }));
  return file;
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<Map<string, Family>> {
  const response = await fetch(`${url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/plain");
  return parsePrometheus(await response.text());
}

async function start(app: App, message: string, agent?: string): Promise<string> {
  const { startRun } = await gqlOk(app.url, START, { message, agent });
  return startRun.run.id;
}

for (const deployment of deployments) {
  describe(`/metrics on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App;
    let cleanup = async () => {};
    let appEnv: Record<string, string> = {};

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      // One model call at a time: a second run queues behind the first.
      // Rare heartbeats: two instances in this one process would take each other for a previous incarnation and recover each other's runs.
      appEnv = { RUNLEDGER_CONFIG: agentsFile(), MODEL_CONCURRENCY: "1", RUN_HEARTBEAT_MS: "300000", RUN_LEASE_MS: "600000", ...selected.env };
      app = await startTestApp({ ollamaUrl: fake.url, env: appEnv });
    });
    afterAll(async () => {
      await app?.close();
      await fake?.close();
      await cleanup();
    });

    it("counts a completed, a failed, a cancelled, a waiting and an edit run exactly", async () => {
      fake.enqueue({ kind: "text", tokens: ["one ", "two ", "three"], delayMs: 5 });
      const completed = await start(app, "count to three");
      expect((await waitForRun(app.url, completed)).status).toBe("COMPLETED");

      fake.enqueue({ kind: "httpError", status: 500, error: "the model broke" });
      const failed = await waitForRun(app.url, await start(app, "break"));
      expect(failed.status).toBe("FAILED");

      fake.enqueue({ kind: "silence" });
      const cancelledId = await start(app, "wait for ever");
      await until(async () => fake.openChatRequests() === 1, "the model call");
      const during = await scrape(app.url);
      expect(sampleValue(during, "runledger_runs_active")).toBe(1);
      expect((await gqlOk(app.url, CANCEL_RUN, { runId: cancelledId })).cancelRun.__typename).toBe("CancelRunSuccess");
      expect((await waitForRun(app.url, cancelledId)).status).toBe("CANCELLED");

      const waiting = await start(app, "who answers?", "interviewer");
      expect((await waitForRun(app.url, waiting)).status).toBe("WAITING");

      // An edit is a run too: counted with its kind, never queued, no model call.
      const { run } = await gqlOk(app.url, `query ($id: ID!) { run(id: $id) { conversation { checkpoints(last: 1) { edges { node { id } } } } } }`, {
        id: completed,
      });
      const { editState } = await gqlOk(
        app.url,
        `mutation ($k: ID!) { editState(input: { checkpointId: $k, values: { messages: [{ role: "USER", content: "count to four" }] } }) { __typename } }`,
        { k: run.conversation.checkpoints.edges[0].node.id },
      );
      expect(editState.__typename).toBe("EditStateSuccess");
      await until(async () => app.services.runs.activeRunIds.length === 0, "every run recorded");
      // One read of checkpoints, for the storage timings below.
      expect((await gqlOk(app.url, `query($id: ID!) { run(id: $id) { checkpoints { id } } }`, { id: completed })).run.checkpoints.length).toBeGreaterThan(0);

      const m = await scrape(app.url);
      const v = (name: string, labels: Record<string, string> = {}) => sampleValue(m, name, labels) ?? 0;
      expect(v("runledger_runs_started_total", { agent: "default", kind: "start" })).toBe(3);
      expect(v("runledger_runs_started_total", { agent: "interviewer", kind: "start" })).toBe(1);
      expect(v("runledger_runs_started_total", { agent: "default", kind: "edit" })).toBe(1);
      const finished = m
        .get("runledger_runs_finished_total")!
        .samples.map((s) => [s.labels.agent, s.labels.kind, s.labels.status, s.labels.error_code, s.value]);
      expect(finished.sort()).toEqual(
        [
          ["default", "start", "completed", "", 1],
          ["default", "start", "failed", failed.errorCode, 1],
          ["default", "start", "cancelled", "CANCELLED", 1],
          ["interviewer", "start", "waiting", "", 1],
          ["default", "edit", "completed", "", 1],
        ].sort(),
      );
      expect(v("runledger_run_duration_seconds_count", { agent: "default", status: "completed" })).toBe(2);
      expect(v("runledger_run_duration_seconds_count", { agent: "default", status: "failed" })).toBe(1);
      expect(v("runledger_run_duration_seconds_count", { agent: "default", status: "cancelled" })).toBe(1);
      expect(v("runledger_run_duration_seconds_count", { agent: "interviewer", status: "waiting" })).toBe(1);
      expect(v("runledger_run_duration_seconds_bucket", { agent: "default", status: "completed", le: "+Inf" })).toBe(2);
      // Only the completed run streamed: three tokens, one first token, two gaps.
      expect(v("runledger_tokens_total", { agent: "default" })).toBe(3);
      expect(v("runledger_time_to_first_token_seconds_count", { agent: "default" })).toBe(1);
      expect(v("runledger_time_to_first_token_seconds_count", { agent: "interviewer" })).toBe(0);
      expect(v("runledger_token_gap_seconds_count", { agent: "default" })).toBe(2);
      expect(v("runledger_model_tokens_total", { agent: "default", type: "output" })).toBeGreaterThan(0);
      // Every run is queued first, if only for a moment.
      expect(v("runledger_queue_wait_seconds_count", { agent: "default" })).toBe(3);
      expect(v("runledger_runs_active")).toBe(0);
      expect(v("runledger_runs_queued")).toBe(0);
      // MAX_ACTIVE_RUNS, 64 by default; no fewer, as ADMISSION_LOOP_DELAY_MS is off by default.
      expect(v("runledger_admission_limit")).toBe(64);
      // Nothing waits for its turn on the loop once the runs ended (this scrape had its own).
      expect(m.get("runledger_turns_waiting")?.type).toBe("gauge");
      expect(v("runledger_turns_waiting")).toBe(0);
      expect(v("runledger_graphql_operations_total", { type: "mutation", field: "startRun", outcome: "ok" })).toBe(4);
      expect(v("runledger_graphql_operations_total", { type: "mutation", field: "cancelRun", outcome: "ok" })).toBe(1);
      expect(v("runledger_graphql_operations_total", { type: "mutation", field: "editState", outcome: "ok" })).toBe(1);
      expect(v("runledger_graphql_operation_duration_seconds_count", { type: "mutation", field: "startRun" })).toBe(4);
      // Every write to a SQLite file waits its turn at the write gate; PostgreSQL has none.
      const gated = v("runledger_db_write_gate_wait_seconds_count");
      if (deployment.name.startsWith("SQLite")) expect(gated).toBeGreaterThan(10);
      else expect(gated).toBe(0);
      expect(m.get("runledger_db_waiting")?.type).toBe("gauge");
      // Each storage operation is timed at its seam: five runs (one an edit) started and recorded, on either backend.
      expect(v("runledger_db_operation_duration_seconds_count", { seam: "run_store", operation: "startRun" })).toBe(5);
      expect(v("runledger_db_operation_duration_seconds_count", { seam: "run_store", operation: "finishRun" })).toBe(5);
      expect(v("runledger_db_operation_duration_seconds_count", { seam: "run_store", operation: "claimQueued" })).toBeGreaterThanOrEqual(4);
      const checkpointReads = m
        .get("runledger_db_operation_duration_seconds")!
        .samples.filter((x) => x.name === "runledger_db_operation_duration_seconds_count" && x.labels.seam === "checkpoint_reads");
      expect(checkpointReads.reduce((sum, x) => sum + x.value, 0)).toBeGreaterThan(0);
      expect(v("runledger_db_waiting")).toBe(0);
      // The process's own metrics come along.
      expect(m.get("process_cpu_user_seconds_total")?.type).toBe("counter");
      expect(m.get("nodejs_eventloop_lag_seconds")?.type).toBe("gauge");
    });

    it("counts a run queued behind a busy model, and live subscriptions by transport", async () => {
      fake.enqueue({ kind: "silence" });
      const runId = await start(app, "stay open");
      await until(async () => fake.openChatRequests() === 1, "the first run's model call");
      const queuedId = await start(app, "wait your turn");
      expect(sampleValue(await scrape(app.url), "runledger_runs_queued")).toBe(1);
      expect(sampleValue(await scrape(app.url), "runledger_runs_active")).toBe(1);
      await gqlOk(app.url, CANCEL_RUN, { runId: queuedId });
      expect(sampleValue(await scrape(app.url), "runledger_runs_queued")).toBe(0);

      const ws = wsClient(app.url);
      const sse = sseClient(app.url);
      const overWs = collect(ws, RUN_EVENTS, { runId });
      const overSse = collect(sse, RUN_EVENTS, { runId });
      // The REST lab's event stream of the same conversation.
      const { run } = await gqlOk(app.url, `query($id: ID!) { run(id: $id) { conversation { id } } }`, { id: runId });
      const overRest = fetch(`${app.url}/api/chat?conversation=${run.conversation.id}`).then((response) => response.text());
      const counts = async () => {
        const m = await scrape(app.url);
        return ["ws", "sse", "rest"].map((transport) => sampleValue(m, "runledger_subscriptions", { transport }));
      };
      await until(async () => (await counts()).every((n) => n === 1), "one subscription per transport");
      await gqlOk(app.url, CANCEL_RUN, { runId });
      await Promise.all([overWs.done, overSse.done]);
      expect(await overRest).toMatch(/event: end\ndata: \{"conversation":"[^"]+","status":"cancelled"/);
      await until(async () => (await counts()).every((n) => n === 0), "no subscription left");
      await ws.dispose();
      await sse.dispose();
    });

    if (deployment.name.includes("Redis")) {
      it("measures the delivery lag of events another instance publishes through Redis", async () => {
        const other = await startTestApp({ ollamaUrl: fake.url, env: { ...appEnv } });
        try {
          fake.enqueue({ kind: "text", tokens: ["a ", "b ", "c ", "d ", "e"], firstDelayMs: 300, delayMs: 30 });
          const runId = await start(app, "five tokens");
          const executing = await until(async () => [app, other].find((a) => a.services.runs.activeRunIds.includes(runId)), "the run executing");
          const watching = executing === app ? other : app;
          const ws = wsClient(watching.url);
          const events = await collect(ws, RUN_EVENTS, { runId }).done;
          await ws.dispose();
          expect(events.length).toBeGreaterThanOrEqual(7);
          const m = await scrape(watching.url);
          // The tokens at least were published after the subscriber began following the run.
          expect(sampleValue(m, "runledger_event_bus_delivery_lag_seconds_count")).toBeGreaterThanOrEqual(5);
          expect(sampleValue(m, "runledger_event_bus_delivery_lag_seconds_bucket", { le: "1" })).toBe(
            sampleValue(m, "runledger_event_bus_delivery_lag_seconds_count"),
          );
        } finally {
          await other.close();
        }
      });
    }
  });
}

describe("who may read /metrics", () => {
  let fake: FakeOllama;
  const apps: App[] = [];
  beforeAll(async () => {
    fake = await startFakeOllama();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await fake?.close();
  });

  it("beside the API: refused without credentials when authentication is configured, served to an admin", async () => {
    const app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: "metrics-token-123" } });
    apps.push(app);
    const anonymous = await fetch(`${app.url}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain("runledger_");
    const wrong = await fetch(`${app.url}/metrics`, { headers: { authorization: "Bearer not-the-token" } });
    expect(wrong.status).toBe(401);
    const m = await scrape(app.url, { authorization: "Bearer metrics-token-123" });
    expect(m.get("runledger_runs_started_total")?.type).toBe("counter");
  });

  it("on METRICS_PORT: served there without credentials, and not beside the API", async () => {
    const port = await closedPort();
    const app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: "metrics-token-123", METRICS_PORT: String(port) } });
    apps.push(app);
    expect(app.metricsUrl).toBe(`http://127.0.0.1:${port}`);
    const m = await scrape(app.metricsUrl!);
    expect(m.get("runledger_runs_active")?.type).toBe("gauge");
    expect((await fetch(`${app.metricsUrl}/graphql`)).status).toBe(404);
    const beside = await fetch(`${app.url}/metrics`, { headers: { authorization: "Bearer metrics-token-123" } });
    expect(beside.status).toBe(404);
  });
});
