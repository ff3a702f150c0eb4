// The bounds of live streaming: retention and replay gaps, the grace period
// after which the database answers, and stalled subscribers cut off without
// slowing anyone else. Real clients and real sockets on both transports.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { collect, sseClient, startRun, wsClient } from "../testkit/graphql.ts";
import { range, rawSse, rawWs, seqs, sseResults, TRANSPORTS, until } from "../testkit/streaming.ts";
import { CONVERSATIONS_CHANGED_ROW, RUN_EVENTS } from "../testkit/documents.ts";
import type { App } from "../src/app.ts";
import { parsePrometheus, sampleValue } from "../testkit/prometheus.ts";

let fake: FakeOllama;
beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

describe("retention: a replay older than what is kept starts with a ReplayGapEvent", () => {
  let app: App;
  beforeAll(async () => {
    app = await startTestApp({ ollamaUrl: fake.url, env: { EVENT_RETENTION: "5" } });
  });
  afterAll(async () => {
    await app?.close();
  });

  describe.each(TRANSPORTS)("over $name", ({ client: connect }) => {
    it("reports the missing seqs, then replays the retained events", async () => {
      // The model answers only once the live subscriber is in, so it misses nothing.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      fake.setResponder(async () => {
        await gate;
        return { kind: "text", tokens: range(12).map((i) => `g${i} `) };
      });
      let whole: any[];
      try {
        const { runId } = await startRun(app.url, "a long answer");
        const live = connect(app.url);
        const stream = collect(live, RUN_EVENTS, { runId });
        await until(() => stream.results.length > 0, "the live subscriber's first event");
        release();
        whole = (await stream.done).map((r) => r.runEvents);
        await live.dispose();
      } finally {
        release();
        fake.setResponder(defaultResponder);
      }
      const runId = whole[0].runId;
      const last = whole.at(-1).seq;
      expect(seqs(whole)).toEqual(range(last));
      expect(last).toBeGreaterThan(12);

      const late = connect(app.url);
      const fromStart = (await collect(late, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
      expect(fromStart[0]).toMatchObject({ __typename: "ReplayGapEvent", fromSeq: 1, toSeq: last - 5, seq: last - 5 });
      expect(fromStart.slice(1)).toEqual(whole.slice(-5));

      const fromTwo = (await collect(late, RUN_EVENTS, { runId, after: 2 }).done).map((r) => r.runEvents);
      expect(fromTwo[0]).toMatchObject({ __typename: "ReplayGapEvent", fromSeq: 3, toSeq: last - 5 });
      expect(fromTwo.slice(1)).toEqual(whole.slice(-5));

      const recent = (await collect(late, RUN_EVENTS, { runId, after: last - 3 }).done).map((r) => r.runEvents);
      expect(recent).toEqual(whole.slice(-3));
      await late.dispose();
    });
  });
});

describe("after the grace period the database answers for a finished run", () => {
  let app: App;
  beforeAll(async () => {
    app = await startTestApp({ ollamaUrl: fake.url, env: { EVENT_GRACE_MS: "50" } });
  });
  afterAll(async () => {
    await app?.close();
  });

  describe.each(TRANSPORTS)("over $name", ({ client: connect }) => {
    it("yields exactly the terminal event, with the seq and outcome the live stream had", async () => {
      fake.enqueue({ kind: "errorLine", tokens: ["partial "], error: "the model broke" });
      const { runId } = await startRun(app.url, "this one fails");
      const client = connect(app.url);
      const live = (await collect(client, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
      const terminal = live.at(-1);
      expect(terminal).toMatchObject({ __typename: "RunStatusEvent", status: "FAILED", errorCode: "MODEL_ERROR" });
      await until(() => app.services.bus.stats().logs === 0, "the retained events to be dropped");

      const stored = (await collect(client, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({ __typename: "RunStatusEvent", seq: terminal.seq, status: "FAILED", errorCode: "MODEL_ERROR", runId });
      expect(stored[0].errorMessage).toBe(terminal.errorMessage);

      // Nothing is newer than the terminal event: the stream just completes.
      expect(await collect(client, RUN_EVENTS, { runId, after: terminal.seq }).done).toEqual([]);
      await client.dispose();
    });
  });
});

describe("a stalled subscriber is cut off; the run and the other subscribers go on", () => {
  let app: App;
  beforeAll(async () => {
    app = await startTestApp({
      ollamaUrl: fake.url,
      // Keep-alive is long here so that the paused socket is not dropped for missing pongs
      // before the test reads it again.
      env: { SUBSCRIBER_QUEUE_LIMIT: "20", WS_KEEPALIVE_MS: "120000", WS_MAX_SUBSCRIPTIONS: "2" },
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  it("ends each stalled stream with SUBSCRIBER_TOO_SLOW after a gapless prefix, over WebSocket and SSE", async () => {
    // About 8 MB of events: more than the kernel's socket buffers take for a
    // reader that does not read, so the server's queues must fill.
    const tokens = range(400).map((i) => `${String(i).padStart(4, "0")}${"x".repeat(20_000)}`);
    fake.enqueue({ kind: "text", tokens, firstDelayMs: 300 });
    const { runId } = await startRun(app.url, "flood");

    const stalledWs = await rawWs(app.url);
    stalledWs.subscribe("1", RUN_EVENTS, { runId });
    stalledWs.socket.pause();
    const stalledSse = rawSse(app.url, RUN_EVENTS, { runId }, { paused: true });

    const ws = wsClient(app.url);
    const sse = sseClient(app.url);
    const [overWs, overSse] = await Promise.all([collect(ws, RUN_EVENTS, { runId }).done, collect(sse, RUN_EVENTS, { runId }).done]);
    const whole = overWs.map((r) => r.runEvents);
    expect(overSse.map((r) => r.runEvents)).toEqual(whole);
    expect(seqs(whole)).toEqual(range(whole.length));
    expect(whole.filter((e) => e.__typename === "TokenEvent").map((e) => e.text)).toEqual(tokens);
    expect(whole.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });

    // Both stalled clients are still not reading, and the bus holds nothing for them.
    await until(() => app.services.bus.stats().runSubscribers === 0, "the stalled subscribers to be released");

    stalledWs.socket.resume();
    (await stalledSse.response).resume();
    await until(() => stalledWs.of("1").some((m) => m.type === "complete"), "the stalled WebSocket stream to complete");
    await stalledSse.ended;

    const wsPayloads = stalledWs
      .of("1")
      .filter((m) => m.type === "next")
      .map((m) => m.payload);
    const ssePayloads = sseResults(stalledSse);
    expect(stalledSse.events.at(-1)?.event).toBe("complete");
    for (const payloads of [wsPayloads, ssePayloads]) {
      const cut = payloads.at(-1);
      expect(cut.data).toBeNull();
      expect(cut.errors).toHaveLength(1);
      expect(cut.errors[0].extensions.code).toBe("SUBSCRIBER_TOO_SLOW");
      expect(cut.errors[0].message).toMatch(/fell more than 20 events behind.*resubscribe with after/);
      const delivered = payloads.slice(0, -1).map((p) => p.data.runEvents);
      expect(delivered.length).toBeGreaterThan(0);
      expect(delivered.length).toBeLessThan(whole.length);
      expect(delivered).toEqual(whole.slice(0, delivered.length));

      // The documented way back: resubscribe after the last seq received.
      const rest = (await collect(ws, RUN_EVENTS, { runId, after: delivered.at(-1).seq }).done).map((r) => r.runEvents);
      expect([...delivered, ...rest]).toEqual(whole);
    }
    // /metrics counts both cut-offs, one per transport.
    const metrics = parsePrometheus(await (await fetch(`${app.url}/metrics`)).text());
    expect(sampleValue(metrics, "runledger_subscribers_cut_off_total")).toBe(2);
    stalledWs.socket.close();
    await ws.dispose();
    await sse.dispose();
  });

  it("refuses more operations on one WebSocket than WS_MAX_SUBSCRIPTIONS", async () => {
    await until(() => app.services.bus.stats().changeSubscribers === 0, "no change subscribers left from before");
    const client = wsClient(app.url);
    const operations = () => app.http.webSocketStats().operations;
    const first = collect(client, CONVERSATIONS_CHANGED_ROW);
    const second = collect(client, CONVERSATIONS_CHANGED_ROW);
    await until(() => operations() === 2 && app.http.webSocketStats().broadcast.members === 2, "two change subscriptions");
    await expect(collect(client, CONVERSATIONS_CHANGED_ROW).done).rejects.toThrow(/TOO_MANY_SUBSCRIPTIONS/);

    first.dispose();
    await until(() => operations() === 1, "one change subscription");
    const third = collect(client, CONVERSATIONS_CHANGED_ROW);
    await until(() => operations() === 2 && app.http.webSocketStats().broadcast.members === 2, "the third subscription to be accepted");
    second.dispose();
    third.dispose();
    await client.dispose();
  });
});

describe("a client that reads nothing loses its connection after WRITE_STALL_TIMEOUT_MS", () => {
  let app: App;
  beforeAll(async () => {
    // The default queue limit holds the whole flood: only the stall timeout can end the stalled stream.
    app = await startTestApp({ ollamaUrl: fake.url, env: { WRITE_STALL_TIMEOUT_MS: "1000" } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it("closes a stalled SSE stream's connection; a slow but reading client keeps its own", async () => {
    const tokens = range(400).map((i) => `${String(i).padStart(4, "0")}${"x".repeat(20_000)}`);
    fake.enqueue({ kind: "text", tokens, firstDelayMs: 300 });
    const { runId } = await startRun(app.url, "flood");
    const stalled = rawSse(app.url, RUN_EVENTS, { runId }, { paused: true });
    await stalled.response;
    // A client that reads, if slowly, is never cut: it takes every event.
    const client = sseClient(app.url);
    const whole = (await collect(client, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
    expect(whole.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
    expect(whole.filter((e) => e.__typename === "TokenEvent")).toHaveLength(tokens.length);
    await client.dispose();
    // The server closes the connection the stalled client never read from, and its subscription goes with it; the client did nothing.
    await until(() => app.services.bus.stats().runSubscribers === 0, "the stalled subscriber to be released");
    const connections = () => new Promise<number>((resolve, reject) => app.http.server.getConnections((error, n) => (error ? reject(error) : resolve(n))));
    const deadline = Date.now() + 10_000;
    while ((await connections()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await connections()).toBe(0);
    // Reading again, the client finds its stream cut short: no complete event.
    (await stalled.response).resume();
    await stalled.ended;
    expect(stalled.events.some((e) => e.event === "complete")).toBe(false);
  });
});
