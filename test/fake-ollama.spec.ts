// Proves the fake Ollama server against the real ChatOllama client over HTTP,
// so tests built on the fake exercise the same code paths as production.
import { describe, it, expect, beforeEach, afterEach, vi } from "vitest";
import { ChatOllama } from "@langchain/ollama";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import {
  clockSkew,
  defaultResponder,
  expectedUsage,
  holdKey,
  parsePlan,
  planMessage,
  planResponder,
  releaseStreams,
  splitTokens,
  startFakeOllama,
  waitForHeld,
  type FakeOllama,
} from "../testkit/fake-ollama.ts";
import { nowMs, readStamps, type TokenStamp } from "../testkit/clock.ts";
import { startFakeOllamaProcess } from "../testkit/processes.ts";
import { PROCESS_TEST_TIMEOUT_MS } from "../testkit/app.ts";

const calculator = tool(async ({ expression }) => expression, {
  name: "calculator",
  description: "Evaluates an arithmetic expression.",
  schema: z.object({ expression: z.string() }),
});

let fake: FakeOllama;
beforeEach(async () => {
  fake = await startFakeOllama();
});
afterEach(async () => {
  await fake.close();
});

const chat = (model = "qwen3") => new ChatOllama({ baseUrl: fake.url, model });

/** A ChatOllama whose HTTP requests follow `signal`; the client alone never aborts a pending fetch. */
const abortableChat = (signal: AbortSignal) =>
  new ChatOllama({
    baseUrl: fake.url,
    model: "qwen3",
    fetch: (input, init) => fetch(input, { ...init, signal: AbortSignal.any(init?.signal ? [signal, init.signal] : [signal]) }),
  });

describe("fake Ollama with the real ChatOllama client", () => {
  it("streams text tokens in order and records the request", async () => {
    fake.enqueue({ kind: "text", tokens: ["Hel", "lo", " world"], delayMs: 2 });
    const pieces: string[] = [];
    for await (const chunk of await chat().stream([new SystemMessage("Be brief."), new HumanMessage("hi")])) {
      if (typeof chunk.content === "string" && chunk.content) pieces.push(chunk.content);
    }
    expect(pieces).toEqual(["Hel", "lo", " world"]);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.body.stream).toBe(true);
    expect(fake.requests[0]?.messages.map((m) => [m.role, m.content])).toEqual([
      ["system", "Be brief."],
      ["user", "hi"],
    ]);
    expect(fake.openChatRequests()).toBe(0);
    expect(fake.closedChatRequests()).toBe(1);
  });

  it("answers with an echo by default, including usage metadata", async () => {
    const reply = await chat("qwen3:latest").invoke("hello there");
    expect(reply.content).toBe("Echo: hello there");
    expect(reply.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(reply.response_metadata.done_reason).toBe("stop");
  });

  it("reports counts and durations that follow from the request and the plan, in Ollama's units", async () => {
    fake.enqueue(
      { kind: "text", tokens: ["Hel", "lo", " world"], delayMs: 2 },
      { kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "1 + 2" } }] },
    );
    const reply = await chat().invoke([new SystemMessage("Be brief."), new HumanMessage("hi")]);
    // 3 prompt words; 3 tokens after 2 + 2 + 2 ms and a last 2 ms: 1.25 + 3 × 0.3 + 8 + 3 × 12.5 ms.
    expect(reply.usage_metadata).toMatchObject({ input_tokens: 3, output_tokens: 3 });
    expect(reply.response_metadata).toMatchObject({
      load_duration: 1_250_000,
      prompt_eval_duration: 900_000,
      eval_duration: 45_500_000,
      total_duration: 47_650_000,
    });
    expect(fake.requests[0]!.reported).toEqual({
      promptEvalCount: 3,
      evalCount: 3,
      loadDurationNs: 1_250_000,
      promptEvalDurationNs: 900_000,
      evalDurationNs: 45_500_000,
      totalDurationNs: 47_650_000,
    });
    // A tool call is one output token; no delays: 1.25 + 3 × 0.3 + 12.5 ms.
    const call = await chat()
      .bindTools([calculator])
      .invoke([new HumanMessage("Please calculate 1+2")]);
    expect(call.usage_metadata).toMatchObject({ input_tokens: 3, output_tokens: 1 });
    expect(call.response_metadata.total_duration).toBe(14_650_000);
    // 62.3 ms in all: summed, then rounded (rounding each call first would say 63).
    expect(expectedUsage(fake.requests)).toEqual({ inputTokens: 6, outputTokens: 4, modelCalls: 2, modelDurationMs: 62 });
  });

  it("reports nothing for a call that did not finish", async () => {
    fake.enqueue({ kind: "errorLine", tokens: ["Half "], error: "broke" }, { kind: "dropMidStream", tokens: ["Cut "] });
    await expect(chat().invoke("one")).rejects.toThrow("broke");
    await expect(chat().invoke("two")).rejects.toThrow();
    expect(fake.requests.map((r) => r.reported)).toEqual([undefined, undefined]);
    expect(expectedUsage(fake.requests)).toEqual({ inputTokens: 0, outputTokens: 0, modelCalls: 0, modelDurationMs: 0 });
  });

  it("parses tool calls and finishes the calculator round trip", async () => {
    const model = chat().bindTools([calculator]);
    const first = await model.invoke([new HumanMessage("Please calculate 17 * 3?")]);
    expect(first.tool_calls).toMatchObject([{ name: "calculator", args: { expression: "17 * 3" } }]);
    expect(fake.requests[0]?.tools).toMatchObject([{ function: { name: "calculator" } }]);

    const call = first.tool_calls?.[0];
    const second = await model.invoke([
      new HumanMessage("Please calculate 17 * 3?"),
      new AIMessage({ content: "", tool_calls: first.tool_calls }),
      new ToolMessage({ content: "51", tool_call_id: call?.id ?? "" }),
    ]);
    expect(second.content).toBe("The result is 51.");
    expect(fake.requests[1]?.messages.at(-2)?.tool_calls).toHaveLength(1);
  });

  it("rejects an unknown model with Ollama's 404 message", async () => {
    await expect(chat("missing").invoke("hi")).rejects.toThrow('model "missing" not found');
    fake.enqueue({ kind: "notFound" });
    await expect(chat().invoke("hi")).rejects.toThrow(/not found/);
  });

  it("rejects with the HTTP error body", async () => {
    fake.enqueue({ kind: "httpError", status: 500, error: "llama runner process has terminated" });
    await expect(chat().invoke("hi")).rejects.toThrow("llama runner process has terminated");
  });

  it("rejects with the text of an error line in the stream", async () => {
    fake.enqueue({ kind: "errorLine", tokens: ["par", "tial"], error: "out of memory" });
    await expect(chat().invoke("hi")).rejects.toThrow("out of memory");
  });

  it("rejects when the connection drops mid-stream", async () => {
    fake.enqueue({ kind: "dropMidStream", tokens: ["a ", "b"] });
    await expect(chat().invoke("hi")).rejects.toThrow(/terminated|other side closed|socket/i);
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
  });

  it("aborts a request still waiting for headers and closes the connection", async () => {
    fake.enqueue({ kind: "hangBeforeHeaders" });
    const controller = new AbortController();
    const started = Date.now();
    const pending = abortableChat(controller.signal).invoke("hi", { signal: controller.signal });
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(1));
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    expect(Date.now() - started).toBeLessThan(1000);
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
    expect(fake.closedChatRequests()).toBe(1);
  });

  it("shows that ChatOllama alone leaves the HTTP request open on abort", async () => {
    // Guards the reason a signal-carrying fetch is needed: if this starts failing,
    // the client has learned to abort by itself.
    fake.enqueue({ kind: "hangBeforeHeaders" });
    const controller = new AbortController();
    const pending = chat().invoke("hi", { signal: controller.signal });
    pending.catch(() => {}); // settled only when the server closes below
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(1));
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(fake.openChatRequests()).toBe(1);
  });

  it("aborts a silent stream after its first tokens", async () => {
    fake.enqueue({ kind: "silence", tokens: ["still ", "thinking"] });
    const controller = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const chunk of await abortableChat(controller.signal).stream("hi", { signal: controller.signal })) {
        if (typeof chunk.content === "string" && chunk.content) seen.push(chunk.content);
        if (seen.length === 2) controller.abort();
      }
    })();
    await expect(run).rejects.toThrow(/abort/i);
    expect(seen).toEqual(["still ", "thinking"]);
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
  });

  it("serves /, /api/tags, /api/show and /api/version like Ollama", async () => {
    expect(await (await fetch(fake.url)).text()).toBe("Ollama is running");
    const tags = (await (await fetch(`${fake.url}/api/tags`)).json()) as { models: { name: string; model: string }[] };
    expect(tags.models.map((m) => m.name)).toEqual(["qwen3:latest"]);
    const show = (model: string) => fetch(`${fake.url}/api/show`, { method: "POST", body: JSON.stringify({ model }) });
    const shown = await show("qwen3");
    expect(shown.status).toBe(200);
    expect(await shown.json()).toMatchObject({ capabilities: ["completion", "tools"] });
    expect((await show("other")).status).toBe(404);
    expect(await (await fetch(`${fake.url}/api/version`)).json()).toEqual({ version: "0.0.0-fake" });
    expect((await fetch(`${fake.url}/api/nope`)).status).toBe(404);
  });

  it("answers a request that does not stream with one JSON object once the step is over, as Ollama does", async () => {
    const ask = (content: string) =>
      fetch(`${fake.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "qwen3", stream: false, messages: [{ role: "user", content }] }) });
    fake.enqueue(
      { kind: "text", tokens: ["Hel", "lo", " world"], delayMs: 20 },
      { kind: "toolCalls", text: ["Let me see. "], calls: [{ name: "calculator", args: { expression: "1 + 2" } }] },
      { kind: "errorLine", tokens: ["Half "], error: "out of memory" },
    );
    const asked = nowMs();
    const text = await ask("hi there");
    expect(text.status).toBe(200);
    expect(text.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await text.json()) as Record<string, unknown>;
    // The answer comes after its delays, all at once: three tokens and a last wait of 20 ms each.
    expect(nowMs() - asked).toBeGreaterThanOrEqual(79);
    expect(body).toMatchObject({
      model: "qwen3",
      message: { role: "assistant", content: "Hello world" },
      done: true,
      done_reason: "stop",
      prompt_eval_count: 2,
      eval_count: 3,
    });
    expect(body.message).not.toHaveProperty("tool_calls");
    expect(fake.requests[0]!.reported).toMatchObject({ promptEvalCount: 2, evalCount: 3 });

    expect(await (await ask("calculate 1+2")).json()).toMatchObject({
      message: { content: "Let me see. ", tool_calls: [{ function: { name: "calculator", arguments: { expression: "1 + 2" } } }] },
      done: true,
      eval_count: 2,
    });

    const failed = await ask("hi");
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ error: "out of memory" });
    expect(fake.requests[2]!.reported).toBeUndefined();
    expect(fake.openChatRequests()).toBe(0);
  });

  it("reads its clock at /bench/clock: the same clock as this process's, so the skew is within half a round trip", async () => {
    const before = nowMs();
    const { now } = (await (await fetch(`${fake.url}/bench/clock`)).json()) as { now: number };
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(nowMs());
    const { skewMs, rttMs } = await clockSkew(fake.url, 5);
    expect(rttMs).toBeGreaterThan(0);
    expect(Math.abs(skewMs)).toBeLessThanOrEqual(rttMs / 2);
  });

  it("closes even with hanging requests", async () => {
    fake.enqueue({ kind: "hangBeforeHeaders" }, { kind: "silence" });
    const a = chat()
      .invoke("a")
      .catch((error: unknown) => error);
    const b = chat()
      .invoke("b")
      .catch((error: unknown) => error);
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(2));
    await fake.close();
    expect(await a).toBeInstanceOf(Error);
    expect(await b).toBeInstanceOf(Error);
    expect(fake.openChatRequests()).toBe(0);
  });
});

describe("defaultResponder", () => {
  const offered = [{ type: "function", function: { name: "calculator" } }];
  const request = (messages: { role: string; content: string }[], tools: unknown[] = offered) => ({
    model: "qwen3",
    messages,
    tools,
    body: {},
  });

  it("splits text into tokens that join back exactly", () => {
    const tokens = splitTokens("  The result  is 51.\n");
    expect(tokens.join("")).toBe("  The result  is 51.\n");
    expect(tokens.length).toBeGreaterThan(2);
  });

  it("keeps calling the calculator for 'loop forever', even after a tool result", async () => {
    const step = await defaultResponder(
      request([
        { role: "user", content: "loop forever please" },
        { role: "assistant", content: "" },
        { role: "tool", content: "2" },
      ]),
    );
    expect(step).toEqual({ kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "1+1" } }] });
  });

  it("only calls the calculator when it is offered", async () => {
    const step = await defaultResponder(request([{ role: "user", content: "calculate 2+2." }], []));
    expect(step).toEqual({ kind: "text", tokens: ["Echo: ", "calculate ", "2+2."] });
  });
});

describe("stamped streams, as the benchmark plans them", () => {
  /** POSTs a chat request over plain HTTP; resolves once the response's headers arrive. */
  const post = (message: string, signal?: AbortSignal) =>
    fetch(`${fake.url}/api/chat`, {
      method: "POST",
      signal,
      body: JSON.stringify({ model: "qwen3", stream: true, messages: [{ role: "user", content: message }] }),
    });

  /** Reads an NDJSON body to its end: the stamps in order, and whether the done line came. */
  async function read(response: Response, onStamp: (stamp: TokenStamp) => void = () => {}): Promise<{ stamps: TokenStamp[]; done: boolean }> {
    const stamps: TokenStamp[] = [];
    let done = false;
    let pending = "";
    const decoder = new TextDecoder();
    const reader = response.body!.getReader();
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      pending += decoder.decode(value, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines.filter(Boolean)) {
        const chunk = JSON.parse(line) as { message: { content: string }; done?: boolean };
        if (chunk.done) done = true;
        for (const stamp of readStamps(chunk.message.content)) {
          stamps.push(stamp);
          onStamp(stamp);
        }
      }
    }
    return { stamps, done };
  }

  const heldCount = async (key: string) => ((await (await fetch(`${fake.url}/bench/held?key=${encodeURIComponent(key)}`)).json()) as { held: number }).held;
  const indexes = (n: number) => Array.from({ length: n }, (_, i) => i);

  beforeEach(() => {
    fake.setResponder(planResponder());
  });

  it("stamps each token with its send time, on an absolute schedule that a stall does not push back", async () => {
    const plan = { tokens: 20, intervalMs: 20, firstDelayMs: 40 };
    const { stamps, done } = await read(await post(planMessage(plan)), (stamp) => {
      // Stalls this process, the fake's timers with it, for longer than the rest of the stream.
      if (stamp.index === 2) for (const end = nowMs() + 400; nowMs() < end;);
    });
    expect(done).toBe(true);
    expect(stamps.map((s) => s.index)).toEqual(indexes(plan.tokens));
    const { requestAt } = stamps[0]!;
    expect(stamps.every((s) => s.requestAt === requestAt)).toBe(true);
    // Never early: token i leaves no sooner than firstDelayMs + i × intervalMs after the request (1 ms for timer rounding).
    for (const s of stamps) expect(s.sentAt).toBeGreaterThanOrEqual(requestAt + plan.firstDelayMs + s.index * plan.intervalMs - 1);
    // Overdue tokens go at once and the last keeps its time (420 ms); a schedule counted from each previous token would end after 800 ms.
    expect(stamps.at(-1)!.sentAt - requestAt).toBeLessThan(620);
  });

  it("holds streams after their headers until their key is released over HTTP, and counts them at /bench/held", async () => {
    const key = holdKey("spec");
    const plan = { tokens: 3, intervalMs: 0, firstDelayMs: 30, hold: key };
    // fetch resolves on the headers, which a held stream has already sent.
    const first = await post(planMessage(plan));
    const second = await post(planMessage(plan));
    expect([first.status, second.status]).toEqual([200, 200]);
    await waitForHeld(fake.url, key, 2, 5_000);
    expect(await heldCount(key)).toBe(2);
    expect(await heldCount(holdKey("spec"))).toBe(0);

    const reading = [read(first), read(second)];
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(fake.closedChatRequests()).toBe(0);
    const releasedAt = nowMs();
    await releaseStreams(fake.url, key);
    for (const { stamps, done } of await Promise.all(reading)) {
      expect(done).toBe(true);
      expect(stamps.map((s) => s.index)).toEqual(indexes(3));
      // The first token's delay counts from the release, not from the request.
      expect(stamps[0]!.sentAt).toBeGreaterThanOrEqual(releasedAt + plan.firstDelayMs - 1);
    }
    expect(await heldCount(key)).toBe(0);

    // A released key holds no later stream.
    const late = await read(await post(planMessage(plan)));
    expect(late.stamps.map((s) => s.index)).toEqual(indexes(3));
  });

  it("stops counting a held stream whose client has gone", async () => {
    const key = holdKey("gone");
    const controller = new AbortController();
    await post(planMessage({ tokens: 1, intervalMs: 0, hold: key }), controller.signal);
    await waitForHeld(fake.url, key, 1, 5_000);
    controller.abort();
    await vi.waitFor(async () => expect(await heldCount(key)).toBe(0));
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
  });

  it("reads plans only from a bench message in the last user turn; anything else goes to the fallback", async () => {
    expect(parsePlan(planMessage({ tokens: 7, intervalMs: 3 }))).toEqual({ tokens: 7, intervalMs: 3, firstDelayMs: 0, hold: undefined });
    expect(parsePlan("bench {}")).toEqual({ tokens: 5, intervalMs: 0, firstDelayMs: 0, hold: undefined });
    expect(parsePlan("hello bench {}")).toBeNull();
    expect(await chat().invoke("hello there")).toMatchObject({ content: "Echo: hello there" });
    const reply = await chat().invoke([new HumanMessage(planMessage({ tokens: 2, intervalMs: 0 })), new AIMessage("ok"), new HumanMessage("and now?")]);
    expect(reply.content).toBe("Echo: and now?");
  });

  it("answers a plan asked without streaming once its last token is due, every token stamped on the schedule", async () => {
    const plan = { tokens: 4, intervalMs: 15, firstDelayMs: 15 };
    const response = await fetch(`${fake.url}/api/chat`, {
      method: "POST",
      body: JSON.stringify({ model: "qwen3", stream: false, messages: [{ role: "user", content: planMessage(plan) }] }),
    });
    const received = nowMs();
    const body = (await response.json()) as { message: { content: string }; done: boolean; eval_count: number };
    expect(body).toMatchObject({ done: true, eval_count: 4 });
    const stamps = readStamps(body.message.content);
    expect(stamps.map((s) => s.index)).toEqual(indexes(4));
    // Node's timers may fire a little before their time on a busy machine: 2 ms of slack.
    for (const s of stamps) expect(s.sentAt).toBeGreaterThanOrEqual(s.requestAt + plan.firstDelayMs + s.index * plan.intervalMs - 2);
    expect(received).toBeGreaterThanOrEqual(stamps.at(-1)!.sentAt);
  });

  it("keeps no requests when told not to", async () => {
    const quiet = await startFakeOllama({ responder: planResponder(), keepRequests: false });
    try {
      const reply = await new ChatOllama({ baseUrl: quiet.url, model: "qwen3" }).invoke(planMessage({ tokens: 2, intervalMs: 0 }));
      expect(readStamps(reply.content as string).map((s) => s.index)).toEqual([0, 1]);
      expect(quiet.requests).toEqual([]);
    } finally {
      await quiet.close();
    }
  });
});

describe("in a process of its own (fake-ollama-main.ts)", () => {
  it(
    "prints its url, streams the plan in a message, and exits cleanly on SIGTERM",
    async () => {
      const proc = await startFakeOllamaProcess();
      try {
        expect(proc.output()).toMatch(/^\{"url":"http:\/\/127\.0\.0\.1:\d+"\}\n/);
        const reply = await new ChatOllama({ baseUrl: proc.url, model: "qwen3" }).invoke(planMessage({ tokens: 3, intervalMs: 1 }));
        expect(readStamps(reply.content as string).map((s) => s.index)).toEqual([0, 1, 2]);
      } finally {
        expect(await proc.stop()).toBe(0);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "serves OLLAMA_MODEL beside qwen3, as the processes it serves inherit it",
    async () => {
      const proc = await startFakeOllamaProcess({ env: { OLLAMA_MODEL: "llama3.2" } });
      try {
        const tags = (await (await fetch(`${proc.url}/api/tags`)).json()) as { models: { name: string }[] };
        expect(tags.models.map((m) => m.name)).toEqual(["qwen3:latest", "llama3.2:latest"]);
        const reply = await new ChatOllama({ baseUrl: proc.url, model: "llama3.2" }).invoke(planMessage({ tokens: 2, intervalMs: 1 }));
        expect(readStamps(reply.content as string).map((s) => s.index)).toEqual([0, 1]);
      } finally {
        expect(await proc.stop()).toBe(0);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
