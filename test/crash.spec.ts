// A crash for real: the server runs as a child process, is killed with SIGKILL
// while its runs are mid-stream, and is started again on the same database file.
// Every run it left behind is INTERRUPTED before the new process answers its
// first request, no committed message is lost, and resumeRun completes each.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama } from "./support/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "./support/app.ts";
import { collect, gqlOk, startRun, wsClient } from "./support/graphql.ts";
import { CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS } from "./support/documents.ts";

let fake: FakeOllama;
const startServer = trackedServerProcesses();

beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

const messagesOf = async (url: string, id: string) =>
  (await gqlOk(url, CONVERSATION, { id })).conversation.messages.map((m: any) => [m.role, m.content]);

describe("SIGKILL mid-stream, then a restart on the same database", () => {
  it("interrupts every run left running before serving, loses no committed message, and resumes each", async () => {
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
    const ended = subscriptions.map((sub) => sub.done.then(() => "completed", () => "socket lost"));
    // Every run is mid-stream: its model request is open and a token has reached its subscriber.
    await vi.waitFor(() => {
      expect(fake.openChatRequests()).toBe(3);
      for (const sub of subscriptions) expect(sub.results.some((r) => r.runEvents.__typename === "TokenEvent")).toBe(true);
    }, { timeout: 10_000 });
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
      expect(conversation).toMatchObject({ next: ["agent"], resumable: true, activeRun: null });
    }

    fake.setResponder(defaultResponder);
    for (const [i, conversationId] of conversations.entries()) {
      const { resumeRun } = await gqlOk(second.url, RESUME_RUN, { conversationId });
      expect(resumeRun.__typename).toBe("ResumeRunSuccess");
      expect((await waitForRun(second.url, resumeRun.run.id)).status).toBe("COMPLETED");
      expect(await messagesOf(second.url, conversationId)).toEqual([...committed[i]!, ["ASSISTANT", `Echo: second turn ${i}`]]);
    }

    expect(await second.stop("SIGTERM")).toBe(0);
  }, PROCESS_TEST_TIMEOUT_MS);
});
