// The model failing every way it can, made to happen for real by the fake Ollama
// over HTTP: each run ends with the right status and code within a bounded time,
// keeps the text it streamed, leaves its step resumable, and the server goes on
// serving the next run.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { defaultResponder, splitTokens, startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { closedPort, startTestApp, waitForRun } from "../testkit/app.ts";
import { collect, gqlOk, wsClient } from "../testkit/graphql.ts";
import { CONVERSATION, RESUME_RUN, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";
import type { App } from "../src/app.ts";
import { createModelFetch, type ModelTransportReport } from "../src/agent/model-fetch.ts";
import { turns } from "../src/turns.ts";

/** Short enough to keep the suite fast, long enough that a busy machine never trips it by accident. */
const IDLE_TIMEOUT_MS = 1_500;
const RECURSION_LIMIT = 6;

let fake: FakeOllama;
let app: App;

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({
    ollamaUrl: fake.url,
    env: { MODEL_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS), AGENT_RECURSION_LIMIT: String(RECURSION_LIMIT) },
  });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.setResponder(defaultResponder);
});

async function startOn(url: string, message: string) {
  const { startRun } = await gqlOk(url, START_RUN, { message });
  if (startRun.__typename !== "StartRunSuccess") throw new Error(JSON.stringify(startRun));
  return { runId: startRun.run.id as string, conversationId: startRun.conversation.id as string };
}

/** Runs one turn whose first model call misbehaves as `step` says; returns the recorded run and how long it took. */
async function failingTurn(step: FakeStep, message = "Hello there") {
  fake.enqueue(step);
  const started = Date.now();
  const { runId, conversationId } = await startOn(app.url, message);
  const run = await waitForRun(app.url, runId, 20_000);
  return { run, conversationId, elapsedMs: Date.now() - started };
}

/** The step the failure left pending is still there, and a resume with a healthy model completes it. */
async function expectResumable(conversationId: string, message = "Hello there") {
  const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
  expect(conversation).toMatchObject({ next: ["agent"], resumable: true, activeRun: null });
  const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
  expect(resumeRun.__typename).toBe("ResumeRunSuccess");
  expect((await waitForRun(app.url, resumeRun.run.id)).status).toBe("COMPLETED");
  const after = (await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation;
  expect(after.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: `Echo: ${message}` });
}

/** Asks the process's turns for `count` slices of 2 ms of work each, as a busy instance does; resolves when all ran. */
function holdTurns(count: number): Promise<unknown> {
  return Promise.all(
    Array.from({ length: count }, () =>
      turns.turn().then(() => {
        const end = performance.now() + 2;
        while (performance.now() < end) {
          // busy: no timer or socket is served meanwhile
        }
      }),
    ),
  );
}

describe("the model failing", () => {
  it("connection refused (nothing listens on OLLAMA_HOST): MODEL_UNAVAILABLE", async () => {
    const port = await closedPort();
    const offline = await startTestApp({ ollamaUrl: `http://127.0.0.1:${port}` });
    try {
      const { runId } = await startOn(offline.url, "anyone there?");
      const run = await waitForRun(offline.url, runId);
      expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_UNAVAILABLE", partialOutput: null });
      expect(run.errorMessage).toMatch(/ECONNREFUSED/);
      expect(run.finishedAt).not.toBeNull();
    } finally {
      await offline.close();
    }
  });

  it("HTTP 404 model not found: MODEL_NOT_FOUND, with Ollama's words", async () => {
    const { run, conversationId } = await failingTurn({ kind: "notFound" });
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_NOT_FOUND", partialOutput: null });
    expect(run.errorMessage).toMatch(/model "qwen3" not found, try pulling it first/);
    await expectResumable(conversationId);
  });

  it('an {"error"} line mid-stream: MODEL_ERROR, keeping the text streamed before it', async () => {
    const { run, conversationId } = await failingTurn({ kind: "errorLine", tokens: ["Half ", "an ", "answer"], error: "llama runner out of memory" });
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_ERROR", partialOutput: "Half an answer" });
    expect(run.errorMessage).toMatch(/llama runner out of memory/);
    await expectResumable(conversationId);
  });

  it("an HTTP 500 with an error body: MODEL_ERROR", async () => {
    const { run, conversationId } = await failingTurn({ kind: "httpError", status: 500, error: "llama runner process has terminated" });
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_ERROR" });
    expect(run.errorMessage).toMatch(/llama runner process has terminated/);
    await expectResumable(conversationId);
  });

  it("the socket dropped mid-stream: MODEL_UNAVAILABLE, keeping the text streamed before it", async () => {
    const { run, conversationId } = await failingTurn({ kind: "dropMidStream", tokens: ["Cut ", "off "] });
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_UNAVAILABLE", partialOutput: "Cut off " });
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
    await expectResumable(conversationId);
  });

  it("the socket dropped while the process is busy: every token that arrived before the drop is kept, in partialOutput and the run's events", async () => {
    // The answer and the drop arrive while the process's turns are held busy and
    // the model's lines wait for theirs: what arrived must outlive the connection.
    let load: Promise<unknown> = Promise.resolve();
    fake.setResponder(() => {
      load = holdTurns(150);
      return { kind: "dropMidStream", tokens: ["Half ", "an ", "answer "], delayMs: 20 };
    });
    const { runId, conversationId } = await startOn(app.url, "Hello there");
    const run = await waitForRun(app.url, runId);
    await load;
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_UNAVAILABLE", partialOutput: "Half an answer " });
    const client = wsClient(app.url);
    try {
      const events = (await collect(client, RUN_EVENTS, { runId, after: 0 }).done).map((r) => r.runEvents);
      const tokens = events.filter((e) => e.__typename === "TokenEvent").map((e) => e.text);
      expect(tokens.join("")).toBe("Half an answer ");
      expect(events.at(-1)).toMatchObject({ status: "FAILED", errorCode: "MODEL_UNAVAILABLE" });
    } finally {
      await client.dispose();
    }
    fake.setResponder(defaultResponder);
    await expectResumable(conversationId);
  });

  it("headers, then silence: MODEL_TIMEOUT after MODEL_IDLE_TIMEOUT_MS, and the request is closed", async () => {
    const { run, conversationId, elapsedMs } = await failingTurn({ kind: "silence", tokens: ["Thinking "] });
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_TIMEOUT", partialOutput: "Thinking " });
    expect(run.errorMessage).toMatch(new RegExp(`nothing for ${IDLE_TIMEOUT_MS} ms`));
    // It was the idle timer that ended it (not before), within a generous bound after.
    expect(elapsedMs).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS);
    expect(elapsedMs).toBeLessThan(IDLE_TIMEOUT_MS + 10_000);
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
    await expectResumable(conversationId);
  });

  it("silence before the headers: MODEL_TIMEOUT as well", async () => {
    const { run, elapsedMs } = await failingTurn({ kind: "hangBeforeHeaders" });
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_TIMEOUT", partialOutput: null });
    expect(elapsedMs).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS);
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
  });

  it("a slow trickle that never pauses for the idle timeout completes, though it lasts longer than the timeout", async () => {
    const tokens = splitTokens("every token arrives well within the idle timeout");
    const { run, conversationId, elapsedMs } = await failingTurn({ kind: "trickle", tokens, delayMs: IDLE_TIMEOUT_MS / 5 });
    expect(run).toMatchObject({ status: "COMPLETED", errorCode: null, partialOutput: null });
    expect(elapsedMs).toBeGreaterThan(IDLE_TIMEOUT_MS);
    const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
    expect(conversation.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: tokens.join("") });
  });

  it("the idle timer measures the model's silence only, never the time this process takes over a chunk", async () => {
    // The model sends every byte quickly; the consumer takes longer than the idle
    // timeout over each chunk. Nothing may time out: the model was never silent.
    fake.enqueue({ kind: "text", tokens: ["every ", "byte ", "sent"], delayMs: 50 });
    const idleTimeoutMs = 1_000;
    const report: ModelTransportReport = { timedOut: false };
    const modelFetch = createModelFetch({ signal: new AbortController().signal, idleTimeoutMs, report });
    const response = await modelFetch(`${fake.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "qwen3", messages: [], stream: true }) });
    const reader = response.body!.getReader();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      await new Promise((resolve) => setTimeout(resolve, idleTimeoutMs * 1.3));
    }
    expect(report.timedOut).toBe(false);
    expect(text).toContain('"done":true');
  });

  it("a stop that comes after the whole answer arrived but before it was read ends the reading at once", async () => {
    // Node's fetch leaves a read pending forever when the request is aborted after
    // the body arrived; the run's model client must not hang on it.
    fake.enqueue({ kind: "text", tokens: splitTokens("one two three four five six seven eight"), delayMs: 10 });
    const run = new AbortController();
    const modelFetch = createModelFetch({ signal: run.signal, idleTimeoutMs: 60_000, report: { timedOut: false } });
    const response = await modelFetch(`${fake.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "qwen3", messages: [], stream: true }) });
    const reader = response.body!.getReader();
    await reader.read();
    await new Promise((resolve) => setTimeout(resolve, 500)); // the rest of the body arrives meanwhile, unread
    run.abort(new Error("the run was cancelled"));
    const readToEnd = async () => {
      try {
        while (!(await reader.read()).done);
        return "read to the end";
      } catch (error) {
        return (error as Error).message;
      }
    };
    const outcome = await Promise.race([readToEnd(), new Promise((resolve) => setTimeout(() => resolve("read still pending"), 5_000))]);
    expect(outcome).toBe("the run was cancelled");
  });

  it("an endless tools loop: RECURSION_LIMIT", async () => {
    const before = fake.requests.length;
    const { runId, conversationId } = await startOn(app.url, "please loop forever");
    const run = await waitForRun(app.url, runId);
    expect(run).toMatchObject({ status: "FAILED", errorCode: "RECURSION_LIMIT" });
    expect(run.errorMessage).toMatch(/recursion limit/i);
    // agent and tools alternate: the limit bounds the model calls.
    const calls = fake.requests.length - before;
    expect(calls).toBeGreaterThan(1);
    expect(calls).toBeLessThanOrEqual(RECURSION_LIMIT);
    const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
    expect(conversation.next).not.toEqual([]);
  });

  it("after all of that the server is healthy and serves the next run", async () => {
    expect((await fetch(`${app.url}/health`)).status).toBe(200);
    expect(((await (await fetch(`${app.url}/ready`)).json()) as { ready: boolean }).ready).toBe(true);
    const { runId, conversationId } = await startOn(app.url, "Please calculate (2 + 3) * 4");
    expect((await waitForRun(app.url, runId)).status).toBe("COMPLETED");
    const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
    expect(conversation.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "The result is 20." });
    expect(app.services.runs.activeRunIds).toEqual([]);
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
  });
});
