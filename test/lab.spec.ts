// The seed's lab over REST (src/server/routes/lab.ts): first the seed's whole
// experiment, its curl and jq lines replayed as HTTP calls against real server
// processes (restarted with the model unreachable, as the seed does), then its
// sqlite3 inspection queries on the database file; then each route's answers.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, splitTokens, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { closedPort, PROCESS_TEST_TIMEOUT_MS, startTestApp, tempDatabaseUrl } from "../testkit/app.ts";
import { startServerProcess, type ServerProcess } from "../testkit/processes.ts";
import { API_TOKEN_PRINCIPAL } from "../src/domain/principal.ts";

interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

/** Parses a text/event-stream body (comments skipped). */
function parseSse(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((block) => block.split("\n").some((line) => line.startsWith("event:") || line.startsWith("data:")))
    .map((block) => {
      const event: SseEvent = { event: "message", data: undefined };
      for (const line of block.split("\n")) {
        const [field, ...rest] = line.split(":");
        const value = rest.join(":").replace(/^ /, "");
        if (field === "id") event.id = value;
        else if (field === "event") event.event = value;
        else if (field === "data") event.data = JSON.parse(value);
      }
      return event;
    });
}

/** `curl -s -X POST $B/api/chat -H 'content-type: application/json' -d BODY`: the status and the JSON. */
async function postChat(base: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const response = await fetch(`${base}/api/chat`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, json: await response.json() };
}

/** `curl -sN "$B/api/chat?conversation=$C"`: the whole stream, until the server ends it. */
async function streamChat(
  base: string,
  conversation: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; contentType: string | null }> {
  const response = await fetch(`${base}/api/chat?conversation=${conversation}`, { headers });
  return { status: response.status, text: await response.text(), contentType: response.headers.get("content-type") };
}

/** `| tail -n`: the last n lines, as tail prints them. */
function tail(text: string, n: number): string[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.slice(-n);
}

const getJson = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, json: await response.json() };
};

function sqlite(file: string, sql: string): any[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(sql).all();
  } finally {
    db.close();
  }
}

let fake: FakeOllama;

beforeAll(async () => {
  fake = await startFakeOllama();
  // "trickle ..." answers a token at a time, so a stream can be joined mid-run;
  // "stall ..." sends one token and then nothing, so a run stays active.
  fake.setResponder((request) => {
    const text = request.messages.findLast((m) => m.role === "user")?.content ?? "";
    if (text.startsWith("trickle")) return { kind: "trickle", tokens: splitTokens("one two three four five six"), delayMs: 60 };
    if (text.startsWith("stall")) return { kind: "silence", tokens: ["Partial "] };
    return defaultResponder(request);
  });
});
afterAll(async () => {
  await fake?.close();
});

describe("the seed's experiment, over the lab's REST routes", () => {
  const db = tempDatabaseUrl("runledger-lab-seed-");
  let server: ServerProcess | undefined;
  let C = "";
  const runIds: string[] = [];

  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  /** Stop the lab server (Ctrl+C) and start it again, as the seed does. */
  async function restart(ollamaHost: string): Promise<string> {
    if (server) expect(await server.stop("SIGINT")).toBe(0);
    server = await startServerProcess({ DATABASE_URL: db.url, OLLAMA_HOST: ollamaHost });
    return server.url;
  }

  it(
    "run 1 and run 2: two completed turns",
    async () => {
      const B = await restart(fake.url);
      const first = await postChat(B, { message: "Name one prime number. Answer in one word." });
      expect(first.status).toBe(200);
      C = first.json.conversation;
      expect(C).toMatch(/^[0-9a-f-]{36}$/);
      runIds.push(first.json.run);
      // `| tail -2`: the end event's data line, and the blank line that closes it.
      expect(tail((await streamChat(B, C)).text, 2)).toEqual([`data: {"conversation":"${C}","status":"completed"}`, ""]);

      const second = await postChat(B, { message: "Name another one.", conversation: C });
      expect(second.json).toEqual({ conversation: C, run: expect.any(String) });
      runIds.push(second.json.run);
      const stream2 = await streamChat(B, C);
      expect(tail(stream2.text, 2)).toEqual([`data: {"conversation":"${C}","status":"completed"}`, ""]);
      expect(parseSse(stream2.text).at(-1)).toMatchObject({ event: "end", data: { conversation: C, status: "completed" } });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "run 3: restarted with OLLAMA_HOST=http://127.0.0.1:<closed port>, the run fails (MODEL_UNAVAILABLE here; the seed recorded AGENT_FAILURE)",
    async () => {
      const B = await restart(`http://127.0.0.1:${await closedPort()}`);
      const third = await postChat(B, { message: "And a third one.", conversation: C });
      expect(third.json).toEqual({ conversation: C, run: expect.any(String) });
      runIds.push(third.json.run);
      const stream = await streamChat(B, C);
      const last = parseSse(stream.text).at(-1)!;
      expect(last.event).toBe("chat-error");
      expect(last.data.code).toBe("MODEL_UNAVAILABLE");
      expect(last.data.message).toMatch(/fetch failed/);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "run 4: restarted normally, {resume: true} continues the pending step",
    async () => {
      const B = await restart(fake.url);
      const before = (await getJson(`${B}/api/conversations/${C}`)).json;
      expect(before.resumable).toBe(true);
      const resume = await postChat(B, { resume: true, conversation: C });
      expect(resume.json).toEqual({ conversation: C, run: expect.any(String) });
      runIds.push(resume.json.run);
      const stream = await streamChat(B, C);
      expect(tail(stream.text, 2)).toEqual([`data: {"conversation":"${C}","status":"completed"}`, ""]);
      expect(parseSse(stream.text).at(-1)).toMatchObject({ event: "end" });
      // Nothing left to resume.
      const again = await postChat(B, { resume: true, conversation: C });
      expect(again).toEqual({ status: 409, json: { code: "RUN_NOT_RESUMABLE", message: expect.any(String) } });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "inspect: the seed's queries and curl | jq lines give the observed state",
    async () => {
      const B = server!.url;
      const file = db.file;
      // sqlite3 -header -column $DB "SELECT id, title, message_count FROM conversations"
      expect(sqlite(file, "SELECT id, title, message_count FROM conversations")).toEqual([
        { id: C, title: "Name one prime number. Answer in one word.", message_count: 6 },
      ]);
      // ... runs WHERE conversation_id = '$C' ORDER BY started_at: completed, completed, failed, completed.
      const runs = sqlite(file, `SELECT id, status, error_code, started_at, finished_at FROM runs WHERE conversation_id = '${C}' ORDER BY started_at`);
      expect(runs.map((r) => r.id)).toEqual(runIds);
      expect(runs.map((r) => [r.status, r.error_code])).toEqual([
        ["completed", null],
        ["completed", null],
        ["failed", "MODEL_UNAVAILABLE"],
        ["completed", null],
      ]);

      // curl -s "$B/api/conversations/$C/export?format=jsonl" | jq -c '{step, source, next, message_count, role: .last_message.role}'
      const exported = (await (await fetch(`${B}/api/conversations/${C}/export?format=jsonl`)).text())
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
        .map((l) => ({ step: l.step, source: l.source, next: l.next, message_count: l.message_count, role: l.last_message?.role }));
      expect(exported.filter((l) => l.source === "input").map((l) => l.step)).toEqual([-1, 2, 5]);
      // The failed run left the thread at next ["agent"]; the resume added exactly one checkpoint, the agent step.
      const pending = exported.findIndex((l, i) => i > 0 && l.message_count === 5 && l.next.includes("agent") && l.source === "loop");
      expect(pending).toBeGreaterThan(0);
      expect(exported.slice(pending + 1)).toEqual([{ step: exported[pending]!.step + 1, source: "loop", next: [], message_count: 6, role: "assistant" }]);

      // sqlite3 $DB "SELECT DISTINCT CAST(metadata AS TEXT) FROM checkpoints WHERE thread_id = '$C' LIMIT 3": no run id.
      const metadata = sqlite(file, `SELECT DISTINCT CAST(metadata AS TEXT) AS m FROM checkpoints WHERE thread_id = '${C}' LIMIT 3`);
      expect(metadata).toHaveLength(3);
      for (const { m } of metadata) {
        expect(Object.keys(JSON.parse(m)).sort()).toEqual(["parents", "source", "step"]);
        for (const id of runIds) expect(m).not.toContain(id);
      }
      // sqlite3 ... "SELECT checkpoint_id, idx, channel FROM writes WHERE thread_id = '$C' AND channel = '__error__'"
      expect(sqlite(file, `SELECT checkpoint_id, idx, channel FROM writes WHERE thread_id = '${C}' AND channel = '__error__'`)).toEqual([
        { checkpoint_id: expect.any(String), idx: expect.any(Number), channel: "__error__" },
      ]);

      // curl -s $B/api/conversations/$C | jq -c '.messages[] | {id, role}': assistant ids start with run-, unrelated to runs.id.
      const { json } = await getJson(`${B}/api/conversations/${C}`);
      expect(json.resumable).toBe(false);
      expect(json.conversation).toMatchObject({ id: C, status: "completed", messageCount: 6 });
      expect(json.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
      for (const m of json.messages.filter((m: any) => m.role === "assistant")) {
        expect(m.id).toMatch(/^run-/);
        expect(runIds).not.toContain(m.id.slice(4));
      }
      // The UI's list shows one conversation, status completed.
      expect((await getJson(`${B}/api/conversations`)).json).toEqual([expect.objectContaining({ id: C, status: "completed", errorCode: null })]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("the lab's routes", () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let B = "";
  const UNKNOWN = "7b0c7f7e-0000-4000-8000-000000000000";

  beforeAll(async () => {
    app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: "lab-token", CORS_ORIGINS: "https://app.example", MODEL_IDLE_TIMEOUT_MS: "600000" } });
    B = app.url;
  });
  afterAll(async () => {
    await app?.close();
  });
  const auth = { authorization: "Bearer lab-token" };

  it("applies API_TOKEN and CORS as every route does", async () => {
    expect((await fetch(`${B}/api/conversations`)).status).toBe(401);
    expect((await fetch(`${B}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(401);
    expect((await fetch(`${B}/api/conversations`, { headers: { ...auth, origin: "https://page.example" } })).status).toBe(403);
    const allowed = await fetch(`${B}/api/conversations`, { headers: { ...auth, origin: "https://app.example" } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example");
  });

  it("refuses with {code, message}: 400 BAD_REQUEST, 404 NOT_FOUND, 409 SESSION_IN_PROGRESS, 409 RUN_NOT_RESUMABLE", async () => {
    const refusal = (status: number, code: string) => ({ status, json: { code, message: expect.any(String) } });
    expect(await postChat(B, { message: "   " }, auth)).toEqual(refusal(400, "BAD_REQUEST"));
    expect(await postChat(B, {}, auth)).toEqual(refusal(400, "BAD_REQUEST"));
    expect(await postChat(B, { message: "hi", conversation: "not-an-id" }, auth)).toEqual(refusal(400, "BAD_REQUEST"));
    expect(await postChat(B, { resume: true }, auth)).toEqual(refusal(400, "BAD_REQUEST"));
    const notJson = await fetch(`${B}/api/chat`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{" });
    expect(notJson.status).toBe(400);
    const form = await fetch(`${B}/api/chat`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/x-www-form-urlencoded" },
      body: "message=hi",
    });
    expect(form.status).toBe(415);

    expect(await postChat(B, { message: "hi", conversation: UNKNOWN }, auth)).toEqual(refusal(404, "NOT_FOUND"));
    expect(await postChat(B, { resume: true, conversation: UNKNOWN }, auth)).toEqual(refusal(404, "NOT_FOUND"));
    expect((await fetch(`${B}/api/conversations/${UNKNOWN}`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${B}/api/chat?conversation=${UNKNOWN}`, { headers: auth })).status).toBe(404);

    const stalled = await postChat(B, { message: "stall please" }, auth);
    expect(stalled.status).toBe(200);
    const C = stalled.json.conversation;
    expect(await postChat(B, { message: "another", conversation: C }, auth)).toEqual(refusal(409, "SESSION_IN_PROGRESS"));
    expect(await postChat(B, { resume: true, conversation: C }, auth)).toEqual(refusal(409, "SESSION_IN_PROGRESS"));
    await app.services.runs.cancelRun({ runId: stalled.json.run }, API_TOKEN_PRINCIPAL);

    const answered = await postChat(B, { message: "hello" }, auth);
    await app.services.runs.whenFinished(answered.json.run);
    expect(await postChat(B, { resume: true, conversation: answered.json.conversation }, auth)).toEqual(refusal(409, "RUN_NOT_RESUMABLE"));
  });

  it("streams the active run (token, trace, then end), and Last-Event-ID resumes after the last event received", async () => {
    const { json } = await postChat(B, { message: "trickle please" }, auth);
    const C = json.conversation;
    // Read until the second token, then drop the connection.
    const controller = new AbortController();
    const response = await fetch(`${B}/api/chat?conversation=${C}`, { headers: auth, signal: controller.signal });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = response.body!.getReader();
    let text = "";
    while (parseSse(text).filter((e) => e.event === "token").length < 2) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended early: ${text}`);
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    const first = parseSse(text).slice(0, parseSse(text).findLastIndex((e) => e.event === "token") + 1);
    expect(first[0]).toMatchObject({ event: "trace", data: { type: "status", status: "running" } });
    const lastId = first.at(-1)!.id!;
    expect(lastId).toMatch(new RegExp(`^${json.run}:\\d+$`));

    const rest = parseSse((await streamChat(B, C, { ...auth, "last-event-id": lastId })).text);
    const seqs = [...first, ...rest].map((e) => Number(e.id!.split(":")[1]));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const tokens = [...first, ...rest].filter((e) => e.event === "token").map((e) => e.data.text);
    expect(tokens.join("")).toBe("one two three four five six");
    expect(rest.some((e) => e.event === "trace" && e.data.type === "checkpoint")).toBe(true);
    expect(rest.at(-1)).toMatchObject({ event: "end", data: { conversation: C, status: "completed" } });

    // No active run: the latest outcome from the database, alone.
    expect(parseSse((await streamChat(B, C, auth)).text)).toEqual([{ id: expect.any(String), event: "end", data: { conversation: C, status: "completed" } }]);
  });

  it("lists conversations newest first with their latest run's status, and shows one with its messages", async () => {
    const { json } = await postChat(B, { message: "calculate 6 * 7" }, auth);
    await app.services.runs.whenFinished(json.run);
    const list = await (await fetch(`${B}/api/conversations?limit=2`, { headers: auth })).json();
    expect(list).toHaveLength(2);
    expect(list[0]).toEqual({
      id: json.conversation,
      title: "calculate 6 * 7",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      messageCount: 4,
      status: "completed",
      errorCode: null,
    });
    const next = await (await fetch(`${B}/api/conversations?limit=100&after=${list[1].id}`, { headers: auth })).json();
    expect(next.map((c: any) => c.id)).not.toContain(list[0].id);
    expect((await fetch(`${B}/api/conversations?limit=1000`, { headers: auth })).status).toBe(400);

    const shown = await (await fetch(`${B}/api/conversations/${json.conversation}`, { headers: auth })).json();
    expect(shown).toEqual({
      conversation: list[0],
      messages: [
        { id: expect.any(String), role: "user", content: "calculate 6 * 7" },
        { id: expect.any(String), role: "assistant", content: "" },
        { id: expect.any(String), role: "tool", content: "42" },
        { id: expect.any(String), role: "assistant", content: "The result is 42." },
      ],
      resumable: false,
      pendingInterrupts: [],
    });
  });
});

describe("a waiting conversation over the lab's routes", () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let B = "";

  beforeAll(async () => {
    // The default agent asks before it calculates.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-lab-agents-"));
    const agents = path.join(dir, "agents.json");
    fs.writeFileSync(agents, JSON.stringify({ agents: { default: { type: "chat", requireApproval: ["calculator"] } } }));
    app = await startTestApp({ ollamaUrl: fake.url, env: { RUNLEDGER_CONFIG: agents } });
    B = app.url;
  });
  afterAll(async () => {
    await app?.close();
  });

  it("shows what it waits for and takes the answers as responses with resume: true; wrong answers are refused and change nothing", async () => {
    const { json: started } = await postChat(B, { message: "Please calculate 17 * 3" });
    const C = started.conversation;
    const waiting = tail((await streamChat(B, C)).text, 3);
    expect(waiting.slice(0, 2)).toEqual(["event: chat-error", expect.stringMatching(/^data: \{"code":"WAITING"/)]);
    expect(JSON.parse(waiting[1]!.slice("data: ".length)).message).toContain(`GET /api/conversations/${C}`);
    const shown = await getJson(`${B}/api/conversations/${C}`);
    expect(shown.json).toMatchObject({ resumable: false, conversation: { status: "waiting" } });
    expect(shown.json.pendingInterrupts).toEqual([
      {
        id: expect.any(String),
        node: expect.any(String),
        value: { type: "tool_approval", toolCalls: [{ id: expect.any(String), name: "calculator", args: { expression: "17 * 3" } }] },
      },
    ]);
    const [{ id: interruptId, value: question }] = shown.json.pendingInterrupts;
    const approve = { toolCalls: [{ id: question.toolCalls[0].id, decision: "approve" }] };

    // A plain resume, a wrong id, a malformed list and responses without resume are refused.
    expect(await postChat(B, { resume: true, conversation: C })).toMatchObject({
      status: 409,
      json: { code: "INTERRUPT_MISMATCH", pendingInterruptIds: [interruptId] },
    });
    expect(await postChat(B, { resume: true, conversation: C, responses: [{ interruptId: "nope", value: approve }] })).toMatchObject({
      status: 409,
      json: { code: "INTERRUPT_MISMATCH", pendingInterruptIds: [interruptId] },
    });
    expect(await postChat(B, { resume: true, conversation: C, responses: { interruptId } })).toMatchObject({
      status: 400,
      json: { code: "BAD_REQUEST", message: expect.stringContaining("responses must be a list") },
    });
    expect(await postChat(B, { resume: true, conversation: C, responses: [{ interruptId }] })).toMatchObject({ status: 400, json: { code: "BAD_REQUEST" } });
    expect(await postChat(B, { message: "and?", conversation: C, responses: [{ interruptId, value: approve }] })).toMatchObject({
      status: 400,
      json: { code: "BAD_REQUEST" },
    });
    expect(await postChat(B, { resume: true, conversation: C, responses: [{ interruptId, value: { toolCalls: [] } }] })).toMatchObject({
      status: 400,
      json: { code: "BAD_REQUEST" },
    });
    expect((await getJson(`${B}/api/conversations/${C}`)).json).toEqual(shown.json);

    const answered = await postChat(B, { resume: true, conversation: C, responses: [{ interruptId, value: approve }] });
    expect(answered).toMatchObject({ status: 200, json: { conversation: C, run: expect.any(String) } });
    expect(tail((await streamChat(B, C)).text, 3).slice(0, 2)).toEqual(["event: end", `data: {"conversation":"${C}","status":"completed"}`]);
    const done = (await getJson(`${B}/api/conversations/${C}`)).json;
    expect(done).toMatchObject({ resumable: false, pendingInterrupts: [], conversation: { status: "completed", messageCount: 4 } });
    expect(done.messages.at(-1).content).toBe("The result is 51.");
  });
});
