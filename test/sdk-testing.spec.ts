// @runledger/client/testing: the test transport, fed with runs recorded from a
// real server (their events as runEvents sent them, and the messages they
// added), gives a conversation store the same thread and the same events as
// the server did; drop() makes the store rejoin after its last seq; a run
// started elsewhere is followed; a recorded tool approval is answered with
// respond(), and the recorded resume plays.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { gqlOk, startRun } from "../testkit/graphql.ts";
import { createRunledgerClient, memoryStorage, type RunEvent } from "../packages/client/src/index.ts";
import { createTestTransport, type Message, type RecordedRun } from "../packages/client/src/testing.ts";
import { ended, seenEvents, serverLog, serverThread, settled } from "./sdk/harness.ts";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let agentsDir: string;

beforeAll(async () => {
  agentsDir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-sdk-testing-"));
  fs.writeFileSync(
    path.join(agentsDir, "agents.json"),
    JSON.stringify({ agents: { default: { type: "chat" }, careful: { type: "chat", tools: ["calculator"], requireApproval: ["calculator"] } } }),
  );
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { RUNLEDGER_CONFIG: path.join(agentsDir, "agents.json") } });
});

afterAll(async () => {
  await app?.close();
  await fake?.close();
  fs.rmSync(agentsDir, { recursive: true, force: true });
});

const RUN_MESSAGES = /* GraphQL */ `
  query ($id: ID!) { run(id: $id) { messages { id role content toolCalls { id name args } toolCallId name } } }
`;

/** A run of the real server, recorded: its whole log and the messages it added. */
async function record(runId: string): Promise<RecordedRun> {
  await waitForRun(app.url, runId);
  const events = await serverLog(app.url, runId);
  const { run } = await gqlOk<{ run: { messages: Message[] } }>(app.url, RUN_MESSAGES, { id: runId });
  return { events, messages: run.messages };
}

/** The events as the store saw them, without what the test transport stamps itself (the run's id). */
function played(events: readonly RunEvent[]): Omit<RunEvent, "runId">[] {
  return events.map(({ runId: _runId, ...rest }) => rest);
}

function testClient(transport: ReturnType<typeof createTestTransport>) {
  return createRunledgerClient({ transport, storage: memoryStorage() });
}

describe("the test transport", () => {
  it("plays a run recorded from the server: the store ends with the server's thread and events", async () => {
    const real = await startRun(app.url, "Please calculate 17 * 3");
    const recording = await record(real.runId);
    const transport = createTestTransport({ script: () => recording });
    const client = testClient(transport);
    const store = client.conversation();
    const seen = seenEvents(store);
    const started = await store.submit("Please calculate 17 * 3");
    if (!started.ok) throw new Error(started.error.message);
    const done = await ended(store, started.value.runId, "COMPLETED");
    const thread = await serverThread(app.url, real.conversationId);
    const shape = (m: { role: string; content: string; toolCallId: string | null; toolCalls: readonly unknown[] }) => ({
      role: m.role,
      content: m.content,
      toolCallId: m.toolCallId,
      toolCalls: m.toolCalls,
    });
    expect(done.messages.map(shape)).toEqual(thread.messages.map(shape));
    expect(done.messages.every((m) => m.state === "stored")).toBe(true);
    expect(played(seen)).toEqual(played(recording.events));
    expect(done.run).toMatchObject({ status: "COMPLETED", kind: "START", input: "Please calculate 17 * 3", gaps: [] });
    await client.dispose();
  });

  it("drop() ends every subscription: the store rejoins after its last seq, and sees each event once", async () => {
    const transport = createTestTransport({ autoplay: false });
    const client = testClient(transport);
    const store = client.conversation();
    const seen = seenEvents(store);
    const started = await store.submit("Hello there");
    if (!started.ok) throw new Error(started.error.message);
    const { runId } = started.value;
    await settled(store, () => transport.sent.some((s) => s.name === "RunledgerRunEvents"), "the run followed");
    transport.step(runId, 2);
    await settled(store, (s) => s.run?.lastSeq === 2, "two events");
    transport.drop();
    await settled(store, () => transport.sent.filter((s) => s.name === "RunledgerRunEvents").length === 2, "the rejoin");
    expect(transport.sent.filter((s) => s.name === "RunledgerRunEvents").map((s) => s.variables.after)).toEqual([0, 2]);
    transport.finish(runId);
    const done = await ended(store, runId, "COMPLETED");
    expect(seen.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(done.messages.map((m) => m.content)).toEqual(["Hello there", "Echo: Hello there"]);
    expect(client.connection.getSnapshot()).toMatchObject({ status: "connected", transport: "test", reconnects: 1 });
    await client.dispose();
  });

  it("a run started elsewhere is followed; a second submit while it runs is refused as the server refuses it", async () => {
    const transport = createTestTransport({ autoplay: false });
    const conversationId = transport.addConversation({ title: "Existing" });
    const client = testClient(transport);
    const store = client.conversation(conversationId);
    await settled(store, (s) => s.phase === "ready", "read");
    const runId = transport.startElsewhere(conversationId, "From another tab");
    await settled(store, (s) => s.run?.id === runId && s.busy, "followed");
    const refused = await store.submit("Me too");
    expect(refused).toMatchObject({ ok: false, error: { code: "RUN_IN_PROGRESS", refusal: { activeRunId: runId } } });
    transport.finish(runId);
    const done = await ended(store, runId, "COMPLETED");
    expect(done.messages.filter((m) => m.state === "stored").map((m) => m.content)).toEqual(["From another tab", "Echo: From another tab"]);
    await client.dispose();
  });

  it("a recorded tool approval shows as a typed interrupt; respond() answers it and the recorded resume plays", async () => {
    // Recorded on the careful agent: it asks, then, approved, answers.
    const asked = await gqlOk(
      app.url,
      `mutation { startRun(input: { message: "Please calculate 6 + 1", agent: "careful" }) { ... on StartRunSuccess { run { id } conversation { id } } } }`,
    );
    const question = await record(asked.startRun.run.id);
    const pending = await gqlOk(app.url, `query ($id: ID!) { conversation(id: $id) { pendingInterrupts { id value } } }`, {
      id: asked.startRun.conversation.id,
    });
    const interrupt = pending.conversation.pendingInterrupts[0];
    const resumed = await gqlOk(
      app.url,
      `mutation ($id: ID!, $responses: [InterruptResponseInput!]) { resumeRun(input: { conversationId: $id, responses: $responses }) { ... on ResumeRunSuccess { run { id } } } }`,
      {
        id: asked.startRun.conversation.id,
        responses: [{ interruptId: interrupt.id, value: { toolCalls: [{ id: interrupt.value.toolCalls[0].id, decision: "approve" }] } }],
      },
    );
    const answer = await record(resumed.resumeRun.run.id);
    expect(answer.events.at(-1)).toMatchObject({ status: "COMPLETED" });

    const transport = createTestTransport({ script: ({ kind }) => (kind === "START" ? question : answer) });
    const client = testClient(transport);
    const store = client.conversation();
    const started = await store.submit("Please calculate 6 + 1");
    if (!started.ok) throw new Error(started.error.message);
    const asking = await ended(store, started.value.runId, "WAITING");
    const shown = asking.interrupts[0]!;
    if (shown.kind !== "tool_approval") throw new Error(`expected a tool approval, got ${shown.kind}`);
    expect(shown.value.toolCalls).toMatchObject([{ name: "calculator", args: { expression: "6 + 1" } }]);
    const answered = await store.respond({ toolCalls: [{ id: shown.value.toolCalls[0]!.id, decision: "approve" }] }, { interruptId: shown.id });
    if (!answered.ok) throw new Error(answered.error.message);
    const done = await ended(store, answered.value.id, "COMPLETED");
    expect(done.interrupts).toEqual([]);
    expect(done.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "The result is 7." });
    await client.dispose();
  });
});
