// The API on every deployment: the same GraphQL requests and subscriptions,
// over graphql-ws and SSE, must give the same answers whichever backends hold
// the state and carry the events. Every mutation, status and event type of the
// contract appears here, so a new backend is held to all of them.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, expectedUsage, startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, ROOT, startTestApp, waitForRun } from "../../testkit/app.ts";
import { startServerProcess } from "../../testkit/processes.ts";
import { collect, gql, gqlOk, startRun } from "../../testkit/graphql.ts";
import { CANCEL_RUN, CONVERSATION, CONVERSATIONS_CHANGED, RESUME_RUN, RUN_EVENTS, START_RUN } from "../../testkit/documents.ts";
import { sleep, TRANSPORTS, until } from "../../testkit/streaming.ts";
import type { App } from "../../src/app.ts";
import { expectDerivedFieldsTrue } from "./derived-fields.ts";

/**
 * The agents every deployment serves: today's default; "careful", whose
 * calculator and MCP note tool wait for approval; two custom graphs, one that
 * streams custom events and tokens from its own node, one that asks a person.
 */
function writeAgentsFile(): { file: string; notesLog: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-agents-"));
  const notesLog = path.join(dir, "notes.log");
  const fixtures = path.join(ROOT, "test", "fixtures");
  const config = {
    agents: {
      default: { type: "chat" },
      careful: {
        type: "chat",
        description: "Asks before it calculates or writes a note.",
        tools: ["calculator"],
        mcpServers: {
          notes: {
            command: process.execPath,
            args: [path.join(fixtures, "mcp", "stdio-server.mjs")],
            env: { MCP_FIXTURE_LOG: notesLog, MCP_FIXTURE_NAME: "notes" },
            tools: ["note", "echo"],
          },
        },
        requireApproval: ["calculator", "note"],
      },
      planner: { type: "graph", description: "Plans, then answers.", module: path.join(fixtures, "graphs", "two-node.ts"), export: "graph" },
      interviewer: { type: "graph", module: path.join(fixtures, "graphs", "ask.ts"), export: "graph" },
      researcher: { type: "graph", module: path.join(fixtures, "graphs", "subgraph.ts"), export: "graph" },
    },
  };
  const file = path.join(dir, "agents.json");
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return { file, notesLog };
}

/** A deployment: the environment that selects its backends, and what to clean up after. */
export interface Deployment {
  name: string;
  env(): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }>;
  /** Instances are a cluster's workers: their events go through one relay (testCluster()), as WORKERS > 1 without Redis. */
  cluster?: boolean;
}

const RENAME = /* GraphQL */ `
  mutation Rename($id: ID!, $title: String!) {
    renameConversation(input: { conversationId: $id, title: $title }) { __typename ... on RenameConversationSuccess { conversation { id title } } ... on Error { code } }
  }
`;
const DELETE = /* GraphQL */ `
  mutation Delete($id: ID!) {
    deleteConversation(input: { conversationId: $id }) { __typename ... on DeleteConversationSuccess { conversationId } ... on Error { code } }
  }
`;
const CORRELATION = /* GraphQL */ `
  query Correlation($id: ID!) {
    conversation(id: $id) {
      next resumable messageCount
      checkpoints(first: 100) { edges { node { id step source next messageCount run { id } lastMessage { role } } } }
      runs(first: 20) { totalCount edges { node { id kind status errorCode checkpoints { id } messages { role content } failedTasks { node message checkpoint { id } } } } }
    }
  }
`;
const NODE = /* GraphQL */ `query Node($id: ID!) { node(id: $id) { __typename id } }`;
const AGENTS = /* GraphQL */ `query { agents { name description kind model tools { name source requiresApproval inputSchema } } }`;
const START_AGENT = /* GraphQL */ `
  mutation Start($message: String!, $agent: String, $conversationId: ID) {
    startRun(input: { message: $message, agent: $agent, conversationId: $conversationId }) {
      __typename ... on StartRunSuccess { run { id } conversation { id agentName agent { name kind } } } ... on Error { code message } ... on ValidationError { field }
    }
  }
`;
const ANSWER = /* GraphQL */ `
  mutation Answer($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) {
      __typename ... on ResumeRunSuccess { run { id kind status } } ... on Error { code message } ... on InterruptMismatchError { pendingInterruptIds } ... on ValidationError { field }
    }
  }
`;
const FORK = /* GraphQL */ `
  mutation Fork($checkpointId: ID!, $message: String) {
    forkConversation(input: { checkpointId: $checkpointId, message: $message }) {
      __typename ... on ForkConversationSuccess { conversation { id title agentName forkedFrom { conversation { id } checkpoint { id } } } run { id } } ... on Error { code message }
    }
  }
`;
const EVERY_EVENT = /* GraphQL */ `
  subscription Events($runId: ID!) {
    runEvents(runId: $runId) {
      __typename seq
      ... on RunStatusEvent { status errorCode }
      ... on TokenEvent { text node messageId }
      ... on ToolCallEvent { toolCallId name args }
      ... on ToolResultEvent { toolCallId name content isError }
      ... on CustomEvent { runId at name data }
      ... on InterruptEvent { interrupt { id node value state createdAt run { id } } }
    }
  }
`;
const STORED_EVENTS = /* GraphQL */ `
  query Stored($id: ID!) {
    run(id: $id) { customEvents { __typename seq runId at name data } messageNodes { messageId node seq } messages { id role } }
  }
`;
const WAITING = /* GraphQL */ `
  query Waiting($id: ID!) {
    conversation(id: $id) {
      next resumable messageCount
      pendingInterrupts { id node value state createdAt run { id status } }
      usage { inputTokens outputTokens modelCalls modelDurationMs }
      messages { role content toolCalls { id name args } toolCallId }
      runs(first: 20) { edges { node { id kind status startCheckpoint { id } usage { inputTokens outputTokens modelCalls timeToFirstTokenMs modelDurationMs }
        interrupts { id state answer answeredBy { id } } checkpoints { id } messages { role content } } } }
      checkpoints(first: 100) { edges { node { id run { id } } } }
    }
  }
`;
const USAGE = /* GraphQL */ `
  query Usage($id: ID!) {
    run(id: $id) { status partialOutput usage { inputTokens outputTokens modelCalls timeToFirstTokenMs modelDurationMs } conversation { usage { inputTokens outputTokens modelCalls modelDurationMs } } }
  }
`;
const LIST_COUNTS = /* GraphQL */ `query { conversations(first: 100) { edges { node { id messageCount } } } }`;
const STATES = /* GraphQL */ `
  query States($id: ID!) {
    conversation(id: $id) {
      next resumable messages { id role content toolCalls { id name args } toolCallId name }
      checkpoints(first: 100) { edges { node { id step source next state metadata parent { id } run { id kind } lastMessage { id role content } } } }
      runs(first: 20) { edges { node { id kind status startedBy checkpoints { id } messages { role content } edit { values asNode checkpoint { id } } } } }
    }
  }
`;
const GRAPHS = /* GraphQL */ `query { agents { name graph { nodes { id } edges { source target conditional } mermaid } } }`;
const EDIT_STATE = /* GraphQL */ `
  mutation Edit($checkpointId: ID!, $values: JSON!, $asNode: String, $key: String) {
    editState(input: { checkpointId: $checkpointId, values: $values, asNode: $asNode, idempotencyKey: $key }) {
      __typename
      ... on EditStateSuccess {
        run { id kind status errorCode startedAt finishedAt checkpoints { id } edit { values asNode checkpoint { id } } }
        conversation { id next resumable }
        checkpoint { id source next parent { id } run { id kind } state }
      }
      ... on Error { code message }
      ... on ValidationError { field }
      ... on NotFoundError { entity }
      ... on RunInProgressError { activeRunId }
    }
  }
`;
const LIST = /* GraphQL */ `
  query List($first: Int, $after: String) { conversations(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { id title latestRun { status } } } } }
`;

export function describeApiConformance(deployment: Deployment) {
  describe(`the API on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App & { databaseFile: string };
    let cleanup: () => Promise<void> = async () => {};

    let notesLog: string;
    let appEnv: Record<string, string>;

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      const agents = writeAgentsFile();
      notesLog = agents.notesLog;
      appEnv = { RUN_HEARTBEAT_MS: "200", RUN_LEASE_MS: "2000", RUNLEDGER_CONFIG: agents.file, ...selected.env };
      app = await startTestApp({ ollamaUrl: fake.url, env: appEnv });
    }, 60_000);
    /**
     * Another instance of the same deployment (the same database and event bus),
     * in a process of its own: instances are told apart by their process.
     */
    const secondInstance = () => startServerProcess({ ...appEnv, DATABASE_URL: appEnv.DATABASE_URL ?? `file:${app.databaseFile}`, OLLAMA_HOST: fake.url });
    afterAll(async () => {
      await app?.close();
      await cleanup();
      await fake?.close();
    });
    // After every scenario: each conversation's messageCount, updatedAt, latestRun and activeRun say what its thread and runs say.
    afterEach(() => expectDerivedFieldsTrue(app.url, () => app.services.runs.activeRunIds.length === 0));

    const start = (message: string, conversationId?: string) => startRun(app.url, message, conversationId);
    // A run's events, followed over graphql-ws and SSE at once: what a test asserts
    // of them holds on both transports, for the two streams must be equal.
    const events = async (runId: string) => {
      const [overWs, overSse] = await Promise.all(
        TRANSPORTS.map(async ({ client }) => (await collect(client(app.url), EVERY_EVENT, { runId }).done).map((r) => r.runEvents)),
      );
      expect(overSse, `run ${runId}'s events over SSE`).toEqual(overWs);
      return overWs!;
    };

    it("streams a run with a tool call to subscribers on both transports, then answers queries from what it stored", async () => {
      const { runId, conversationId } = await start("Please calculate 17 * 3");
      const [overWs, overSse] = await Promise.all(TRANSPORTS.map(({ client }) => collect(client(app.url), RUN_EVENTS, { runId }).done));
      const events = overWs!.map((r) => r.runEvents);
      expect(overSse!.map((r) => r.runEvents)).toEqual(events);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const types = events.map((e) => e.__typename);
      for (const type of ["RunStatusEvent", "ToolCallEvent", "ToolResultEvent", "TokenEvent"]) expect(types).toContain(type);
      expect(events.find((e) => e.__typename === "ToolCallEvent")).toMatchObject({ name: "calculator", args: { expression: "17 * 3" } });
      expect(events.find((e) => e.__typename === "ToolResultEvent")).toMatchObject({ content: "51", isError: false });
      expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED", errorCode: null });

      const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
      expect(conversation).toMatchObject({
        title: "Please calculate 17 * 3",
        next: [],
        resumable: false,
        activeRun: null,
        latestRun: { id: runId, status: "COMPLETED" },
      });
      expect(conversation.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
      expect(conversation.messages.at(-1).content).toBe("The result is 51.");
      expect(conversation.messageCount).toBe(4);
      const { conversation: correlated } = await gqlOk(app.url, CORRELATION, { id: conversationId });
      const checkpoints = correlated.checkpoints.edges.map((e: any) => e.node);
      expect(checkpoints.map((c: any) => c.source)).toEqual(["input", "loop", "loop", "loop", "loop"].map((s) => s.toUpperCase()));
      for (const checkpoint of checkpoints) expect(checkpoint.run).toEqual({ id: runId });
      const [run] = correlated.runs.edges.map((e: any) => e.node);
      expect(run.checkpoints.map((c: any) => c.id)).toEqual(checkpoints.map((c: any) => c.id));
      expect(run.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
      for (const [id, type] of [
        [conversationId, "Conversation"],
        [runId, "Run"],
        [checkpoints[0].id, "Checkpoint"],
      ]) {
        expect((await gqlOk(app.url, NODE, { id })).node).toEqual({ __typename: type, id });
      }
    });

    it("records a failed step against the failed run, and a resume that completes it", async () => {
      fake.enqueue({ kind: "errorLine", tokens: ["Par", "tial "], error: "the model broke" });
      const { runId, conversationId } = await start("This one fails first.");
      expect(await waitForRun(app.url, runId)).toMatchObject({
        status: "FAILED",
        errorCode: "MODEL_ERROR",
        errorMessage: "the model broke",
        partialOutput: "Partial ",
      });
      const failed = (await gqlOk(app.url, CORRELATION, { id: conversationId })).conversation;
      expect(failed).toMatchObject({ next: ["agent"], resumable: true });
      expect(failed.runs.edges[0].node.failedTasks).toEqual([{ node: "agent", message: "the model broke", checkpoint: { id: expect.any(String) } }]);

      const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
      expect(resumeRun.run).toMatchObject({ kind: "RESUME", status: "RUNNING", input: null });
      expect(await waitForRun(app.url, resumeRun.run.id)).toMatchObject({ status: "COMPLETED" });
      const done = (await gqlOk(app.url, CORRELATION, { id: conversationId })).conversation;
      expect(done).toMatchObject({ next: [], resumable: false });
      const runs = done.runs.edges.map((e: any) => e.node);
      expect(runs.map((r: any) => [r.kind, r.status, r.errorCode])).toEqual([
        ["START", "FAILED", "MODEL_ERROR"],
        ["RESUME", "COMPLETED", null],
      ]);
      expect(runs[0].failedTasks).toHaveLength(1);
      expect(runs[1].failedTasks).toEqual([]);
      expect(runs[1].checkpoints).toHaveLength(1);
      expect(runs[1].messages.map((m: any) => m.content)).toEqual(["Echo: This one fails first."]);
      expect((await gqlOk(app.url, RESUME_RUN, { conversationId })).resumeRun).toMatchObject({ __typename: "NothingToResumeError", code: "NOTHING_TO_RESUME" });
    });

    it("puts a run whose call the model turns away (503) back in the queue, then runs it on: told on both transports, its checkpoints its own", async () => {
      const busy = { kind: "httpError", status: 503, error: "server busy, please try again.  maximum pending requests exceeded" } as const;
      fake.enqueue(busy, busy);
      const { runId, conversationId } = await start("A busy model.");
      const seen = await events(runId);
      expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
      expect(seen.filter((e) => e.__typename === "RunStatusEvent").map((e) => e.status)).toEqual([
        "RUNNING",
        "QUEUED",
        "RUNNING",
        "QUEUED",
        "RUNNING",
        "COMPLETED",
      ]);
      expect(await waitForRun(app.url, runId)).toMatchObject({ status: "COMPLETED", errorCode: null });
      const { conversation } = await gqlOk(app.url, CORRELATION, { id: conversationId });
      const [run] = conversation.runs.edges.map((e: any) => e.node);
      expect(run.messages.map((m: any) => m.content)).toEqual(["A busy model.", "Echo: A busy model."]);
      expect(run.checkpoints.map((c: any) => c.id)).toEqual(conversation.checkpoints.edges.map((e: any) => e.node.id));
      for (const { node } of conversation.checkpoints.edges) expect(node.run).toEqual({ id: runId });
    });

    it("cancels a running run, refuses a second start meanwhile, and keeps its step resumable", async () => {
      fake.enqueue({ kind: "silence", tokens: ["Working "] });
      const { runId, conversationId } = await start("Take your time.");
      await until(() => fake.openChatRequests() > 0, "the model request");
      const second = (await gqlOk(app.url, START_RUN, { message: "and another", conversationId })).startRun;
      expect(second).toMatchObject({ __typename: "RunInProgressError", code: "RUN_IN_PROGRESS", activeRunId: runId });
      expect((await gql(app.url, DELETE, { id: conversationId })).data.deleteConversation.__typename).toBe("RunInProgressError");
      const { cancelRun } = await gqlOk(app.url, CANCEL_RUN, { runId });
      expect(cancelRun).toMatchObject({ __typename: "CancelRunSuccess", run: { id: runId, status: "CANCELLED", errorCode: "CANCELLED" } });
      expect(await waitForRun(app.url, runId)).toMatchObject({ status: "CANCELLED", partialOutput: "Working " });
      expect((await gqlOk(app.url, CANCEL_RUN, { runId })).cancelRun.__typename).toBe("RunNotActiveError");
      expect((await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation).toMatchObject({ resumable: true, next: ["agent"] });
    });

    it("keeps the usage of the model calls a run finished when another instance cancels it", { timeout: PROCESS_TEST_TIMEOUT_MS }, async () => {
      const other = await secondInstance();
      try {
        const calls = fake.requests.length;
        // The model asks for a tool, the tool answers, then the model streams a token and stalls.
        fake.enqueue({ kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "4 * 5" } }] }, { kind: "silence", tokens: ["Thinking "] });
        const { runId, conversationId } = await start("Multiply four by five, slowly.");
        await until(() => fake.requests.length === calls + 2 && fake.openChatRequests() > 0, "the second model request");
        const { cancelRun } = await gqlOk(other.url, CANCEL_RUN, { runId });
        expect(cancelRun).toMatchObject({ __typename: "CancelRunSuccess", run: { id: runId, status: "CANCELLED" } });
        expect((await events(runId)).at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "CANCELLED", errorCode: "CANCELLED" });
        // The executing instance adds what only it knew once it has stopped: the streamed text, and the usage.
        await until(async () => (await gqlOk(other.url, USAGE, { id: runId })).run.partialOutput === "Thinking ", "the executing instance's record");
        const [asked, stalled] = fake.requests.slice(calls);
        expect(stalled!.reported).toBeUndefined();
        const usage = expectedUsage([asked!]);
        expect(usage).toMatchObject({ modelCalls: 1, outputTokens: 1 });
        for (const instance of [app, other]) {
          const { run } = await gqlOk(instance.url, USAGE, { id: runId });
          expect(run).toMatchObject({ status: "CANCELLED", usage: { ...usage, timeToFirstTokenMs: expect.any(Number) } });
          expect(run.conversation.usage).toEqual(usage);
        }
        // The cancelling instance counted the thread as it found it: the question, the tool call and its result.
        for (const instance of [app, other]) {
          expect((await gqlOk(instance.url, CONVERSATION, { id: conversationId })).conversation).toMatchObject({
            resumable: true,
            activeRun: null,
            messageCount: 3,
          });
        }
      } finally {
        expect(await other.stop()).toBe(0);
      }
    });

    it(
      "counts the thread's messages of a run recovered after its instance was killed, once its lease ran out",
      { timeout: PROCESS_TEST_TIMEOUT_MS },
      async () => {
        const other = await secondInstance();
        let runId: string, conversationId: string;
        try {
          fake.enqueue({ kind: "silence", tokens: ["Half an "] });
          ({ runId, conversationId } = await startRun(other.url, "Answer slowly, then die."));
          await until(async () => {
            const { run } = await gqlOk(other.url, `query ($id: ID!) { run(id: $id) { status errorMessage } }`, { id: runId });
            if (run.status !== "RUNNING") throw new Error(`run ended ${JSON.stringify(run)}`);
            return fake.openChatRequests() > 0;
          }, "the model request");
        } finally {
          other.child.kill("SIGKILL");
        }
        expect(await other.exited).toBeNull();
        // This instance sweeps every RUN_HEARTBEAT_MS and takes the run once the dead one's lease (RUN_LEASE_MS) is over.
        expect(await waitForRun(app.url, runId)).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED" });
        const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
        expect(conversation).toMatchObject({ messageCount: 1, activeRun: null, latestRun: { id: runId, status: "INTERRUPTED" }, resumable: true });
        expect(conversation.messages.map((m: any) => m.role)).toEqual(["USER"]);
        const listed = (await gqlOk(app.url, LIST_COUNTS, {})).conversations.edges.map((e: any) => e.node);
        expect(listed.find((c: any) => c.id === conversationId)).toEqual({ id: conversationId, messageCount: 1 });
      },
    );

    it("tells conversationsChanged subscribers of creations, renames and deletions, on both transports", async () => {
      const { runId, conversationId } = await start("Soon renamed.");
      await waitForRun(app.url, runId);
      // A subscription hears the changes published once it is listening, and nothing says when that is
      // (a fixed wait was too short for a loaded machine): it is renamed until a rename reaches it.
      const renamedUntilHeard = async (stream: { results: any[] }) => {
        const titles = new Set<string>();
        await until(async () => {
          const title = `Renamed ${randomUUID().slice(0, 8)}`;
          titles.add(title);
          expect((await gqlOk(app.url, RENAME, { id: conversationId, title })).renameConversation.__typename).toBe("RenameConversationSuccess");
          await sleep(50);
          return stream.results.some((r) => r.conversationsChanged.id === conversationId && titles.has(r.conversationsChanged.title));
        }, "a rename notice");
      };
      for (const { client } of TRANSPORTS) {
        const stream = collect(client(app.url), CONVERSATIONS_CHANGED);
        await renamedUntilHeard(stream);
        stream.dispose();
      }
      const stream = collect(TRANSPORTS[0]!.client(app.url), CONVERSATIONS_CHANGED);
      await renamedUntilHeard(stream);
      expect((await gqlOk(app.url, DELETE, { id: conversationId })).deleteConversation).toEqual({ __typename: "DeleteConversationSuccess", conversationId });
      const notice = (await until(() => stream.results.find((r) => r.conversationsChanged.deleted), "the deletion notice")).conversationsChanged;
      expect(notice).toMatchObject({ id: conversationId, deleted: true, activeRun: null, latestRun: null });
      stream.dispose();
      expect((await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation).toBeNull();
      expect((await gqlOk(app.url, NODE, { id: runId })).node).toBeNull();
    });

    it("pages the conversation list newest first, and exports a conversation with each checkpoint's run", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const { runId, conversationId } = await start(`list ${i}`);
        await waitForRun(app.url, runId);
        ids.push(conversationId);
      }
      const first = (await gqlOk(app.url, LIST, { first: 2 })).conversations;
      expect(first.edges.map((e: any) => e.node.id)).toEqual([ids[2], ids[1]]);
      expect(first.pageInfo.hasNextPage).toBe(true);
      const second = (await gqlOk(app.url, LIST, { first: 1, after: first.pageInfo.endCursor })).conversations;
      expect(second.edges.map((e: any) => e.node.id)).toEqual([ids[0]]);
      expect(second.totalCount).toBe(first.totalCount);

      const response = await fetch(`${app.url}/api/conversations/${ids[0]}/export?format=jsonl`);
      const lines = (await response.text())
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => l.source)).toEqual(["input", "loop", "loop"]);
      const { conversation } = await gqlOk(app.url, CORRELATION, { id: ids[0] });
      const runId = conversation.runs.edges[0].node.id;
      for (const line of lines) expect(line.run_id).toBe(runId);
      expect(lines.at(-1)).toMatchObject({ message_count: 2, last_message: { role: "assistant", content: "Echo: list 0" } });
      fake.setResponder(defaultResponder);
    });
    describe("agents, approvals, interrupts, forks and usage", () => {
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
      const waitingConversation = async (id: string) => (await gqlOk(app.url, WAITING, { id })).conversation;

      it("lists the configured agents with their tools, MCP tools included, and refuses an unknown one", async () => {
        const { agents } = await gqlOk(app.url, AGENTS);
        expect(agents.map((a: any) => [a.name, a.kind])).toEqual([
          ["default", "CHAT"],
          ["careful", "CHAT"],
          ["planner", "GRAPH"],
          ["interviewer", "GRAPH"],
          ["researcher", "GRAPH"],
        ]);
        const careful = agents[1];
        expect(careful.description).toBe("Asks before it calculates or writes a note.");
        await until(async () => (await gqlOk(app.url, AGENTS)).agents[1].tools.length === 3, "the MCP server's tools");
        const tools = (await gqlOk(app.url, AGENTS)).agents[1].tools;
        expect(tools.map((t: any) => [t.name, t.source, t.requiresApproval]).sort()).toEqual([
          ["calculator", "builtin", true],
          ["echo", "mcp:notes", false],
          ["note", "mcp:notes", true],
        ]);
        expect(tools.find((t: any) => t.name === "note").inputSchema).toMatchObject({ type: "object", properties: { text: { type: "string" } } });
        expect(agents[2].tools).toEqual([]);
        const refused = (await gqlOk(app.url, START_AGENT, { message: "hi", agent: "nobody" })).startRun;
        expect(refused).toMatchObject({ __typename: "ValidationError", code: "VALIDATION", field: "agent" });
      });

      it("runs a custom graph: its custom events and tokens from its own node, stored with the run as they streamed, its checkpoints correlated; a conversation keeps its agent", async () => {
        const { startRun } = await gqlOk(app.url, START_AGENT, { message: "What is a prime?", agent: "planner" });
        expect(startRun.conversation).toMatchObject({ agentName: "planner", agent: { name: "planner", kind: "GRAPH" } });
        const all = await events(startRun.run.id);
        const custom = all.find((e) => e.__typename === "CustomEvent");
        expect(custom).toMatchObject({ name: "plan", data: { steps: ["read the question", "answer it briefly"], question: "What is a prime?" } });
        const tokens = all.filter((e) => e.__typename === "TokenEvent");
        expect(tokens.length).toBeGreaterThan(0);
        for (const token of tokens) expect(token.node).toBe("answer");
        expect(all.indexOf(custom)).toBeLessThan(all.indexOf(tokens[0]));
        expect(all.at(-1)).toMatchObject({ status: "COMPLETED" });
        // Stored as they streamed, by the time the terminal status is out: the custom events as runEvents carried them,
        // and each streamed message's node with its first token's seq.
        const { run: stored } = await gqlOk(app.url, STORED_EVENTS, { id: startRun.run.id });
        expect(stored.customEvents).toEqual(all.filter((e) => e.__typename === "CustomEvent"));
        const firstTokens = tokens.filter((t, i) => tokens.findIndex((u) => u.messageId === t.messageId) === i);
        expect(stored.messageNodes).toEqual(firstTokens.map((t) => ({ messageId: t.messageId, node: "answer", seq: t.seq })));
        expect(stored.messageNodes.map((n: { messageId: string }) => n.messageId)).toEqual(
          stored.messages.filter((m: { role: string }) => m.role === "ASSISTANT").map((m: { id: string }) => m.id),
        );
        const conversation = await waitingConversation(startRun.conversation.id);
        expect(conversation.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT"]);
        const [run] = conversation.runs.edges.map((e: any) => e.node);
        expect(run.checkpoints.length).toBe(conversation.checkpoints.edges.length);
        for (const edge of conversation.checkpoints.edges) expect(edge.node.run).toEqual({ id: run.id });
        const other = (await gqlOk(app.url, START_AGENT, { message: "again", agent: "default", conversationId: startRun.conversation.id })).startRun;
        expect(other).toMatchObject({ __typename: "ValidationError", field: "agent" });
      });

      it("pauses for approval of two tool calls in one step, refuses wrong answers typed, and runs each approved or edited call once", async () => {
        fake.enqueue(
          {
            kind: "toolCalls",
            calls: [
              { name: "calculator", args: { expression: "6 * 7" } },
              { name: "note", args: { text: "draft" } },
              { name: "echo", args: { text: "no approval needed" } },
            ],
          },
          { kind: "text", tokens: ["All ", "done."] },
        );
        const before = noted().length;
        const calls = fake.requests.length;
        const { startRun } = await gqlOk(app.url, START_AGENT, { message: "Calculate and note it.", agent: "careful" });
        const conversationId = startRun.conversation.id;
        const first = await events(startRun.run.id);
        const interruptEvent = first.find((e) => e.__typename === "InterruptEvent");
        expect(first.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "WAITING", errorCode: null });
        expect(first.indexOf(interruptEvent)).toBe(first.length - 2);
        const asked = interruptEvent.interrupt;
        expect(asked).toMatchObject({ node: "approve", state: "PENDING", run: { id: startRun.run.id }, value: { type: "tool_approval" } });
        expect(asked.value.toolCalls.map((c: any) => [c.name, c.args])).toEqual([
          ["calculator", { expression: "6 * 7" }],
          ["note", { text: "draft" }],
        ]);
        expect(first.filter((e) => e.__typename === "ToolResultEvent")).toEqual([]);
        expect(noted().length).toBe(before);

        const waiting = await waitingConversation(conversationId);
        expect(waiting).toMatchObject({ next: ["approve"], resumable: false });
        // The event says when it was asked as the stored interrupt does, on every deployment (through Redis too).
        expect(asked.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(waiting.pendingInterrupts).toEqual([
          { id: asked.id, node: "approve", value: asked.value, state: "PENDING", createdAt: asked.createdAt, run: { id: startRun.run.id, status: "WAITING" } },
        ]);
        // Nothing to cancel, no plain resume, no answers to the wrong question or half an answer.
        expect((await gqlOk(app.url, CANCEL_RUN, { runId: startRun.run.id })).cancelRun).toMatchObject({ __typename: "RunNotActiveError" });
        expect((await gqlOk(app.url, ANSWER, { conversationId })).resumeRun).toMatchObject({
          __typename: "InterruptMismatchError",
          code: "INTERRUPT_MISMATCH",
          pendingInterruptIds: [asked.id],
        });
        const [calc, note] = asked.value.toolCalls;
        const answer = {
          toolCalls: [
            { id: calc.id, decision: "approve" },
            { id: note.id, decision: "edit", args: { text: "final" } },
          ],
        };
        expect((await gqlOk(app.url, ANSWER, { conversationId, responses: [{ interruptId: "not-pending", value: answer }] })).resumeRun.__typename).toBe(
          "InterruptMismatchError",
        );
        const half = { toolCalls: [{ id: calc.id, decision: "approve" }] };
        expect((await gqlOk(app.url, ANSWER, { conversationId, responses: [{ interruptId: asked.id, value: half }] })).resumeRun).toMatchObject({
          __typename: "ValidationError",
          field: "responses",
        });
        expect((await waitingConversation(conversationId)).runs.edges).toHaveLength(1);
        // The refusals added nothing to the waiting run's stream either.
        expect(await events(startRun.run.id)).toEqual(first);

        const { resumeRun } = await gqlOk(app.url, ANSWER, { conversationId, responses: [{ interruptId: asked.id, value: answer }] });
        expect(resumeRun).toMatchObject({ __typename: "ResumeRunSuccess", run: { kind: "RESUME", status: "RUNNING" } });
        const second = await events(resumeRun.run.id);
        expect(second.at(-1)).toMatchObject({ status: "COMPLETED" });
        const results = second.filter((e) => e.__typename === "ToolResultEvent");
        expect(results.map((r) => [r.name, r.content, r.isError]).sort()).toEqual([
          ["calculator", "42", false],
          ["echo", "no approval needed", false],
          ["note", "noted: final", false],
        ]);
        expect(
          noted()
            .slice(before)
            .map((e) => e.text),
        ).toEqual(["final"]);

        const done = await waitingConversation(conversationId);
        expect(done).toMatchObject({ next: [], pendingInterrupts: [] });
        const [waitingRun, resumed] = done.runs.edges.map((e: any) => e.node);
        expect(waitingRun).toMatchObject({
          status: "WAITING",
          interrupts: [{ id: asked.id, state: "ANSWERED", answer, answeredBy: { id: resumeRun.run.id } }],
        });
        // The resume's writes land under the checkpoint the first run waited at.
        expect(resumed.startCheckpoint.id).toBe(waitingRun.checkpoints.at(-1).id);
        expect(resumed.messages.map((m: any) => m.role)).toEqual(["TOOL", "TOOL", "TOOL", "ASSISTANT"]);
        expect(done.messages.find((m: any) => m.toolCalls.length).toolCalls.find((c: any) => c.name === "note").args).toEqual({ text: "final" });
        // Each run's usage is what Ollama reported for its one call: the three tool calls, then two tokens.
        const [asking, answering] = fake.requests.slice(calls);
        expect(fake.requests.slice(calls)).toHaveLength(2);
        const [askingUsage, answeringUsage] = [expectedUsage([asking!]), expectedUsage([answering!])];
        expect(askingUsage).toMatchObject({ modelCalls: 1, outputTokens: 3 });
        expect(answeringUsage).toMatchObject({ modelCalls: 1, outputTokens: 2 });
        expect(waitingRun.usage).toEqual({ ...askingUsage, timeToFirstTokenMs: null });
        expect(resumed.usage).toEqual({ ...answeringUsage, timeToFirstTokenMs: expect.any(Number) });
        expect(done.usage).toEqual({
          inputTokens: askingUsage.inputTokens + answeringUsage.inputTokens,
          outputTokens: 5,
          modelCalls: 2,
          modelDurationMs: askingUsage.modelDurationMs + answeringUsage.modelDurationMs,
        });
      });

      it("lets the model hear a rejection's reason as the tool's result, and a new message supersede a pending question", async () => {
        fake.enqueue({ kind: "toolCalls", calls: [{ name: "note", args: { text: "secret" } }] }, { kind: "text", tokens: ["Understood."] });
        const before = noted().length;
        const { startRun } = await gqlOk(app.url, START_AGENT, { message: "Note the secret.", agent: "careful" });
        const asked = (await events(startRun.run.id)).find((e) => e.__typename === "InterruptEvent").interrupt;
        const conversationId = startRun.conversation.id;
        const reject = { toolCalls: [{ id: asked.value.toolCalls[0].id, decision: "reject", reason: "Secrets stay off the record." }] };
        const { resumeRun } = await gqlOk(app.url, ANSWER, { conversationId, responses: [{ interruptId: asked.id, value: reject }] });
        const after = await events(resumeRun.run.id);
        expect(after.find((e) => e.__typename === "ToolResultEvent")).toMatchObject({ name: "note", content: "Secrets stay off the record.", isError: true });
        expect(after.at(-1)).toMatchObject({ status: "COMPLETED" });
        expect(fake.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: "tool", content: "Secrets stay off the record." });
        expect(noted().length).toBe(before);

        fake.enqueue({ kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "1 + 1" } }] });
        const again = (await gqlOk(app.url, START_AGENT, { message: "Calculate 1 + 1.", conversationId })).startRun;
        const question = (await events(again.run.id)).find((e) => e.__typename === "InterruptEvent").interrupt;
        const next = (await gqlOk(app.url, START_AGENT, { message: "Never mind; just say hi.", conversationId })).startRun;
        expect((await events(next.run.id)).at(-1)).toMatchObject({ status: "COMPLETED" });
        const state = await waitingConversation(conversationId);
        expect(state.pendingInterrupts).toEqual([]);
        const waited = state.runs.edges.map((e: any) => e.node).find((r: any) => r.id === again.run.id);
        expect(waited.interrupts).toEqual([{ id: question.id, state: "SUPERSEDED", answer: null, answeredBy: null }]);
        expect(state.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "Echo: Never mind; just say hi." });
      });

      it("pauses a custom graph on its own interrupt and resumes it with the answer", async () => {
        const { startRun } = await gqlOk(app.url, START_AGENT, { message: "the weather", agent: "interviewer" });
        const asked = (await events(startRun.run.id)).find((e) => e.__typename === "InterruptEvent").interrupt;
        expect(asked).toMatchObject({ node: "ask", value: { question: 'Who should answer "the weather"?' } });
        const { resumeRun } = await gqlOk(app.url, ANSWER, {
          conversationId: startRun.conversation.id,
          responses: [{ interruptId: asked.id, value: { name: "Ada" } }],
        });
        expect((await events(resumeRun.run.id)).at(-1)).toMatchObject({ status: "COMPLETED" });
        const done = await waitingConversation(startRun.conversation.id);
        expect(done.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "Ada will answer: the weather" });
      });

      it("forks a failed run's checkpoint into a new conversation that completes it, leaving the source untouched; usage sums a failure and its resume", async () => {
        fake.enqueue({ kind: "errorLine", tokens: ["Half "], error: "the model fell over" });
        const { runId, conversationId } = await start("Fork me.");
        expect(await waitForRun(app.url, runId)).toMatchObject({ status: "FAILED" });
        const source = await waitingConversation(conversationId);
        const sourceCheckpoints = source.checkpoints.edges.map((e: any) => e.node.id);
        const forkPoint = sourceCheckpoints.at(-1);

        const { forkConversation } = await gqlOk(app.url, FORK, { checkpointId: forkPoint });
        expect(forkConversation).toMatchObject({
          __typename: "ForkConversationSuccess",
          run: null,
          conversation: { title: "Fork me. (fork)", agentName: "default", forkedFrom: { conversation: { id: conversationId }, checkpoint: { id: forkPoint } } },
        });
        const forkId = forkConversation.conversation.id;
        const fork = await waitingConversation(forkId);
        expect(fork).toMatchObject({ next: ["agent"], resumable: true, messageCount: source.messages.length });
        expect(fork.messages).toEqual(source.messages);
        const copied = fork.checkpoints.edges.map((e: any) => e.node);
        expect(copied).toHaveLength(sourceCheckpoints.length);
        for (const checkpoint of copied) {
          expect(checkpoint.run).toBeNull();
          expect(sourceCheckpoints).not.toContain(checkpoint.id);
          expect((await gqlOk(app.url, NODE, { id: checkpoint.id })).node).toEqual({ __typename: "Checkpoint", id: checkpoint.id });
        }

        const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId: forkId });
        expect(await waitForRun(app.url, resumeRun.run.id)).toMatchObject({ status: "COMPLETED" });
        const completed = await waitingConversation(forkId);
        expect(completed.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "Echo: Fork me." });
        const [resumed] = completed.runs.edges.map((e: any) => e.node);
        expect(resumed.startCheckpoint.id).toBe(copied.at(-1).id);
        expect(resumed.checkpoints).toHaveLength(1);
        expect(resumed.messages.map((m: any) => m.content)).toEqual(["Echo: Fork me."]);
        // The source did not move.
        const after = await waitingConversation(conversationId);
        expect(after.checkpoints.edges.map((e: any) => e.node.id)).toEqual(sourceCheckpoints);
        expect(after).toMatchObject({ next: ["agent"], resumable: true });

        // The source's own resume: usage sums the failed run (its one model call broke, so it counts nothing) and the resume.
        const calls = fake.requests.length;
        const sourceResume = (await gqlOk(app.url, RESUME_RUN, { conversationId })).resumeRun;
        await waitForRun(app.url, sourceResume.run.id);
        const summed = await waitingConversation(conversationId);
        const runs = summed.runs.edges.map((e: any) => e.node);
        expect(runs.map((r: any) => r.status)).toEqual(["FAILED", "COMPLETED"]);
        expect(runs[0].usage).toEqual({ inputTokens: 0, outputTokens: 0, modelCalls: 0, modelDurationMs: 0, timeToFirstTokenMs: expect.any(Number) });
        const resumedUsage = expectedUsage(fake.requests.slice(calls));
        expect(resumedUsage).toMatchObject({ modelCalls: 1, outputTokens: 3 });
        expect(runs[1].usage).toEqual({ ...resumedUsage, timeToFirstTokenMs: expect.any(Number) });
        expect(summed.usage).toEqual(resumedUsage);

        // A fork with a message starts its run at once; deleting the source leaves forks without an origin.
        const withMessage = (await gqlOk(app.url, FORK, { checkpointId: sourceCheckpoints[0], message: "A different question." })).forkConversation;
        expect(withMessage.run).not.toBeNull();
        expect(await waitForRun(app.url, withMessage.run.id)).toMatchObject({ status: "COMPLETED" });
        expect((await gqlOk(app.url, DELETE, { id: conversationId })).deleteConversation.__typename).toBe("DeleteConversationSuccess");
        expect((await gqlOk(app.url, FORK, { checkpointId: forkPoint })).forkConversation).toMatchObject({ __typename: "NotFoundError" });
        const orphan = (
          await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { forkedFrom { conversation { id } } messages { content } } }`, { id: forkId })
        ).conversation;
        expect(orphan.forkedFrom).toBeNull();
        expect(orphan.messages.at(-1).content).toBe("Echo: Fork me.");
      });

      it("counts the model calls a failed run finished in its usage, and sums them with its resume's", async () => {
        const calls = fake.requests.length;
        // The model asks for a tool and gets its result, then dies on its next call.
        fake.enqueue(
          { kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "2 + 3" } }] },
          { kind: "errorLine", tokens: ["The "], error: "the model died" },
        );
        const { runId, conversationId } = await start("Add two and three.");
        expect(await waitForRun(app.url, runId)).toMatchObject({ status: "FAILED", errorCode: "MODEL_ERROR", partialOutput: "The " });
        const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
        expect(await waitForRun(app.url, resumeRun.run.id)).toMatchObject({ status: "COMPLETED" });
        const [asked, died, answered, ...more] = fake.requests.slice(calls);
        expect(more).toEqual([]);
        expect(died!.reported).toBeUndefined();

        const conversation = await waitingConversation(conversationId);
        expect(conversation.messages.map((m: any) => [m.role, m.content])).toEqual([
          ["USER", "Add two and three."],
          ["ASSISTANT", ""],
          ["TOOL", "5"],
          ["ASSISTANT", "The result is 5."],
        ]);
        const [failed, resumed] = conversation.runs.edges.map((e: any) => e.node);
        expect([failed.status, resumed.status]).toEqual(["FAILED", "COMPLETED"]);
        // The call that broke counts nothing; the finished one what Ollama reported, its nanoseconds in milliseconds.
        const failedUsage = expectedUsage([asked!, died!]);
        expect(failedUsage).toMatchObject({ modelCalls: 1, outputTokens: 1 });
        expect(failedUsage.modelDurationMs).toBeGreaterThan(0);
        expect(failed.usage).toEqual({ ...failedUsage, timeToFirstTokenMs: expect.any(Number) });
        const resumedUsage = expectedUsage([answered!]);
        expect(resumedUsage).toMatchObject({ modelCalls: 1, outputTokens: 4 });
        expect(resumed.usage).toEqual({ ...resumedUsage, timeToFirstTokenMs: expect.any(Number) });
        expect(conversation.usage).toEqual({
          inputTokens: failedUsage.inputTokens + resumedUsage.inputTokens,
          outputTokens: 5,
          modelCalls: 2,
          modelDurationMs: failedUsage.modelDurationMs + resumedUsage.modelDurationMs,
        });
      });
    });

    describe("state, graphs and edits", () => {
      const states = async (id: string) => (await gqlOk(app.url, STATES, { id })).conversation;
      const checkpointsOf = (conversation: any) => conversation.checkpoints.edges.map((e: any) => e.node);

      it("reads every checkpoint's state (messages typed as Message) and metadata", async () => {
        const { runId, conversationId } = await start("Please calculate 17 * 3");
        expect(await waitForRun(app.url, runId)).toMatchObject({ status: "COMPLETED" });
        const conversation = await states(conversationId);
        const checkpoints = checkpointsOf(conversation);
        const [input, ...rest] = checkpoints;
        expect(input.metadata).toMatchObject({ source: "input", step: -1 });
        expect(input.state.messages ?? []).toEqual([]);
        for (const checkpoint of checkpoints) {
          expect(checkpoint.metadata).toMatchObject({ source: checkpoint.source.toLowerCase(), step: checkpoint.step });
          const last = checkpoint.state.messages?.at(-1) ?? null;
          expect(last && { id: last.id, role: last.role, content: last.content }).toEqual(checkpoint.lastMessage);
        }
        // The head's state holds the thread's messages exactly as Conversation.messages gives them.
        expect(rest.at(-1).state.messages).toEqual(conversation.messages);
        expect(conversation.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
        expect(conversation.messages[1].toolCalls).toEqual([{ id: expect.any(String), name: "calculator", args: { expression: "17 * 3" } }]);
        // Unknown checkpoints and other kinds of node have no state to show.
        const missing = (await gqlOk(app.url, `query($id: ID!) { node(id: $id) { ... on Checkpoint { state } } }`, { id: randomUUID() })).node;
        expect(missing).toBeNull();
      });

      it("draws each agent's graph from LangGraph's: conditional edges marked, a subgraph's nodes included, and Mermaid text", async () => {
        const { agents } = await gqlOk(app.url, GRAPHS);
        const byName = Object.fromEntries(agents.map((a: any) => [a.name, a.graph]));
        const edges = (name: string) => byName[name].edges.map((e: any) => `${e.source}${e.conditional ? " -.-> " : " --> "}${e.target}`).sort();
        expect(byName.default.nodes.map((n: any) => n.id).sort()).toEqual(["__end__", "__start__", "agent", "approve", "tools"]);
        expect(edges("default")).toEqual(
          [
            "__start__ --> agent",
            "agent -.-> __end__",
            "agent -.-> approve",
            "agent -.-> tools",
            "approve -.-> agent",
            "approve -.-> tools",
            "tools --> agent",
          ].sort(),
        );
        expect(byName.default.mermaid).toMatch(/^graph TD;/);
        expect(byName.default.mermaid).toContain("agent -.-> tools;");
        expect(edges("planner")).toEqual(["__start__ --> plan", "answer --> __end__", "plan --> answer"]);
        expect(byName.researcher.nodes.map((n: any) => n.id)).toEqual(
          expect.arrayContaining(["research:brief", "research:model", "research:lookup", "answer"]),
        );
        expect(edges("researcher")).toEqual(expect.arrayContaining(["research:model -.-> research:lookup", "research:lookup --> research:model"]));
        expect(byName.researcher.mermaid).toContain("subgraph research");
      });

      it("edits a past checkpoint as an EDIT run that owns the checkpoint it writes; refusals are typed and write nothing; a resume runs on from the edit", async () => {
        const { runId, conversationId } = await start("Say something.");
        expect(await waitForRun(app.url, runId)).toMatchObject({ status: "COMPLETED" });
        const before = await states(conversationId);
        const asked = checkpointsOf(before).find((c: any) => c.lastMessage?.role === "USER" && c.next.includes("agent"));
        expect(asked).toBeDefined();
        const question = asked.state.messages.at(-1);
        const edited = { ...question, content: "Say something else." };
        const edit = (variables: Record<string, unknown>) => gqlOk(app.url, EDIT_STATE, variables).then((d) => d.editState);

        // Refusals: each typed, none recorded.
        expect(await edit({ checkpointId: randomUUID(), values: { messages: [edited] } })).toMatchObject({ __typename: "NotFoundError", entity: "Checkpoint" });
        expect(await edit({ checkpointId: "not-an-id", values: { messages: [edited] } })).toMatchObject({
          __typename: "ValidationError",
          field: "checkpointId",
        });
        for (const values of [[edited], {}, { nowhere: 1 }, { messages: [{ bad: 1 }] }, { messages: [{ role: "TOOL", content: "no call id" }] }]) {
          expect(await edit({ checkpointId: asked.id, values }), JSON.stringify(values)).toMatchObject({ __typename: "ValidationError", field: "values" });
        }
        expect(await edit({ checkpointId: asked.id, values: { messages: [edited] }, asNode: "nowhere" })).toMatchObject({
          __typename: "ValidationError",
          field: "asNode",
        });
        expect((await states(conversationId)).runs.edges).toHaveLength(1);
        expect(checkpointsOf(await states(conversationId))).toHaveLength(checkpointsOf(before).length);

        // The edit: a new checkpoint under the edited one, written as the input, so the agent runs next.
        const key = randomUUID();
        const done = await edit({ checkpointId: asked.id, values: { messages: [edited] }, asNode: "__start__", key });
        expect(done).toMatchObject({
          __typename: "EditStateSuccess",
          run: {
            kind: "EDIT",
            status: "COMPLETED",
            errorCode: null,
            edit: { values: { messages: [edited] }, asNode: "__start__", checkpoint: { id: asked.id } },
          },
          conversation: { id: conversationId, next: ["agent"], resumable: true },
          checkpoint: { source: "UPDATE", next: ["agent"], parent: { id: asked.id } },
        });
        expect(done.checkpoint.run).toEqual({ id: done.run.id, kind: "EDIT" });
        expect(done.run.checkpoints).toEqual([{ id: done.checkpoint.id }]);
        expect(done.checkpoint.state.messages).toEqual([edited]);
        expect(Date.parse(done.run.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.run.startedAt));
        // Its events end like any run's.
        expect((await events(done.run.id)).at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });

        // A retry with the key answers the same run; the key with other values is refused.
        const retried = await edit({ checkpointId: asked.id, values: { messages: [edited] }, asNode: "__start__", key });
        expect(retried.run.id).toBe(done.run.id);
        expect(await edit({ checkpointId: asked.id, values: { messages: [question] }, asNode: "__start__", key })).toMatchObject({
          __typename: "IdempotencyKeyReusedError",
          code: "IDEMPOTENCY_KEY_REUSED",
        });

        // While a run is active, no edit.
        fake.enqueue({ kind: "silence", tokens: ["Hold "] });
        const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
        await until(() => fake.openChatRequests() > 0, "the model request");
        expect(await edit({ checkpointId: done.checkpoint.id, values: { messages: [question] } })).toMatchObject({
          __typename: "RunInProgressError",
          activeRunId: resumeRun.run.id,
        });
        expect((await gqlOk(app.url, CANCEL_RUN, { runId: resumeRun.run.id })).cancelRun.__typename).toBe("CancelRunSuccess");
        await waitForRun(app.url, resumeRun.run.id);

        // A resume runs the agent on the edited state.
        const { resumeRun: again } = await gqlOk(app.url, RESUME_RUN, { conversationId });
        expect(await waitForRun(app.url, again.run.id)).toMatchObject({ status: "COMPLETED" });
        const after = await states(conversationId);
        expect(after.messages.map((m: any) => [m.role, m.content])).toEqual([
          ["USER", "Say something else."],
          ["ASSISTANT", "Echo: Say something else."],
        ]);
        // The correlation edge holds for every checkpoint: each belongs to the run whose checkpoints list it.
        const runs = after.runs.edges.map((e: any) => e.node);
        expect(runs.map((r: any) => [r.kind, r.status])).toEqual([
          ["START", "COMPLETED"],
          ["EDIT", "COMPLETED"],
          ["RESUME", "CANCELLED"],
          ["RESUME", "COMPLETED"],
        ]);
        // The edit's messages are the one it changed; the start keeps what it said.
        expect(runs[1]).toMatchObject({
          checkpoints: [{ id: done.checkpoint.id }],
          startedBy: expect.any(String),
          messages: [{ role: "USER", content: "Say something else." }],
        });
        expect(runs[0].messages).toEqual([
          { role: "USER", content: "Say something." },
          { role: "ASSISTANT", content: "Echo: Say something." },
        ]);
        for (const checkpoint of checkpointsOf(after)) {
          const owner = runs.find((r: any) => r.checkpoints.some((c: any) => c.id === checkpoint.id));
          expect(checkpoint.run?.id ?? null, checkpoint.id).toBe(owner?.id ?? null);
        }
        expect(checkpointsOf(after).find((c: any) => c.id === done.checkpoint.id).run).toEqual({ id: done.run.id, kind: "EDIT" });
      });

      it("edits a custom graph's state as one of its nodes, and the graph goes on from that node's edges", async () => {
        const { startRun } = await gqlOk(app.url, START_AGENT, { message: "Plan this.", agent: "planner" });
        expect(await waitForRun(app.url, startRun.run.id)).toMatchObject({ status: "COMPLETED" });
        const head = checkpointsOf(await states(startRun.conversation.id)).at(-1);
        const note = { role: "ASSISTANT", content: "A plan written by hand.", toolCalls: [] };
        const done = (await gqlOk(app.url, EDIT_STATE, { checkpointId: head.id, values: { messages: [note] }, asNode: "plan" })).editState;
        expect(done).toMatchObject({ __typename: "EditStateSuccess", run: { kind: "EDIT", status: "COMPLETED" }, checkpoint: { next: ["answer"] } });
        expect(done.checkpoint.state.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "A plan written by hand." });
        const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId: startRun.conversation.id });
        expect(await waitForRun(app.url, resumeRun.run.id)).toMatchObject({ status: "COMPLETED" });
        expect((await states(startRun.conversation.id)).messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "ASSISTANT", "ASSISTANT"]);
      });
    });
  });
}
