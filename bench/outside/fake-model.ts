// The fake model, a process of its own: an Ollama-compatible /api/chat that
// streams N tokens at a fixed interval, each stamped with its send time (see
// clock.ts), so a client in another process can tell how long every token took
// to reach it through whatever relayed it. Token i leaves at request + (i + 1)
// intervals on an absolute schedule, so timer lateness never accumulates, and
// the stamp is taken just before the write, so lateness never counts against
// the relay either.
//
//   node --import tsx bench/outside/fake-model.ts      prints {"url": ...} on stdout
//
// Defaults: OUTSIDE_TOKENS (200) tokens every OUTSIDE_INTERVAL_MS (10) ms; a
// request may ask for another plan in its last user message (planMessage).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { monoMs, nowMs, readPlan, stampText, type Plan } from "./clock.ts";

const MODEL = process.env.OLLAMA_MODEL ?? "qwen3";
const DEFAULT_PLAN: Plan = {
  tokens: Number(process.env.OUTSIDE_TOKENS ?? 200),
  intervalMs: Number(process.env.OUTSIDE_INTERVAL_MS ?? 10),
};

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function json(res: http.ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(value));
}

function sleepUntil(res: http.ServerResponse, at: number): Promise<void> {
  const wait = at - nowMs();
  if (wait <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, wait);
    res.once("close", done);
  });
}

const FINAL = { done: true, done_reason: "stop", total_duration: 1, load_duration: 1, prompt_eval_count: 1, prompt_eval_duration: 1, eval_duration: 1 };

async function chat(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const requestAt = nowMs();
  const body = JSON.parse(await readBody(req)) as { messages?: { role: string; content: unknown }[]; stream?: boolean };
  const lastUser = (body.messages ?? []).findLast((m) => m.role === "user");
  const plan = readPlan(typeof lastUser?.content === "string" ? lastUser.content : "", DEFAULT_PLAN);
  const created_at = new Date().toISOString();
  if (body.stream === false) {
    const content = Array.from({ length: plan.tokens }, (_, index) => stampText({ sentAt: nowMs(), requestAt, index })).join("");
    return json(res, 200, { model: MODEL, created_at, message: { role: "assistant", content }, ...FINAL, eval_count: plan.tokens });
  }
  req.socket.setNoDelay(true);
  res.writeHead(200, { "content-type": "application/x-ndjson" });
  res.flushHeaders();
  const line = (content: string, extra: Record<string, unknown> = {}) =>
    res.write(`${JSON.stringify({ model: MODEL, created_at, message: { role: "assistant", content }, done: false, ...extra })}\n`);
  for (let index = 0; index < plan.tokens; index++) {
    await sleepUntil(res, requestAt + (index + 1) * plan.intervalMs);
    if (res.destroyed) return;
    line(stampText({ sentAt: nowMs(), requestAt, index }));
  }
  line("", { ...FINAL, eval_count: plan.tokens });
  res.end();
}

const server = http.createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0];
  const handle = async () => {
    if (req.method === "POST" && path === "/api/chat") return chat(req, res);
    if (req.method === "GET" && path === "/api/tags") return json(res, 200, { models: [{ name: `${MODEL}:latest`, model: `${MODEL}:latest`, details: {} }] });
    if (req.method === "POST" && path === "/api/show") return json(res, 200, { details: {}, capabilities: ["completion", "tools"] });
    if (req.method === "GET" && path === "/api/version") return json(res, 200, { version: "0.0.0-fake" });
    // Both clocks at one instant: the client compares its own wall − monotonic offset with this one.
    if (req.method === "GET" && path === "/clock") return json(res, 200, { wall: nowMs(), mono: monoMs() });
    if (path === "/") return void res.end("Ollama is running");
    json(res, 404, { error: "not found" });
  };
  handle().catch((error) => {
    if (!res.headersSent) json(res, 500, { error: String(error) });
    else res.destroy();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
