// The benchmark's model: an Ollama-compatible /api/chat that streams stamped
// tokens at a set rate. Each request says how to stream in its last user
// message, `bench {"tokens":100,"intervalMs":20,...}`, so the harness steers
// every run through runledger's real API without any side channel. A stream
// can be held until the harness releases its key: subscribers attach first,
// and no token is measured through replay.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { nowMs, stampToken } from "./clock.ts";

export interface StreamPlan {
  /** Tokens to stream. */
  tokens: number;
  /** Spacing between tokens; the schedule is absolute, so timer jitter does not accumulate. */
  intervalMs: number;
  /** Delay before the first token, counted from the request (or from the release of a held stream). */
  firstDelayMs?: number;
  /** Hold the stream until POST /bench/release {"key": ...} names this key. */
  hold?: string;
}

/** A hold key no other stream has used: the fake model outlives scenarios and remembers released keys. */
export function holdKey(name: string): string {
  return `${name}-${randomUUID().slice(0, 8)}`;
}

/** The user message that makes the fake stream this plan. */
export function planMessage(plan: StreamPlan): string {
  return `bench ${JSON.stringify(plan)}`;
}

export function parsePlan(text: string): StreamPlan {
  const m = /^bench (\{.*\})\s*$/s.exec(text.trim());
  const plan = m ? (JSON.parse(m[1]!) as Partial<StreamPlan>) : {};
  return { tokens: plan.tokens ?? 5, intervalMs: plan.intervalMs ?? 0, firstDelayMs: plan.firstDelayMs ?? 0, hold: plan.hold };
}

export interface FakeModel {
  url: string;
  close(): Promise<void>;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(value));
}

/** Sleeps until the shared clock reads `at` (or the response closes). */
function until(res: http.ServerResponse, at: number): Promise<void> {
  const wait = at - nowMs();
  if (wait <= 0 || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, wait);
    res.once("close", done);
    function done() {
      clearTimeout(timer);
      res.off("close", done);
      resolve();
    }
  });
}

export async function startFakeModel(port = 0, model = "qwen3"): Promise<FakeModel> {
  const released = new Set<string>();
  const holders = new Map<string, (() => void)[]>();

  const release = (key: string) => {
    released.add(key);
    for (const resume of holders.get(key) ?? []) resume();
    holders.delete(key);
  };
  const held = (key: string | undefined) =>
    key === undefined || released.has(key)
      ? Promise.resolve()
      : new Promise<void>((resolve) => holders.set(key, [...(holders.get(key) ?? []), resolve]));

  async function chat(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const requestAt = nowMs();
    const body = JSON.parse(await readBody(req)) as { messages?: { role: string; content: unknown }[] };
    const lastUser = (body.messages ?? []).findLast((m) => m.role === "user");
    const plan = parsePlan(typeof lastUser?.content === "string" ? lastUser.content : "");
    res.writeHead(200, { "Content-Type": "application/x-ndjson" });
    res.flushHeaders();
    await held(plan.hold);
    const start = nowMs() + (plan.firstDelayMs ?? 0);
    const line = (message: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      res.write(`${JSON.stringify({ model, created_at: new Date().toISOString(), message: { role: "assistant", content: "", ...message }, ...extra })}\n`);
    for (let index = 0; index < plan.tokens; index++) {
      await until(res, start + index * plan.intervalMs);
      if (res.destroyed) return;
      line({ content: stampToken({ sentAt: nowMs(), requestAt, index }) });
    }
    line({}, { done: true, done_reason: "stop", total_duration: 1, load_duration: 1, prompt_eval_count: 1, prompt_eval_duration: 1, eval_count: plan.tokens, eval_duration: 1 });
    res.end();
  }

  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const handle = async () => {
      if (req.method === "POST" && path === "/api/chat") return chat(req, res);
      if (req.method === "POST" && path === "/bench/release") {
        release(String((JSON.parse(await readBody(req)) as { key?: unknown }).key));
        return sendJson(res, 200, { ok: true });
      }
      if (req.method === "GET" && path === "/bench/held") {
        const key = new URL(req.url ?? "/", "http://localhost").searchParams.get("key") ?? "";
        return sendJson(res, 200, { held: holders.get(key)?.length ?? 0 });
      }
      if (req.method === "GET" && path === "/api/tags") return sendJson(res, 200, { models: [{ name: `${model}:latest`, model: `${model}:latest` }] });
      if (req.method === "POST" && path === "/api/show") return sendJson(res, 200, {});
      if (path === "/") return void res.end("Ollama is running");
      sendJson(res, 404, { error: "not found" });
    };
    handle().catch((error) => {
      if (!res.headersSent) sendJson(res, 500, { error: String(error) });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Waits until `count` requests hold on this key: every run has done its set-up
 * (run row, graph, first checkpoint, model request), so what is measured after
 * the release is the streaming alone.
 */
export async function waitForHeld(modelUrl: string, key: string, count: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${modelUrl}/bench/held?key=${encodeURIComponent(key)}`);
    const { held } = (await response.json()) as { held: number };
    if (held >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${held} of ${count} model requests arrived for ${key}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Lets held streams with this key start. */
export async function releaseStreams(modelUrl: string, key: string): Promise<void> {
  const response = await fetch(`${modelUrl}/bench/release`, { method: "POST", body: JSON.stringify({ key }) });
  if (!response.ok) throw new Error(`release failed: ${response.status}`);
  await response.arrayBuffer();
}
