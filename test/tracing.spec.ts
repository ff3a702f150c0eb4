// OpenTelemetry traces from a real server process, exported over OTLP/HTTP
// (JSON) to a receiver in this test: the tree of a run with a tool call, a
// failed run, and a client's traceparent continued over HTTP, over graphql-ws
// and through the REST lab. The fake Ollama answers the model calls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { gql, wsClient } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { clientTraceparent, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../testkit/otlp-receiver.ts";
import type { ServerProcess } from "../testkit/processes.ts";

const startServerProcess = trackedServerProcesses();
let fake: FakeOllama;
let receiver: OtlpReceiver;
let server: ServerProcess;
const db = tempDatabaseUrl();

beforeAll(async () => {
  fake = await startFakeOllama();
  receiver = await startOtlpReceiver();
  server = await startServerProcess({
    DATABASE_URL: db.url,
    OLLAMA_HOST: fake.url,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "runledger-under-test",
    // Export every 50 ms rather than every 5 s.
    OTEL_BSP_SCHEDULE_DELAY: "50",
    // One run at a time: a second one queues.
    MODEL_CONCURRENCY: "1",
  });
}, PROCESS_TEST_TIMEOUT_MS);
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  await fake?.close();
  db.remove();
});

async function startRunWith(headers: Record<string, string>, message: string): Promise<{ runId: string; conversationId: string }> {
  const result = await gql(server.url, START_RUN, { message }, headers);
  const started = result.data?.startRun;
  if (started?.__typename !== "StartRunSuccess") throw new Error(JSON.stringify(result));
  return { runId: started.run.id, conversationId: started.conversation.id };
}

const runSpan = (runId: string) => receiver.span((s) => s.name === "runledger.run" && s.attributes["run.id"] === runId);
const childrenOf = (span: ReceivedSpan) => receiver.spans.filter((s) => s.parentSpanId === span.spanId);

describe("OpenTelemetry traces", () => {
  it(
    "a run with a tool call: the run's span under the client's, model and tool calls under it",
    async () => {
      const client = clientTraceparent();
      const { runId, conversationId } = await startRunWith({ traceparent: client.traceparent }, "calculate 6*7");
      const run = await waitForRun(server.url, runId);
      expect(run.status).toBe("COMPLETED");

      const span = await runSpan(runId);
      expect(span.service).toBe("runledger-under-test");
      expect(span.traceId).toBe(client.traceId);
      // The client's span is the run's parent; the mutation that started it is linked.
      expect(span.parentSpanId).toBe(client.spanId);
      expect(span.attributes).toMatchObject({
        "run.id": runId,
        "conversation.id": conversationId,
        "run.kind": "start",
        "run.agent": "default",
        "run.status": "completed",
      });
      expect(span.status.code).not.toBe(2);
      const mutation = await receiver.span((s) => s.name === "mutation Start" && s.traceId === client.traceId);
      expect(mutation.parentSpanId).toBe(client.spanId);
      expect(mutation.attributes).toMatchObject({ "graphql.operation.type": "mutation", "graphql.operation.name": "Start" });
      expect(span.links).toContainEqual({ traceId: client.traceId, spanId: mutation.spanId });

      // Two model calls (the tool call, then the answer) and the tool between them; spans arrive as they end.
      await receiver.span((s) => s.name === "chat qwen3" && s.parentSpanId === span.spanId && s.events.some((e) => e.name === "gen_ai.first_token"));
      const chats = childrenOf(span).filter((s) => s.name === "chat qwen3");
      expect(chats).toHaveLength(2);
      for (const chat of chats) {
        expect(chat.attributes).toMatchObject({ "gen_ai.system": "ollama", "gen_ai.request.model": "qwen3", "gen_ai.operation.name": "chat" });
        expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
        expect(chat.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
      }
      const tool = childrenOf(span).find((s) => s.name === "execute_tool calculator")!;
      expect(tool.attributes).toMatchObject({ "gen_ai.tool.name": "calculator", "gen_ai.operation.name": "execute_tool", "tool.error": false });
      expect(tool.attributes["mcp.server.name"]).toBeUndefined();
      // Checkpoint writes are the run's too.
      expect(childrenOf(span).filter((s) => s.name === "checkpoint.write").length).toBeGreaterThanOrEqual(3);
      expect(span.events.map((e) => e.name)).toContain("first_token");
      // Every run is queued first, if only for a moment: the wait is the run's first child.
      expect(childrenOf(span).filter((s) => s.name === "runledger.queue")).toHaveLength(1);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "a failed run: its span and its model call's carry the error, and the run's log line names the span",
    async () => {
      fake.enqueue({ kind: "httpError", status: 500, error: "the model broke" });
      const { runId } = await startRunWith({}, "fail, please");
      const run = await waitForRun(server.url, runId);
      expect(run.status).toBe("FAILED");
      const span = await runSpan(runId);
      // No traceparent: the run hangs under the mutation's span, in its trace.
      const mutation = receiver.spans.find((s) => s.spanId === span.parentSpanId)!;
      expect(mutation.name).toBe("mutation Start");
      expect(mutation.parentSpanId).toBe("");
      expect(span.status.code).toBe(2);
      expect(span.attributes).toMatchObject({ "run.status": "failed", "run.error_code": run.errorCode, "error.type": run.errorCode });
      const chat = await receiver.span((s) => s.name === "chat qwen3" && s.parentSpanId === span.spanId);
      expect(chat.status.code).toBe(2);
      const line = server
        .output()
        .split("\n")
        .find((l) => l.includes('"run ended early"') && l.includes(runId));
      expect(JSON.parse(line!)).toMatchObject({ trace_id: span.traceId, span_id: span.spanId });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "a run that waited in the queue: its span continues its own client's trace, not the run it waited for, and shows the wait",
    async () => {
      const first = clientTraceparent();
      const second = clientTraceparent();
      fake.enqueue({ kind: "text", tokens: ["slow ", "answer"], firstDelayMs: 400 });
      const a = await startRunWith({ traceparent: first.traceparent }, "the first");
      const b = await startRunWith({ traceparent: second.traceparent }, "the second");
      expect((await waitForRun(server.url, a.runId)).status).toBe("COMPLETED");
      expect((await waitForRun(server.url, b.runId)).status).toBe("COMPLETED");
      const spanA = await runSpan(a.runId);
      const spanB = await runSpan(b.runId);
      expect(spanA.parentSpanId).toBe(first.spanId);
      expect(spanB.traceId).toBe(second.traceId);
      expect(spanB.parentSpanId).toBe(second.spanId);
      const wait = childrenOf(spanB).find((s) => s.name === "runledger.queue")!;
      // It waited for the first run's model call (about 400 ms).
      expect(wait.durationMs).toBeGreaterThan(200);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "a traceparent in graphql-ws's connection_init payload parents the runs the socket starts",
    async () => {
      const client = clientTraceparent();
      const ws = wsClient(server.url, { connectionParams: { traceparent: client.traceparent } });
      const result = await new Promise<any>((resolve, reject) => {
        let value: any;
        ws.subscribe(
          { query: START_RUN, variables: { message: "over the socket" } },
          { next: (v) => (value = v), error: reject, complete: () => resolve(value) },
        );
      });
      await ws.dispose();
      const runId = result.data.startRun.run.id;
      await waitForRun(server.url, runId);
      const span = await runSpan(runId);
      expect(span.traceId).toBe(client.traceId);
      expect(span.parentSpanId).toBe(client.spanId);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "two instances: a run queued on one and executed by the other continues its client's trace (the traceparent is kept on the run's row)",
    async () => {
      const shared = tempDatabaseUrl();
      const env = (name: string) => ({
        DATABASE_URL: shared.url,
        OLLAMA_HOST: fake.url,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: name,
        OTEL_BSP_SCHEDULE_DELAY: "50",
        MODEL_CONCURRENCY: "1",
        QUEUE_POLL_MS: "100",
      });
      const [taker, runner] = await Promise.all([startServerProcess(env("runledger-taker")), startServerProcess(env("runledger-runner"))]);
      try {
        // The model's one slot is busy on the taker, so the client's run waits queued there.
        fake.enqueue({ kind: "silence", tokens: ["Busy "] });
        const busy = await gql(taker.url, START_RUN, { message: "hold the model" });
        await until(() => fake.openChatRequests() === 1, "the busy run's model call");
        const client = clientTraceparent();
        const queued = await gql(taker.url, START_RUN, { message: "run me elsewhere" }, { traceparent: client.traceparent });
        const runId = queued.data.startRun.run.id;
        expect(queued.data.startRun.run.status).toBe("QUEUED");
        // The taker stops (its busy run INTERRUPTED) and leaves the queued run to the other instance.
        await taker.stop();
        expect((await waitForRun(runner.url, busy.data.startRun.run.id)).status).toBe("INTERRUPTED");
        expect((await waitForRun(runner.url, runId, 30_000)).status).toBe("COMPLETED");
        const span = await runSpan(runId);
        expect(span.service).toBe("runledger-runner");
        expect(span.traceId).toBe(client.traceId);
        expect(span.parentSpanId).toBe(client.spanId);
      } finally {
        await taker.stop();
        await runner.stop();
        shared.remove();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "the REST lab: a span per request, and its traceparent parents the run",
    async () => {
      const client = clientTraceparent();
      const response = await fetch(`${server.url}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: client.traceparent },
        body: JSON.stringify({ message: "hello lab" }),
      });
      expect(response.status).toBe(200);
      const { run: runId } = (await response.json()) as { run: string };
      await waitForRun(server.url, runId);
      const span = await runSpan(runId);
      expect(span.parentSpanId).toBe(client.spanId);
      const request = await receiver.span((s) => s.name === "POST /api/chat" && s.traceId === client.traceId);
      expect(request.parentSpanId).toBe(client.spanId);
      expect(span.links).toContainEqual({ traceId: client.traceId, spanId: request.spanId });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
