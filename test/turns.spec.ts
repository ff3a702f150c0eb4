// Heavy work takes turns on the event loop (src/turns.ts): a few milliseconds'
// worth per pass, in the order asked, so the loop reads its sockets between
// slices. Here: the scheduler itself, the model's lines a turn each, and a
// server whose health check answers while GraphQL requests wait their turn.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TURN_BUDGET_MS, TURNS_PER_PASS, Turns, turns } from "../src/turns.ts";
import { createModelFetch } from "../src/agent/model-fetch.ts";
import { startTestApp } from "../testkit/app.ts";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { collect, wsClient } from "../testkit/graphql.ts";
import type { App } from "../src/app.ts";

/** Holds the thread for `ms`, as a slice of heavy work does. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy: no timer or socket is served meanwhile
  }
}

describe("turns", () => {
  it("gives turns in the order asked, a turn asked during a turn after those already waiting", async () => {
    const t = new Turns();
    const order: string[] = [];
    await Promise.all([
      t.turn().then(() => {
        order.push("a");
        return t.turn().then(() => order.push("a again"));
      }),
      t.turn().then(() => order.push("b")),
      t.turn().then(() => order.push("c")),
    ]);
    expect(order).toEqual(["a", "b", "c", "a again"]);
    expect(t.waiting).toBe(0);
    expect(t.waits.count).toBe(4);
  });

  it("gives a pass about TURN_BUDGET_MS of work, then lets the loop serve its timers before the next turn", async () => {
    const t = new Turns();
    const events: string[] = [];
    const workMs = TURN_BUDGET_MS * 0.75;
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.turn().then(() => {
          events.push(`turn ${i}`);
          // Due at once, served on the loop's next visit to its timers.
          if (i === 0) setTimeout(() => events.push("timer"), 0);
          busy(workMs);
        }),
      ),
    );
    // A second turn fits in the budget when it starts before the budget is spent; the timer comes next, not after all ten.
    const timerAt = events.indexOf("timer");
    expect(timerAt).toBeGreaterThanOrEqual(1);
    expect(timerAt).toBeLessThanOrEqual(2);
    expect(events.filter((e) => e.startsWith("turn"))).toEqual(Array.from({ length: 10 }, (_, i) => `turn ${i}`));
  });

  // The count alone: a process that loses its core mid-pass spends the
  // wall-clock budget too (a loaded machine cut a pass at 14 or 32 turns).
  it("gives at most TURNS_PER_PASS cheap turns a pass", async () => {
    const t = new Turns({ budgetMs: Infinity });
    let granted = 0;
    const all = Promise.all(Array.from({ length: 200 }, () => t.turn().then(() => (granted += 1))));
    // Queued after the pass's own callbacks, so it runs at the end of that pass.
    const afterFirstPass = await new Promise<number>((resolve) => setImmediate(() => resolve(granted)));
    await all;
    expect(TURNS_PER_PASS).toBe(64);
    expect(afterFirstPass).toBe(TURNS_PER_PASS);
    expect(granted).toBe(200);
  });
});

/** A model answering with one chunk of bytes (closed after it, or left open); `onCancel` hears its reader cancel. */
async function readerOfOneChunk(text: string, options: { close: boolean; signal?: AbortSignal; onCancel?: (reason: unknown) => void }) {
  const chunk = new TextEncoder().encode(text);
  const baseFetch = (async () =>
    new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(chunk);
          if (options.close) c.close();
        },
        cancel: options.onCancel,
      }),
    )) as typeof fetch;
  const modelFetch = createModelFetch({
    signal: options.signal ?? new AbortController().signal,
    idleTimeoutMs: 60_000,
    report: { timedOut: false },
    baseFetch,
  });
  return (await modelFetch("http://model/api/chat", { method: "POST", body: "{}" })).body!.getReader();
}

/** Asks the process's turns for `count` slices of 2 ms of work; `granted()` says how many ran so far. */
function queueWork(count: number): { done: Promise<unknown>; granted: () => number } {
  let granted = 0;
  const done = Promise.all(
    Array.from({ length: count }, () =>
      turns.turn().then(() => {
        busy(2);
        granted += 1;
      }),
    ),
  );
  return { done, granted: () => granted };
}

describe("the model's answer", () => {
  it("is handed on a line per turn, however many lines one chunk holds", async () => {
    const lines = ["one", "two", "three", "four", "five"].map((w) => `${JSON.stringify({ message: { content: w } })}\n`);
    const reader = await readerOfOneChunk(lines.join(""), { close: true });
    const pieces: string[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pieces.push(new TextDecoder().decode(value));
    }
    expect(pieces).toEqual(lines);
  });

  it("reads past an empty chunk from the model instead of leaving the reader waiting", async () => {
    // The empty chunk comes on a pull a read asked for, after the first line was read.
    const chunks = [new TextEncoder().encode("first line\n"), new Uint8Array(0), new TextEncoder().encode("second line\n")];
    const baseFetch = (async () =>
      new Response(
        new ReadableStream({
          pull(c) {
            const next = chunks.shift();
            if (next) c.enqueue(next);
            else c.close();
          },
        }),
      )) as typeof fetch;
    const modelFetch = createModelFetch({ signal: new AbortController().signal, idleTimeoutMs: 60_000, report: { timedOut: false }, baseFetch });
    const reader = (await modelFetch("http://model/api/chat", { method: "POST", body: "{}" })).body!.getReader();
    const readAll = async () => {
      let text = "";
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
      return text;
    };
    const outcome = await Promise.race([readAll(), new Promise((resolve) => setTimeout(() => resolve("a read still pending"), 2_000))]);
    expect(outcome).toBe("first line\nsecond line\n");
  });

  it("stops at the run's stop while its next line waits for a turn", async () => {
    const run = new AbortController();
    const reader = await readerOfOneChunk("line one\nline two\nline three\n", { close: false, signal: run.signal });
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("line one\n");
    run.abort(new Error("the run was cancelled"));
    await expect(reader.read()).rejects.toThrow("the run was cancelled");
  });

  it("stops asking for turns once its reader cancels, and cancels the model's stream", async () => {
    let baseCancelled: unknown;
    const reader = await readerOfOneChunk("line one\nline two\nline three\n", { close: false, onCancel: (reason) => (baseCancelled = reason) });
    await reader.read();
    await reader.cancel("the client went away");
    // The line that was waiting gets its turn and goes nowhere; nothing more is asked for.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(baseCancelled).toBe("the client went away");
    expect(turns.waiting).toBe(0);
  });
});

describe("a server whose loop is busy with turns", () => {
  let fake: FakeOllama;
  let app: App;
  beforeAll(async () => {
    fake = await startFakeOllama();
    app = await startTestApp({ ollamaUrl: fake.url });
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it("answers GET /health between turns, and a GraphQL request in its turn, after the work asked before it", async () => {
    // Warm connections and code paths, so neither answer waits for a first time.
    await fetch(`${app.url}/health`).then((r) => r.text());
    await fetch(`${app.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ __typename }" }),
    }).then((r) => r.text());
    const work = 100;
    const { done, granted } = queueWork(work);
    const [health, graphql] = await Promise.all([
      fetch(`${app.url}/health`).then(async (r) => ({ status: r.status, grantedBefore: granted(), body: await r.text() })),
      fetch(`${app.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) }).then(
        async (r) => ({ grantedBefore: granted(), body: await r.json() }),
      ),
    ]);
    await done;
    expect(health.status).toBe(200);
    expect(health.grantedBefore).toBeLessThan(work / 2);
    expect(graphql.body).toEqual({ data: { __typename: "Query" } });
    expect(graphql.grantedBefore).toBe(work);
  });

  it("runs an operation sent over a WebSocket in its turn, after the work asked before it", async () => {
    const client = wsClient(app.url);
    try {
      await collect(client, "{ __typename }").done; // connected and warm
      const work = 100;
      const { done, granted } = queueWork(work);
      const answered = collect(client, "{ __typename }").done.then((results) => ({ results, grantedBefore: granted() }));
      const [{ results, grantedBefore }] = await Promise.all([answered, done]);
      expect(results).toEqual([{ __typename: "Query" }]);
      expect(grantedBefore).toBe(work);
    } finally {
      await client.dispose();
    }
  });
});
