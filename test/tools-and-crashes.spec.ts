// A tool call that may have run is never repeated silently. A real stdio MCP
// server pays invoices: each call waits, then appends a line to a ledger file.
// runledger is killed with SIGKILL while four calls are in flight; the MCP
// server lives on and finishes them, so the ledger has one line each. After a
// restart on the same database:
// - the idempotent tool (annotated idempotentHint) runs again on resume;
// - the others are in doubt: the resume ends WAITING on a tool_in_doubt
//   interrupt and nothing runs until a person answers retry (a second line,
//   with the same call id in _meta), skip (no line; the model gets the given
//   result) or fail (no line; the model gets an error).
// On SQLite, and on PostgreSQL with events through Redis.
// A call whose outcome was recorded is never invoked again: its result comes
// from the journal, even when the checkpoint never saw it.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { CLUSTER_ENV, PROCESS_TEST_TIMEOUT_MS, ROOT, startTestApp, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { collect, gqlOk, wsClient } from "../testkit/graphql.ts";
import { postgresDatabase, redisServer, uniqueName } from "../testkit/services.ts";
import { CANCEL_RUN } from "../testkit/documents.ts";

let fake: FakeOllama;
// In the default layout of a machine with several cores: a SIGKILL to the primary takes its workers too.
const startServer = trackedServerProcesses(CLUSTER_ENV);

beforeAll(async () => {
  fake = await startFakeOllama();
  // "pay INV-1" → the model calls pay; "settle INV-2" → settle; after a tool's result → it says what it heard.
  fake.setResponder((request): FakeStep => {
    const last = request.messages.at(-1)!;
    if (last.role === "tool") return { kind: "text", tokens: ["Heard: ", last.content] };
    const [verb, invoice] = last.content.split(" ");
    return { kind: "toolCalls", calls: [{ name: verb!, args: { invoice } }] };
  });
});
afterAll(async () => {
  await fake?.close();
});

const START = /* GraphQL */ `
  mutation Start($message: String!) {
    startRun(input: { message: $message, agent: "payer" }) { __typename ... on StartRunSuccess { run { id } conversation { id } } ... on Error { code message } }
  }
`;
const RESUME = /* GraphQL */ `
  mutation Resume($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) {
      __typename ... on ResumeRunSuccess { run { id } } ... on Error { code message }
    }
  }
`;
const TOOL_CALLS = /* GraphQL */ `
  query ToolCalls($id: ID!) {
    run(id: $id) { status errorCode toolCalls { toolCallId name args state attempt result startedAt finishedAt } }
  }
`;
const WAITING = /* GraphQL */ `
  query Waiting($id: ID!) {
    conversation(id: $id) {
      next
      pendingInterrupts { id node value }
      messages { role content toolCallId }
    }
  }
`;
const TOOL_EVENTS = /* GraphQL */ `
  subscription Events($runId: ID!) {
    runEvents(runId: $runId) {
      __typename
      ... on RunStatusEvent { status }
      ... on ToolCallEvent { toolCallId name attempt }
      ... on ToolResultEvent { toolCallId name content isError attempt }
    }
  }
`;

interface LedgerLine {
  tool: string;
  invoice: string;
  toolCallId: string | null;
}

/** A folder with the agents file (agent "payer": the bank's pay and settle) and where the bank writes. */
function bankAgent(dir: string, delayMs: number) {
  const ledger = path.join(dir, "ledger.jsonl");
  const log = path.join(dir, "bank.log");
  const bank = {
    command: process.execPath,
    args: [path.join(ROOT, "test", "fixtures", "mcp", "stdio-server.mjs")],
    env: { MCP_FIXTURE_NAME: "bank", MCP_FIXTURE_LEDGER: ledger, MCP_FIXTURE_LOG: log, MCP_FIXTURE_PAY_DELAY_MS: String(delayMs) },
    tools: ["pay", "settle"],
  };
  const file = path.join(dir, "agents.json");
  fs.writeFileSync(file, JSON.stringify({ agents: { default: { type: "chat" }, payer: { type: "chat", tools: [], mcpServers: { bank } } } }));
  const lines = (at: string): any[] =>
    fs.existsSync(at)
      ? fs
          .readFileSync(at, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  return {
    file,
    ledger: (): LedgerLine[] => lines(ledger).map(({ tool, invoice, toolCallId }) => ({ tool, invoice, toolCallId })),
    started: (): { tool: string; invoice: string; toolCallId: string | null }[] => lines(log).filter((e) => e.event === "started"),
  };
}

async function start(url: string, message: string): Promise<{ runId: string; conversationId: string }> {
  const { startRun } = await gqlOk(url, START, { message });
  expect(startRun.__typename).toBe("StartRunSuccess");
  return { runId: startRun.run.id, conversationId: startRun.conversation.id };
}

async function resume(url: string, conversationId: string, responses?: unknown[]): Promise<any> {
  return (await gqlOk(url, RESUME, { conversationId, responses })).resumeRun;
}

async function toolCallsOf(url: string, runId: string) {
  return (await gqlOk(url, TOOL_CALLS, { id: runId })).run.toolCalls;
}

interface Deployment {
  name: string;
  env(): Promise<{ env: Record<string, string>; dir: string; cleanup(): Promise<void> }>;
}

const deployments: Deployment[] = [
  {
    name: "SQLite",
    async env() {
      const database = tempDatabaseUrl("runledger-tools-crash-");
      return { env: { DATABASE_URL: database.url }, dir: database.dir, cleanup: async () => database.remove() };
    },
  },
  {
    name: "PostgreSQL with events through Redis",
    async env() {
      const [db, redis] = await Promise.all([postgresDatabase(), redisServer()]);
      const dir = tempDatabaseUrl("runledger-tools-crash-pg-").dir;
      return {
        env: { DATABASE_URL: db.url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: `${uniqueName("tools-crash")}:` },
        dir,
        cleanup: async () => {
          await db.drop();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

for (const deployment of deployments) {
  describe(`SIGKILL while MCP tool calls are in flight, then a restart (${deployment.name})`, () => {
    it(
      "never repeats a call without an answer: the idempotent one runs again, the others wait on tool_in_doubt, and retry, skip and fail do what they say",
      async () => {
        const { env: storageEnv, dir, cleanup } = await deployment.env();
        const bank = bankAgent(dir, 3_000);
        const env = { ...storageEnv, OLLAMA_HOST: fake.url, RUNLEDGER_CONFIG: bank.file };

        const first = await startServer(env);
        const invoices = ["pay INV-retry", "pay INV-skip", "pay INV-fail", "settle INV-again"];
        const runs = new Map<string, { runId: string; conversationId: string }>();
        for (const message of invoices) runs.set(message.split(" ")[1]!, await start(first.url, message));
        // Every call is in flight: the bank has started each and written nothing yet.
        await vi.waitFor(() => expect(bank.started()).toHaveLength(4), { timeout: 20_000 });
        expect(bank.ledger()).toEqual([]);
        const journaled = await toolCallsOf(first.url, runs.get("INV-retry")!.runId);
        expect(journaled).toMatchObject([{ name: "pay", args: { invoice: "INV-retry" }, state: "STARTED", attempt: 1, result: null, finishedAt: null }]);

        first.child.kill("SIGKILL");
        expect(await first.exited).toBeNull();
        // The bank lives on and finishes each call once; nobody hears how they ended.
        await vi.waitFor(() => expect(bank.ledger()).toHaveLength(4), { timeout: 20_000 });
        const callIds = new Map(bank.started().map((s) => [s.invoice, s.toolCallId]));
        // Each request carried the model's tool call id in _meta, the key a tool can deduplicate on.
        expect(
          bank
            .ledger()
            .map((l) => l.toolCallId)
            .sort(),
        ).toEqual([...callIds.values()].sort());
        expect([...callIds.values()].every((id) => typeof id === "string" && id.length > 0)).toBe(true);

        const second = await startServer(env);
        for (const [invoice, { runId }] of runs) {
          const { run } = await gqlOk(second.url, TOOL_CALLS, { id: runId });
          expect(run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED" });
          // No outcome was recorded: the call may have run.
          expect(run.toolCalls).toMatchObject([{ toolCallId: callIds.get(invoice), state: "IN_DOUBT", attempt: 1, result: null, finishedAt: null }]);
        }

        // The idempotent tool runs again on a plain resume, as its second attempt, with the same call id.
        const again = await resume(second.url, runs.get("INV-again")!.conversationId);
        expect(again.__typename).toBe("ResumeRunSuccess");
        expect((await waitForRun(second.url, again.run.id)).status).toBe("COMPLETED");
        expect(bank.ledger().filter((l) => l.invoice === "INV-again")).toEqual([
          { tool: "settle", invoice: "INV-again", toolCallId: callIds.get("INV-again") },
          { tool: "settle", invoice: "INV-again", toolCallId: callIds.get("INV-again") },
        ]);
        expect(await toolCallsOf(second.url, again.run.id)).toMatchObject([{ name: "settle", state: "SUCCEEDED", attempt: 2, result: "settled INV-again" }]);

        // The others: a plain resume runs nothing and waits for a person.
        const questions = new Map<string, { conversationId: string; interrupt: any }>();
        for (const invoice of ["INV-retry", "INV-skip", "INV-fail"]) {
          const { conversationId, runId } = runs.get(invoice)!;
          const resumed = await resume(second.url, conversationId);
          expect(resumed.__typename).toBe("ResumeRunSuccess");
          expect(await waitForRun(second.url, resumed.run.id)).toMatchObject({ status: "WAITING", errorCode: null });
          const waiting = (await gqlOk(second.url, WAITING, { id: conversationId })).conversation;
          expect(waiting.next).toEqual(["tools"]);
          expect(waiting.pendingInterrupts).toHaveLength(1);
          const [interrupt] = waiting.pendingInterrupts;
          const cutOff = (await toolCallsOf(second.url, runId))[0];
          expect(interrupt).toMatchObject({
            node: "tools",
            value: { type: "tool_in_doubt", toolCallId: callIds.get(invoice), tool: "pay", args: { invoice }, startedAt: cutOff.startedAt, attempt: 1 },
          });
          expect(await toolCallsOf(second.url, resumed.run.id)).toEqual([]);
          questions.set(invoice, { conversationId, interrupt });
        }
        expect(bank.ledger()).toHaveLength(5);

        // An answer that is none of the three is refused before anything runs.
        const retry = questions.get("INV-retry")!;
        expect(await resume(second.url, retry.conversationId, [{ interruptId: retry.interrupt.id, value: { decision: "maybe" } }])).toMatchObject({
          __typename: "ValidationError",
          message: expect.stringContaining('"decision": "retry" | "skip" | "fail"'),
        });

        const answer = async (invoice: string, value: unknown) => {
          const { conversationId, interrupt } = questions.get(invoice)!;
          const answered = await resume(second.url, conversationId, [{ interruptId: interrupt.id, value }]);
          expect(answered.__typename).toBe("ResumeRunSuccess");
          const client = wsClient(second.url);
          const events = (await collect(client, TOOL_EVENTS, { runId: answered.run.id }).done).map((r) => r.runEvents);
          await client.dispose();
          expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
          const messages = (await gqlOk(second.url, WAITING, { id: conversationId })).conversation.messages;
          return { runId: answered.run.id, events: events.filter((e) => e.__typename === "ToolCallEvent" || e.__typename === "ToolResultEvent"), messages };
        };

        // retry: the call runs again, as attempt 2, with the same call id: a second line.
        const retried = await answer("INV-retry", { decision: "retry" });
        const retryId = callIds.get("INV-retry");
        expect(retried.events).toEqual([
          { __typename: "ToolCallEvent", toolCallId: retryId, name: "pay", attempt: 2 },
          { __typename: "ToolResultEvent", toolCallId: retryId, name: "pay", content: "paid INV-retry", isError: false, attempt: 2 },
        ]);
        expect(bank.ledger().filter((l) => l.invoice === "INV-retry")).toEqual([
          { tool: "pay", invoice: "INV-retry", toolCallId: retryId },
          { tool: "pay", invoice: "INV-retry", toolCallId: retryId },
        ]);
        expect(await toolCallsOf(second.url, retried.runId)).toMatchObject([{ state: "SUCCEEDED", attempt: 2, result: "paid INV-retry" }]);
        expect(await toolCallsOf(second.url, runs.get("INV-retry")!.runId)).toMatchObject([{ state: "IN_DOUBT", attempt: 1 }]);

        // skip: nothing runs; the model gets the person's result as the call's.
        const skipped = await answer("INV-skip", { decision: "skip", result: "it went through" });
        expect(skipped.events).toEqual([
          { __typename: "ToolResultEvent", toolCallId: callIds.get("INV-skip"), name: "pay", content: "it went through", isError: false, attempt: 1 },
        ]);
        expect(skipped.messages.slice(-2)).toEqual([
          { role: "TOOL", content: "it went through", toolCallId: callIds.get("INV-skip") },
          { role: "ASSISTANT", content: "Heard: it went through", toolCallId: null },
        ]);
        expect(await toolCallsOf(second.url, runs.get("INV-skip")!.runId)).toMatchObject([{ state: "SKIPPED", attempt: 1, result: "it went through" }]);

        // fail: nothing runs; the model hears the call failed.
        const failed = await answer("INV-fail", { decision: "fail" });
        expect(failed.events).toMatchObject([{ __typename: "ToolResultEvent", toolCallId: callIds.get("INV-fail"), isError: true, attempt: 1 }]);
        expect(failed.messages.at(-2).content).toMatch(/cut off .* marked it as failed/);
        expect(await toolCallsOf(second.url, runs.get("INV-fail")!.runId)).toMatchObject([{ state: "FAILED", attempt: 1 }]);

        // Each effect once, and twice only where it was asked for: by the tool's annotation, or by a person.
        expect(
          bank
            .ledger()
            .map((l) => l.invoice)
            .sort(),
        ).toEqual(["INV-again", "INV-again", "INV-fail", "INV-retry", "INV-retry", "INV-skip"]);
        expect(await second.stop("SIGTERM")).toBe(0);
        await cleanup();
      },
      PROCESS_TEST_TIMEOUT_MS * 2,
    );
  });
}

describe("a call in doubt over the lab's REST routes", () => {
  it(
    "is asked about in pendingInterrupts, a wrong answer is a 400, and fail gives the model an error without running the tool",
    async () => {
      const database = tempDatabaseUrl("runledger-tools-rest-");
      const bank = bankAgent(database.dir, 60_000);
      const app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: { RUNLEDGER_CONFIG: bank.file } });
      const post = async (body: unknown) => {
        const response = await fetch(`${app.url}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
        return { status: response.status, json: (await response.json()) as any };
      };
      try {
        const { runId, conversationId } = await start(app.url, "pay INV-rest");
        await vi.waitFor(() => expect(bank.started()).toHaveLength(1), { timeout: 20_000 });
        expect((await gqlOk(app.url, CANCEL_RUN, { runId })).cancelRun.run.status).toBe("CANCELLED");

        const resumed = await post({ resume: true, conversation: conversationId });
        expect(resumed.status).toBe(200);
        expect((await waitForRun(app.url, resumed.json.run)).status).toBe("WAITING");
        const { pendingInterrupts } = (await (await fetch(`${app.url}/api/conversations/${conversationId}`)).json()) as any;
        expect(pendingInterrupts).toMatchObject([{ node: "tools", value: { type: "tool_in_doubt", tool: "pay", args: { invoice: "INV-rest" }, attempt: 1 } }]);
        const [question] = pendingInterrupts;

        const wrong = await post({
          resume: true,
          conversation: conversationId,
          responses: [{ interruptId: question.id, value: { decision: "retry", result: "x" } }],
        });
        expect(wrong).toMatchObject({ status: 400, json: { code: "BAD_REQUEST" } });

        const failed = await post({
          resume: true,
          conversation: conversationId,
          responses: [{ interruptId: question.id, value: { decision: "fail", result: "the bank has no record of it" } }],
        });
        expect(failed.status).toBe(200);
        expect((await waitForRun(app.url, failed.json.run)).status).toBe("COMPLETED");
        expect(fake.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: "tool", content: "the bank has no record of it" });
        expect(bank.started()).toHaveLength(1);
        expect(await toolCallsOf(app.url, runId)).toMatchObject([{ state: "FAILED", attempt: 1, result: "the bank has no record of it" }]);
      } finally {
        await app.close();
        database.remove();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe("a call whose outcome was recorded", () => {
  it(
    "is never invoked again: a resume gives the model the journal's result even though no checkpoint saw it",
    async () => {
      const database = tempDatabaseUrl("runledger-tools-recorded-");
      // The call never finishes by itself within the test: only the journal can give it an outcome.
      const bank = bankAgent(database.dir, 60_000);
      const app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: { RUNLEDGER_CONFIG: bank.file } });
      try {
        const { runId, conversationId } = await start(app.url, "pay INV-once");
        await vi.waitFor(() => expect(bank.started()).toHaveLength(1), { timeout: 20_000 });
        const { cancelRun } = await gqlOk(app.url, CANCEL_RUN, { runId });
        expect(cancelRun.run.status).toBe("CANCELLED");
        const [call] = await toolCallsOf(app.url, runId);
        expect(call).toMatchObject({ name: "pay", state: "IN_DOUBT", attempt: 1 });

        // What a process that died right after recording the outcome, before the step's checkpoint, leaves behind.
        await app.storage.toolJournal.finish(
          { conversationId, toolCallId: call.toolCallId, attempt: 1 },
          { state: "succeeded", result: "paid INV-once (from the journal)", finishedAt: new Date() },
        );
        expect((await gqlOk(app.url, WAITING, { id: conversationId })).conversation.next).toEqual(["tools"]);

        const requests = fake.requests.length;
        const resumed = await resume(app.url, conversationId);
        expect((await waitForRun(app.url, resumed.run.id)).status).toBe("COMPLETED");
        expect(bank.started()).toHaveLength(1);
        expect(await toolCallsOf(app.url, resumed.run.id)).toEqual([]);
        expect(await toolCallsOf(app.url, runId)).toMatchObject([{ state: "SUCCEEDED", attempt: 1, result: "paid INV-once (from the journal)" }]);
        // The model was given the recorded result.
        const sent = fake.requests.slice(requests).at(-1)!;
        expect(sent.messages.at(-1)).toMatchObject({ role: "tool", content: "paid INV-once (from the journal)" });
        const messages = (await gqlOk(app.url, WAITING, { id: conversationId })).conversation.messages;
        expect(messages.slice(-2).map((m: any) => m.content)).toEqual(["paid INV-once (from the journal)", "Heard: paid INV-once (from the journal)"]);
      } finally {
        await app.close();
        database.remove();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
