// A fake Ollama server speaking the real HTTP protocol (NDJSON streaming on
// /api/chat), so the real @langchain/ollama client can be tested end to end
// without a model: real sockets, real aborts, real broken connections.
//
// The benchmark runs the same server in a process of its own
// (fake-ollama-main.ts) and steers each run through runledger's real API with
// the run's message, `bench {"tokens":100,"intervalMs":20,...}` (planResponder),
// with no side channel. Those streams are stamped: each token carries its send
// time on the shared clock (clock.ts), so latency is read off the token itself.
// A stream can be held until the harness releases its key over HTTP, so that
// subscribers attach first and no measured token arrives through replay, and
// GET /bench/clock reads the fake's clock, so a client in another process can
// check that it reads the same one.
//
// A request with "stream": false gets its whole answer as one JSON object once
// the step has run its course, as Ollama answers one.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { nowMs, stampToken } from "./clock.ts";

export type FakeStep =
  | { kind: "text"; tokens: string[]; delayMs?: number; firstDelayMs?: number } // stream tokens then done
  | { kind: "toolCalls"; calls: { name: string; args: Record<string, unknown> }[]; delayMs?: number; text?: string[] } // optional text tokens first, then one chunk with tool_calls, then done
  | { kind: "notFound" } // HTTP 404 model not found
  | { kind: "httpError"; status: number; error: string } // HTTP status with {"error": ...} body
  | { kind: "errorLine"; tokens?: string[]; error: string; delayMs?: number } // some tokens, then {"error": ...} line, then end the response
  | { kind: "dropMidStream"; tokens?: string[]; delayMs?: number } // some tokens then destroy the socket abruptly
  | { kind: "silence"; tokens?: string[] } // headers (and optional tokens), then nothing more until aborted or closed
  | { kind: "hangBeforeHeaders" } // never send headers (until aborted/closed)
  | { kind: "trickle"; tokens: string[]; delayMs: number; hold?: string } // like text but with a slow delay between tokens; `hold`: after its headers, until the key is released
  | ({ kind: "stamped" } & StreamPlan); // plan.tokens stamped tokens on an absolute schedule (clock.ts), once the hold is released

/** How a stamped stream goes: what a `bench {...}` message asks for. */
export interface StreamPlan {
  /** Tokens to stream. */
  tokens: number;
  /** Spacing between tokens; the schedule is absolute, so timer jitter does not accumulate. */
  intervalMs: number;
  /** Delay before the first token, counted from the request (or from the release of a held stream). */
  firstDelayMs?: number;
  /** Hold the stream, after its headers, until POST /bench/release {"key": ...} names this key. */
  hold?: string;
}

export type FakeResponder = (request: FakeChatRequest) => FakeStep | Promise<FakeStep>;

export interface FakeChatRequest {
  model: string;
  messages: { role: string; content: string; tool_calls?: unknown[]; tool_name?: string }[];
  tools: unknown[];
  think?: unknown;
  body: any;
  /** What the last line of the answer reported; absent when the call did not finish (an error, a drop, an abort). */
  reported?: FakeReport;
}

/**
 * What Ollama reports in the last line of an answer, and the fake too: counts
 * and nanoseconds. The fake's numbers follow from the request and the plan: a
 * prompt token per word of the messages sent, an output token per token (or
 * tool call) streamed, and durations at a small model's pace on top of the
 * delays the plan waits, so they are realistic, never whole milliseconds, and
 * known exactly to a spec.
 */
export interface FakeReport {
  promptEvalCount: number;
  evalCount: number;
  loadDurationNs: number;
  promptEvalDurationNs: number;
  evalDurationNs: number;
  totalDurationNs: number;
}

/** The model is already loaded: a little over a millisecond. */
export const FAKE_LOAD_NS = 1_250_000;
/** Reading the prompt: about 3,300 tokens a second. */
export const FAKE_PROMPT_NS_PER_TOKEN = 300_000;
/** Writing the answer: 80 tokens a second, besides the plan's own delays. */
export const FAKE_EVAL_NS_PER_TOKEN = 12_500_000;

/** The fake's prompt size: one token per word of every message it was sent. */
export function promptTokens(request: Pick<FakeChatRequest, "messages">): number {
  return request.messages.reduce((sum, m) => sum + splitTokens(m.content).filter((t) => t.trim()).length, 0);
}

/** The report for a call with this prompt, this many output tokens and these planned delays. */
export function fakeReport(promptEvalCount: number, evalCount: number, plannedMs: number): FakeReport {
  const loadDurationNs = FAKE_LOAD_NS;
  const promptEvalDurationNs = promptEvalCount * FAKE_PROMPT_NS_PER_TOKEN;
  const evalDurationNs = Math.round(plannedMs * 1e6) + evalCount * FAKE_EVAL_NS_PER_TOKEN;
  return {
    promptEvalCount,
    evalCount,
    loadDurationNs,
    promptEvalDurationNs,
    evalDurationNs,
    totalDurationNs: loadDurationNs + promptEvalDurationNs + evalDurationNs,
  };
}

/**
 * The usage runledger must record for these calls (those that finished): the
 * counts summed, and the nanoseconds summed before they are rounded to
 * milliseconds.
 */
export function expectedUsage(requests: readonly FakeChatRequest[]): {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  modelDurationMs: number;
} {
  const reports = requests.flatMap((r) => (r.reported ? [r.reported] : []));
  const sum = (pick: (r: FakeReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
  return {
    inputTokens: sum((r) => r.promptEvalCount),
    outputTokens: sum((r) => r.evalCount),
    modelCalls: reports.length,
    modelDurationMs: Math.round(sum((r) => r.totalDurationNs) / 1e6),
  };
}

export interface FakeOllama {
  url: string; // e.g. http://127.0.0.1:12345
  port: number;
  requests: FakeChatRequest[]; // every /api/chat request received, in order (none with keepRequests: false)
  /** Active /api/chat connections that have not finished (for checking that aborts really close the HTTP request). */
  openChatRequests(): number;
  /** Count of /api/chat requests whose response has closed so far (finished or aborted). */
  closedChatRequests(): number;
  /**
   * Count of /api/chat requests received whose last message is `text` (counted
   * from `requests`, so none with keepRequests: false). A run is
   * RUNNING before it asks the model: a test that queued a step for that run
   * waits for this before it starts another, or the other could take the step.
   */
  asked(text: string): number;
  setResponder(responder: FakeResponder): void;
  /** Queue steps used in order for the next requests; when the queue is empty the default responder answers. */
  enqueue(...steps: FakeStep[]): void;
  /** With `parallel`: the most chats served at once so far, how many waited in the fake's queue, and how many were answered 503. */
  capacity(): { peakServing: number; queued: number; busy: number };
  close(): Promise<void>; // closes the server and destroys all sockets (including hanging ones)
}

export interface FakeOllamaOptions {
  port?: number;
  models?: string[] /* default ["qwen3"] */;
  responder?: FakeResponder;
  defaultDelayMs?: number /* default 0 */;
  /** Record every request in `requests` (default true); a fake serving a whole benchmark has no reader for them. */
  keepRequests?: boolean;
  /** How long an idle connection stays open (Node's default is 5 s): longer keeps a client's pooled connection between a benchmark's phases, so no measured request pays for a new one. */
  keepAliveTimeoutMs?: number;
  /**
   * Chats served at once, as Ollama's OLLAMA_NUM_PARALLEL: a chat beyond them
   * waits in the fake's own queue and is sent nothing, not even headers, until
   * one ends (as Ollama holds it). Default: no limit.
   */
  parallel?: number;
  /** With `parallel`: chats that may wait, as OLLAMA_MAX_QUEUE; one more is answered 503 "server busy" at once. Default: no limit. */
  maxQueue?: number;
}

/** Splits text into word-ish tokens (word plus its trailing spaces) that join back to the exact text. */
export function splitTokens(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

function hasTool(request: FakeChatRequest, name: string): boolean {
  return request.tools.some((t) => (t as { function?: { name?: unknown } } | null)?.function?.name === name);
}

/** The default responder: deterministic and useful for an agent loop. */
export const defaultResponder: FakeResponder = (request) => {
  const last = request.messages.at(-1);
  const lastUser = request.messages.findLast((m) => m.role === "user");
  const userText = lastUser?.content ?? "";
  const calculator = hasTool(request, "calculator");

  // Checked before the tool-result rule: the conversation ends with a tool
  // message on every round after the first, and this one must never stop.
  if (calculator && userText.includes("loop forever")) {
    return { kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "1+1" } }] };
  }
  if (last?.role === "tool") {
    return { kind: "text", tokens: splitTokens(`The result is ${last.content}.`) };
  }
  const match = /\bcalculate\b\s*(.*)/is.exec(userText);
  if (calculator && match) {
    const expression = (match[1] ?? "")
      .trim()
      .replace(/[?.]+$/, "")
      .trim();
    if (expression) return { kind: "toolCalls", calls: [{ name: "calculator", args: { expression } }] };
  }
  return { kind: "text", tokens: splitTokens(`Echo: ${userText}`) };
};

/** The user message that makes planResponder stream this plan. */
export function planMessage(plan: StreamPlan): string {
  return `bench ${JSON.stringify(plan)}`;
}

/** The plan in a planMessage, or null for any other text. */
export function parsePlan(text: string): StreamPlan | null {
  const m = /^bench (\{.*\})\s*$/s.exec(text.trim());
  if (!m) return null;
  const plan = JSON.parse(m[1]!) as Partial<StreamPlan>;
  return { tokens: plan.tokens ?? 5, intervalMs: plan.intervalMs ?? 0, firstDelayMs: plan.firstDelayMs ?? 0, hold: plan.hold };
}

/** Streams the plan in the last user message (planMessage) as stamped tokens; any other request goes to `fallback`. */
export function planResponder(fallback: FakeResponder = defaultResponder): FakeResponder {
  return (request) => {
    const plan = parsePlan(request.messages.findLast((m) => m.role === "user")?.content ?? "");
    return plan ? { kind: "stamped", ...plan } : fallback(request);
  };
}

/** A hold key no other stream has used: a fake outlives the scenarios that use it and remembers released keys. */
export function holdKey(name: string): string {
  return `${name}-${randomUUID().slice(0, 8)}`;
}

/**
 * Waits until `count` streams hold on this key: every run has done its set-up
 * (run row, graph, first checkpoint, model request), so what is measured after
 * the release is the streaming alone.
 */
export async function waitForHeld(fakeUrl: string, key: string, count: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${fakeUrl}/bench/held?key=${encodeURIComponent(key)}`);
    const { held } = (await response.json()) as { held: number };
    if (held >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${held} of ${count} model requests arrived for ${key}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Lets the streams held on this key start, and any later one with it start at once. */
export async function releaseStreams(fakeUrl: string, key: string): Promise<void> {
  const response = await fetch(`${fakeUrl}/bench/release`, { method: "POST", body: JSON.stringify({ key }) });
  if (!response.ok) throw new Error(`release failed: ${response.status}`);
  await response.arrayBuffer();
}

/**
 * The fake's clock (GET /bench/clock) against this process's, read midway
 * through the shortest of `tries` round trips: within half a round trip of
 * zero when both read the shared clock (clock.ts), as processes on one machine do.
 */
export async function clockSkew(fakeUrl: string, tries = 20): Promise<{ skewMs: number; rttMs: number }> {
  let best = { skewMs: NaN, rttMs: Infinity };
  for (let i = 0; i < tries; i++) {
    const before = nowMs();
    const response = await fetch(`${fakeUrl}/bench/clock`);
    const { now } = (await response.json()) as { now: number };
    const after = nowMs();
    if (after - before < best.rttMs) best = { skewMs: now - (before + after) / 2, rttMs: after - before };
  }
  return best;
}

/** "qwen3" and "qwen3:latest" name the same model, as in Ollama. */
function fullName(model: string): string {
  return model.includes(":") ? model : `${model}:latest`;
}

function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  // The Ollama client only parses an error body as JSON when the content type says so.
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(value));
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Waits until the shared clock reads `at`, or less if the response closes first, so no timer outlives an aborted request. */
async function until(res: http.ServerResponse, at: number): Promise<void> {
  // A timer counts from the event loop's cached time, which lags the clock after
  // a busy stretch, so it can fire early: wait again until the clock says so.
  for (let wait = at - nowMs(); wait > 0 && !res.destroyed; wait = at - nowMs()) {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        res.off("close", done);
        resolve();
      };
      const timer = setTimeout(done, Math.ceil(wait));
      res.once("close", done);
    });
  }
}

function pause(res: http.ServerResponse, ms: number): Promise<void> {
  return until(res, nowMs() + ms);
}

/** Resolves once everything written so far has been handed to the socket. */
function flushed(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.write("", () => resolve());
    res.once("close", () => resolve());
  });
}

export async function startFakeOllama(options: FakeOllamaOptions = {}): Promise<FakeOllama> {
  const models = (options.models ?? ["qwen3"]).map(fullName);
  const defaultDelayMs = options.defaultDelayMs ?? 0;
  let responder = options.responder ?? defaultResponder;
  const queue: FakeStep[] = [];
  const requests: FakeChatRequest[] = [];
  let open = 0;
  let closed = 0;
  let onAllClosed: (() => void) | undefined;
  const keepRequests = options.keepRequests ?? true;
  // Held streams by key, each one's resume; and the keys already released, so a late request does not wait for ever.
  const holders = new Map<string, Set<() => void>>();
  const released = new Set<string>();

  /** Resolves when the key is released or the response closes (a closed one no longer counts as held). */
  function held(key: string | undefined, res: http.ServerResponse): Promise<void> {
    if (key === undefined || released.has(key) || res.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const waiting = holders.get(key) ?? new Set<() => void>();
      holders.set(key, waiting);
      const resume = () => {
        waiting.delete(resume);
        if (waiting.size === 0) holders.delete(key);
        res.off("close", resume);
        resolve();
      };
      waiting.add(resume);
      res.once("close", resume);
    });
  }
  // Ollama's parallel slots and its queue (options.parallel, options.maxQueue).
  let serving = 0;
  let peakServing = 0;
  let queuedTotal = 0;
  let busyTotal = 0;
  const waitingForSlot: (() => void)[] = [];
  /** Waits for a slot (the response closing gives it back); false when the request was answered 503 or went away while waiting. */
  async function takeSlot(res: http.ServerResponse): Promise<boolean> {
    if (options.parallel === undefined) return true;
    if (serving >= options.parallel) {
      if (options.maxQueue !== undefined && waitingForSlot.length >= options.maxQueue) {
        busyTotal += 1;
        sendJson(res, 503, { error: "server busy, please try again.  maximum pending requests exceeded" });
        return false;
      }
      queuedTotal += 1;
      await new Promise<void>((resolve) => {
        const gone = () => {
          const i = waitingForSlot.indexOf(wake);
          if (i >= 0) waitingForSlot.splice(i, 1);
          resolve();
        };
        const wake = () => {
          res.off("close", gone);
          resolve();
        };
        waitingForSlot.push(wake);
        res.once("close", gone);
      });
      if (res.destroyed) return false;
    }
    serving += 1;
    peakServing = Math.max(peakServing, serving);
    res.once("close", () => {
      serving -= 1;
      waitingForSlot.shift()?.();
    });
    return true;
  }

  function release(key: string): void {
    released.add(key);
    for (const resume of holders.get(key) ?? []) resume();
  }

  const isKnown = (model: unknown) => typeof model === "string" && models.includes(fullName(model));
  const notFound = (res: http.ServerResponse, model: string) => sendJson(res, 404, { error: `model "${model}" not found, try pulling it first` });

  async function streamStep(res: http.ServerResponse, request: FakeChatRequest, step: FakeStep, requestAt: number): Promise<void> {
    const model = request.model;
    const streaming = request.body?.stream !== false;
    // What a request that does not stream gets at the end, gathered from the lines it would have streamed.
    let content = "";
    const toolCalls: unknown[] = [];
    const line = (message: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      if (res.destroyed || res.writableEnded) return;
      if (!streaming) {
        content += typeof message.content === "string" ? message.content : "";
        if (Array.isArray(message.tool_calls)) toolCalls.push(...message.tool_calls);
        if (!extra.done) return;
        return sendJson(res, 200, {
          model,
          created_at: new Date().toISOString(),
          message: { role: "assistant", content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
          ...extra,
        });
      }
      const chunk = { model, created_at: new Date().toISOString(), message: { role: "assistant", content: "", ...message }, ...extra };
      res.write(`${JSON.stringify(chunk)}\n`);
    };
    // The delays the plan asks for, summed as planned (not as measured), for the report.
    let plannedMs = 0;
    const wait = (ms: number) => {
      plannedMs += ms;
      return pause(res, ms);
    };
    const tokens = async (list: string[], delayMs: number, firstDelayMs = delayMs) => {
      for (const [i, token] of list.entries()) {
        await wait(i === 0 ? firstDelayMs : delayMs);
        if (res.destroyed) return;
        line({ content: token });
      }
    };
    let evalCount = 0;
    const done = () => {
      if (res.destroyed || res.writableEnded) return;
      const report = fakeReport(promptTokens(request), evalCount, plannedMs);
      line(
        {},
        {
          done: true,
          done_reason: "stop",
          total_duration: report.totalDurationNs,
          load_duration: report.loadDurationNs,
          prompt_eval_count: report.promptEvalCount,
          prompt_eval_duration: report.promptEvalDurationNs,
          eval_count: report.evalCount,
          eval_duration: report.evalDurationNs,
        },
      );
      request.reported = report;
      if (!res.writableEnded) res.end();
    };
    const startStream = () => {
      if (!streaming) return; // the headers go with the answer
      res.writeHead(200, { "Content-Type": "application/x-ndjson" });
      // Sends the headers now, so "silence" really means headers then nothing.
      res.flushHeaders();
    };

    switch (step.kind) {
      case "notFound":
        return notFound(res, model);
      case "httpError":
        return sendJson(res, step.status, { error: step.error });
      case "hangBeforeHeaders":
        return; // left open until the client aborts or the server closes
      case "text":
      case "trickle": {
        startStream();
        if (step.kind === "trickle") await held(step.hold, res);
        const delayMs = step.delayMs ?? defaultDelayMs;
        await tokens(step.tokens, delayMs, step.kind === "text" ? (step.firstDelayMs ?? delayMs) : delayMs);
        evalCount = step.tokens.length;
        await wait(delayMs);
        return done();
      }
      case "toolCalls": {
        startStream();
        const delayMs = step.delayMs ?? defaultDelayMs;
        await tokens(step.text ?? [], delayMs);
        await wait(delayMs);
        line({ tool_calls: step.calls.map((c) => ({ function: { name: c.name, arguments: c.args } })) });
        evalCount = (step.text?.length ?? 0) + step.calls.length;
        await wait(delayMs);
        return done();
      }
      case "errorLine": {
        startStream();
        const delayMs = step.delayMs ?? defaultDelayMs;
        await tokens(step.tokens ?? [], delayMs);
        await pause(res, delayMs);
        if (res.destroyed) return;
        if (!streaming) return sendJson(res, 500, { error: step.error });
        res.end(`${JSON.stringify({ error: step.error })}\n`);
        return;
      }
      case "dropMidStream": {
        startStream();
        await tokens(step.tokens ?? [], step.delayMs ?? defaultDelayMs);
        // Let the tokens reach the wire first, so the client sees a stream cut short.
        if (streaming) await flushed(res);
        res.socket?.destroy();
        return;
      }
      case "silence":
        startStream();
        for (const token of step.tokens ?? []) line({ content: token });
        return; // never ends on its own
      case "stamped": {
        startStream();
        await held(step.hold, res);
        const start = nowMs() + (step.firstDelayMs ?? 0);
        for (let index = 0; index < step.tokens; index++) {
          await until(res, start + index * step.intervalMs);
          if (res.destroyed) return;
          line({ content: stampToken({ sentAt: nowMs(), requestAt, index }) });
        }
        evalCount = step.tokens;
        // The schedule, from the release of the hold.
        plannedMs = (step.firstDelayMs ?? 0) + Math.max(0, step.tokens - 1) * step.intervalMs;
        return done();
      }
    }
  }

  async function handleChat(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const requestAt = nowMs();
    open++;
    res.once("close", () => {
      open--;
      closed++;
      if (open === 0) onAllClosed?.();
    });
    let body: any;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return sendJson(res, 400, { error: "invalid JSON request body" });
    }
    const model = typeof body?.model === "string" ? body.model : "";
    const request: FakeChatRequest = {
      model,
      messages: (Array.isArray(body?.messages) ? body.messages : []).map((m: any) => ({
        ...m,
        content: typeof m?.content === "string" ? m.content : "",
      })),
      tools: Array.isArray(body?.tools) ? body.tools : [],
      think: body?.think,
      body,
    };
    if (keepRequests) requests.push(request);
    if (!isKnown(model)) return notFound(res, model);
    if (!(await takeSlot(res))) return;
    let step: FakeStep;
    try {
      step = queue.shift() ?? (await responder(request));
    } catch (error) {
      return sendJson(res, 500, { error: error instanceof Error ? error.message : String(error) });
    }
    await streamStep(res, request, step, requestAt);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const path = url.pathname;
    if (req.method === "POST" && path === "/api/chat") return handleChat(req, res);
    if (req.method === "POST" && path === "/bench/release") {
      const { key } = JSON.parse(await readBody(req)) as { key?: unknown };
      release(String(key));
      return sendJson(res, 200, { ok: true });
    }
    if (req.method === "GET" && path === "/bench/held") {
      return sendJson(res, 200, { held: holders.get(url.searchParams.get("key") ?? "")?.size ?? 0 });
    }
    if (req.method === "GET" && path === "/bench/clock") return sendJson(res, 200, { now: nowMs() });
    if (req.method === "GET" && path === "/api/version") return sendJson(res, 200, { version: "0.0.0-fake" });
    if ((req.method === "GET" || req.method === "HEAD") && path === "/") {
      res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8" });
      return void res.end("Ollama is running");
    }
    if (req.method === "GET" && path === "/api/tags") {
      const list = models.map((name) => ({
        name,
        model: name,
        modified_at: "2025-01-01T00:00:00Z",
        size: 1,
        digest: "0".repeat(64),
        details: { format: "gguf", family: name.split(":")[0], parameter_size: "1B", quantization_level: "Q4_K_M" },
      }));
      return sendJson(res, 200, { models: list });
    }
    if (req.method === "POST" && path === "/api/show") {
      let body: any = {};
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        // An unreadable body names no model, so it is answered as not found.
      }
      const model = body?.model ?? body?.name ?? "";
      return isKnown(model) ? sendJson(res, 200, { details: {}, capabilities: ["completion", "tools"] }) : notFound(res, String(model));
    }
    sendJson(res, 404, { error: "not found" });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error) => {
      if (!res.headersSent) sendJson(res, 500, { error: String(error) });
      else res.destroy();
    });
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    openChatRequests: () => open,
    closedChatRequests: () => closed,
    asked: (text) => requests.filter((r) => r.messages.at(-1)?.content === text).length,
    setResponder(next) {
      responder = next;
    },
    enqueue(...steps) {
      queue.push(...steps);
    },
    capacity: () => ({ peakServing, queued: queuedTotal, busy: busyTotal }),
    async close() {
      await new Promise<void>((resolve) => {
        // The callback may report "not running" on a second close; either way it is closed.
        server.close(() => resolve());
        server.closeAllConnections();
      });
      // Responses see their socket close a little later; wait so the counters are final.
      if (open > 0) await new Promise<void>((resolve) => (onAllClosed = resolve));
    },
  };
}
