// Proves the fake Ollama server against the real ChatOllama client over HTTP,
// so tests built on the fake exercise the same code paths as production.
import { describe, it, expect, beforeEach, afterEach, vi } from "vitest";
import { ChatOllama } from "@langchain/ollama";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { defaultResponder, splitTokens, startFakeOllama, type FakeOllama } from "./support/fake-ollama.ts";

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

  it("serves /, /api/tags and /api/show like Ollama", async () => {
    expect(await (await fetch(fake.url)).text()).toBe("Ollama is running");
    const tags = (await (await fetch(`${fake.url}/api/tags`)).json()) as { models: { name: string; model: string }[] };
    expect(tags.models.map((m) => m.name)).toEqual(["qwen3:latest"]);
    const show = (model: string) => fetch(`${fake.url}/api/show`, { method: "POST", body: JSON.stringify({ model }) });
    expect((await show("qwen3")).status).toBe(200);
    expect((await show("other")).status).toBe(404);
    expect((await fetch(`${fake.url}/api/nope`)).status).toBe(404);
  });

  it("closes even with hanging requests", async () => {
    fake.enqueue({ kind: "hangBeforeHeaders" }, { kind: "silence" });
    const a = chat().invoke("a").catch((error: unknown) => error);
    const b = chat().invoke("b").catch((error: unknown) => error);
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
