// A crash for real: the server runs as a child process, is killed with SIGKILL
// while its runs are mid-stream, and is started again on the same database file.
// Every run it left behind is INTERRUPTED before the new process answers its
// first request, no committed message is lost, and resumeRun completes each.
// A run that waits for a person when the process dies still waits after the
// restart, with the same questions, and the answer runs each approved tool once.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultResponder, expectedUsage, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { CLUSTER_ENV, PROCESS_TEST_TIMEOUT_MS, ROOT, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { collect, gqlOk, sseClient, startRun, wsClient } from "../testkit/graphql.ts";
import { CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS } from "../testkit/documents.ts";

let fake: FakeOllama;
// In the default layout of a machine with several cores: a SIGKILL to the primary takes its workers too.
const startServer = trackedServerProcesses(CLUSTER_ENV);

beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

const messagesOf = async (url: string, id: string) => (await gqlOk(url, CONVERSATION, { id })).conversation.messages.map((m: any) => [m.role, m.content]);

describe("SIGKILL mid-stream, then a restart on the same database", () => {
  it(
    "interrupts every run left running before serving, loses no committed message, and resumes each",
    async () => {
      const { url: databaseUrl } = tempDatabaseUrl("runledger-crash-");
      const env = { DATABASE_URL: databaseUrl, OLLAMA_HOST: fake.url, MODEL_IDLE_TIMEOUT_MS: "600000" };
      // First turns answer; second turns stream one token and then stall, like a slow model.
      fake.setResponder((request) =>
        request.messages.at(-1)?.content.startsWith("second") ? { kind: "silence", tokens: ["Partial "] } : defaultResponder(request),
      );

      const first = await startServer(env);
      const conversations: string[] = [];
      for (let i = 0; i < 3; i++) {
        const { runId, conversationId } = await startRun(first.url, `first turn ${i}`);
        expect((await waitForRun(first.url, runId)).status).toBe("COMPLETED");
        conversations.push(conversationId);
      }

      const client = wsClient(first.url);
      client.on("error", () => {}); // the socket dies with the process
      const interrupted: string[] = [];
      const subscriptions: ReturnType<typeof collect<any>>[] = [];
      for (const [i, conversationId] of conversations.entries()) {
        const { runId } = await startRun(first.url, `second turn ${i}`, conversationId);
        interrupted.push(runId);
        subscriptions.push(collect(client, RUN_EVENTS, { runId }));
      }
      // The process dies without a word: each subscription ends with the socket, not with a terminal event.
      const ended = subscriptions.map((sub) =>
        sub.done.then(
          () => "completed",
          () => "socket lost",
        ),
      );
      // Every run is mid-stream: its model request is open and a token has reached its subscriber.
      await vi.waitFor(
        () => {
          expect(fake.openChatRequests()).toBe(3);
          for (const sub of subscriptions) expect(sub.results.some((r) => r.runEvents.__typename === "TokenEvent")).toBe(true);
        },
        { timeout: 10_000 },
      );
      const committed = await Promise.all(conversations.map((id) => messagesOf(first.url, id)));
      for (const [i, messages] of committed.entries()) {
        expect(messages).toEqual([
          ["USER", `first turn ${i}`],
          ["ASSISTANT", `Echo: first turn ${i}`],
          ["USER", `second turn ${i}`],
        ]);
      }

      first.child.kill("SIGKILL");
      expect(await first.exited).toBeNull(); // killed by the signal, no exit code
      expect(await Promise.all(ended)).toEqual(["socket lost", "socket lost", "socket lost"]);
      await client.dispose();
      await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));

      const second = await startServer(env);
      // The very first requests after "listening" already see the outcome: recovery ran before the server listened.
      const runs = await Promise.all(interrupted.map(async (id) => (await gqlOk(second.url, RUN, { id })).run));
      for (const run of runs) {
        expect(run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED" });
        expect(run.errorMessage).toMatch(/stopped before it finished/);
        expect(Date.parse(run.finishedAt)).toBeGreaterThanOrEqual(Date.parse(run.startedAt));
      }
      const log = second.output();
      const recoveredAt = log.indexOf("recovered runs left running by a stopped process");
      expect(recoveredAt).toBeGreaterThanOrEqual(0);
      expect(recoveredAt).toBeLessThan(log.indexOf("runledger listening"));
      for (const id of interrupted) expect(log.slice(recoveredAt, log.indexOf("runledger listening"))).toContain(id);

      for (const [i, conversationId] of conversations.entries()) {
        expect(await messagesOf(second.url, conversationId)).toEqual(committed[i]);
        const { conversation } = await gqlOk(second.url, CONVERSATION, { id: conversationId });
        // The count the conversation list shows is the thread's, not the one before the run.
        expect(conversation).toMatchObject({ next: ["agent"], resumable: true, activeRun: null, messageCount: committed[i]!.length });
      }

      fake.setResponder(defaultResponder);
      for (const [i, conversationId] of conversations.entries()) {
        const { resumeRun } = await gqlOk(second.url, RESUME_RUN, { conversationId });
        expect(resumeRun.__typename).toBe("ResumeRunSuccess");
        expect((await waitForRun(second.url, resumeRun.run.id)).status).toBe("COMPLETED");
        expect(await messagesOf(second.url, conversationId)).toEqual([...committed[i]!, ["ASSISTANT", `Echo: second turn ${i}`]]);
      }

      expect(await second.stop("SIGTERM")).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

const START_CAREFUL = /* GraphQL */ `
  mutation Start($message: String!) {
    startRun(input: { message: $message, agent: "careful" }) { __typename ... on StartRunSuccess { run { id } conversation { id } } ... on Error { code message } }
  }
`;
const ANSWER = /* GraphQL */ `
  mutation Answer($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) {
      __typename ... on ResumeRunSuccess { run { id } } ... on Error { code message } ... on InterruptMismatchError { pendingInterruptIds }
    }
  }
`;
const WAITING_STATE = /* GraphQL */ `
  query Waiting($id: ID!) {
    conversation(id: $id) {
      next resumable activeRun { id }
      pendingInterrupts { id node value state createdAt run { id } }
      messages { role content toolCallId }
      runs(first: 10) { edges { node { id status errorCode finishedAt usage { inputTokens outputTokens modelCalls timeToFirstTokenMs modelDurationMs }
        interrupts { id state answeredBy { id } } } } }
    }
  }
`;
const APPROVAL_EVENTS = /* GraphQL */ `
  subscription Events($runId: ID!) {
    runEvents(runId: $runId) {
      __typename seq
      ... on RunStatusEvent { status errorCode }
      ... on ToolResultEvent { toolCallId name content isError }
      ... on InterruptEvent { interrupt { id } }
    }
  }
`;

/** An agent whose calculator and MCP note tool wait for approval; the note tool logs each call it runs. */
function carefulAgent(dir: string): { file: string; notesLog: string } {
  const notesLog = path.join(dir, "notes.log");
  const server = {
    command: process.execPath,
    args: [path.join(ROOT, "test", "fixtures", "mcp", "stdio-server.mjs")],
    env: { MCP_FIXTURE_LOG: notesLog, MCP_FIXTURE_NAME: "notes" },
    tools: ["note"],
  };
  const config = {
    agents: {
      default: { type: "chat" },
      careful: { type: "chat", tools: ["calculator"], mcpServers: { notes: server }, requireApproval: ["calculator", "note"] },
    },
  };
  const file = path.join(dir, "agents.json");
  fs.writeFileSync(file, JSON.stringify(config));
  return { file, notesLog };
}

describe("SIGKILL while a run waits for approval, then a restart on the same database", () => {
  it(
    "keeps the run WAITING with the same pending questions, and the answer runs each approved tool exactly once",
    async () => {
      const database = tempDatabaseUrl("runledger-crash-waiting-");
      const { file, notesLog } = carefulAgent(database.dir);
      const env = { DATABASE_URL: database.url, OLLAMA_HOST: fake.url, RUNLEDGER_CONFIG: file };
      const noted = () =>
        fs.existsSync(notesLog)
          ? fs
              .readFileSync(notesLog, "utf8")
              .trim()
              .split("\n")
              .filter(Boolean)
              .map((l) => JSON.parse(l))
              .filter((e) => e.event === "noted")
          : [];
      fake.setResponder(defaultResponder);
      const calls = fake.requests.length;
      // Two tools in one step, both waiting for approval; after the answer, the model's reply.
      fake.enqueue(
        {
          kind: "toolCalls",
          calls: [
            { name: "note", args: { text: "the plan" } },
            { name: "calculator", args: { expression: "6 * 7" } },
          ],
        },
        { kind: "text", tokens: ["Noted ", "and ", "done."] },
      );

      const first = await startServer(env);
      const { startRun: started } = await gqlOk(first.url, START_CAREFUL, { message: "Note the plan and calculate 6 * 7." });
      expect(started.__typename).toBe("StartRunSuccess");
      const conversationId = started.conversation.id;
      expect(await waitForRun(first.url, started.run.id)).toMatchObject({ status: "WAITING", errorCode: null });
      const before = (await gqlOk(first.url, WAITING_STATE, { id: conversationId })).conversation;
      expect(before.pendingInterrupts).toHaveLength(1);
      expect(before.pendingInterrupts[0].value.toolCalls.map((c: any) => c.name)).toEqual(["note", "calculator"]);

      first.child.kill("SIGKILL");
      expect(await first.exited).toBeNull();

      const second = await startServer(env);
      const after = (await gqlOk(second.url, WAITING_STATE, { id: conversationId })).conversation;
      // Nothing was running, so recovery had nothing to interrupt: the run and its questions are as they were.
      expect(after).toEqual(before);
      expect(after).toMatchObject({ next: ["approve"], resumable: false, activeRun: null });
      const [waiting] = after.runs.edges.map((e: any) => e.node);
      expect(waiting).toMatchObject({
        id: started.run.id,
        status: "WAITING",
        errorCode: null,
        interrupts: [{ id: before.pendingInterrupts[0].id, state: "PENDING", answeredBy: null }],
      });
      expect(waiting.usage).toEqual({ ...expectedUsage(fake.requests.slice(calls)), timeToFirstTokenMs: null });
      expect(
        second
          .output()
          .split("\n")
          .filter((l) => l.includes("recovered runs") && l.includes(started.run.id)),
      ).toEqual([]);
      expect(noted()).toEqual([]);
      // Still a question: a plain resume is refused, as before the crash.
      const [question] = after.pendingInterrupts;
      expect((await gqlOk(second.url, ANSWER, { conversationId })).resumeRun).toMatchObject({
        __typename: "InterruptMismatchError",
        pendingInterruptIds: [question.id],
      });

      const approve = { toolCalls: question.value.toolCalls.map((c: any) => ({ id: c.id, decision: "approve" })) };
      const { resumeRun } = await gqlOk(second.url, ANSWER, { conversationId, responses: [{ interruptId: question.id, value: approve }] });
      expect(resumeRun.__typename).toBe("ResumeRunSuccess");
      const [overWs, overSse] = await Promise.all(
        [wsClient(second.url), sseClient(second.url)].map(async (client) =>
          (await collect(client, APPROVAL_EVENTS, { runId: resumeRun.run.id }).done).map((r) => r.runEvents),
        ),
      );
      expect(overSse).toEqual(overWs);
      expect(overWs!.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
      const results = overWs!.filter((e) => e.__typename === "ToolResultEvent");
      // The two approved calls may run side by side: each once, in either order.
      expect(results.map((r) => [r.name, r.content, r.isError]).sort()).toEqual([
        ["calculator", "42", false],
        ["note", "noted: the plan", false],
      ]);
      expect(noted().map((e) => e.text)).toEqual(["the plan"]);

      const done = (await gqlOk(second.url, WAITING_STATE, { id: conversationId })).conversation;
      expect(done).toMatchObject({ next: [], pendingInterrupts: [] });
      expect(done.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "TOOL", "ASSISTANT"]);
      expect(done.messages.at(-1).content).toBe("Noted and done.");
      expect(done.runs.edges.map((e: any) => e.node)).toMatchObject([
        { id: started.run.id, status: "WAITING", interrupts: [{ id: question.id, state: "ANSWERED", answeredBy: { id: resumeRun.run.id } }] },
        { id: resumeRun.run.id, status: "COMPLETED" },
      ]);

      expect(await second.stop("SIGTERM")).toBe(0);
      database.remove();
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
