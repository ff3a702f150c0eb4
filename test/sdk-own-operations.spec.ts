// @runledger/client for an app's own documents, as the console uses it: the
// client's query, mutate and subscribe on its one connection, and
// followRunEvents with the app's own selection of a run's events (exact resume
// across a dropped socket, each event once, a refusal told). Against a real
// server (SQLite, the fake Ollama), reached through a proxy that can drop
// every connection; what the client saw is compared with the server's log.
import WebSocket from "ws";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk, startRun } from "../testkit/graphql.ts";
import { until } from "../testkit/streaming.ts";
import {
  createConversationList,
  createRunledgerClient,
  createWebSocketTransport,
  followRunEvents,
  memoryStorage,
  type Document,
  type RunEventsDocument,
  type RunEventsEnd,
  type RunledgerClient,
} from "../packages/client/src/index.ts";
import { startProxy, type Proxy } from "./sdk/proxy.ts";
import { noting, numbered, serverLog } from "./sdk/harness.ts";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let database: ReturnType<typeof tempDatabaseUrl>;
let proxy: Proxy;
const clients: RunledgerClient[] = [];

beforeAll(async () => {
  database = tempDatabaseUrl("runledger-sdk-own-");
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url });
  proxy = await startProxy(Number(new URL(app.url).port));
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.dispose();
});

afterAll(async () => {
  await proxy?.close();
  await app?.close();
  await fake?.close();
  database?.remove();
});

function notingClient() {
  const transport = noting(createWebSocketTransport({ url: proxy.url, webSocketImpl: WebSocket }));
  const client = createRunledgerClient({ transport, storage: memoryStorage() });
  clients.push(client);
  return { client, transport };
}

/** The app's own selection: a CheckpointEvent's checkpoint as a node, which the client's own selection does not read. */
type OwnEvent =
  | { __typename: "CheckpointEvent"; seq: number; runId: string; checkpoint: { id: string; step: number } }
  | { __typename: "RunStatusEvent"; seq: number; runId: string; status: string }
  | { __typename: "ReplayGapEvent"; seq: number; runId: string; fromSeq: number; toSeq: number }
  | { __typename: "TokenEvent" | "ToolCallEvent" | "ToolResultEvent" | "CustomEvent" | "InterruptEvent"; seq: number; runId: string };

const OWN_RUN_EVENTS = /* GraphQL */ `
  subscription OwnRunEvents($runId: ID!, $after: Int) {
    runEvents(runId: $runId, after: $after) {
      __typename seq runId
      ... on RunStatusEvent { status }
      ... on CheckpointEvent { checkpoint { id step } }
      ... on ReplayGapEvent { fromSeq toSeq }
    }
  }
` as RunEventsDocument<OwnEvent>;

const OWN_START: Document<
  { startRun: { __typename: "StartRunSuccess"; run: { id: string }; conversation: { id: string } } | { __typename: string; code: string; message: string } },
  { message: string }
> = /* GraphQL */ `
  mutation OwnStart($message: String!) {
    startRun(input: { message: $message }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on Error { code message }
    }
  }
`;

const OWN_RUN: Document<{ run: { id: string; status: string } | null }, { id: string }> = /* GraphQL */ `
  query OwnRun($id: ID!) { run(id: $id) { id status } }
`;

const OWN_CHANGES: Document<{ conversationsChanged: { id: string; deleted: boolean } }, Record<string, never>> = /* GraphQL */ `
  subscription OwnChanges { conversationsChanged { id deleted } }
`;

describe("followRunEvents with the app's own selection", () => {
  it("a dropped socket mid-run: it rejoins after the last seq, hands over every event once and in order, with no gap, and tells the end once", async () => {
    // Long enough (4 s) that both drops come while it streams, however slow the machine.
    fake.enqueue({ kind: "trickle", tokens: numbered(200), delayMs: 20 });
    const { client, transport } = notingClient();
    const { runId } = await startRun(app.url, "Followed through a dropped socket");
    const seen: OwnEvent[] = [];
    const gaps: unknown[] = [];
    const ends: RunEventsEnd[] = [];
    followRunEvents(client, runId, {
      document: OWN_RUN_EVENTS,
      onEvent: (event, gap) => {
        seen.push(event);
        if (gap) gaps.push(gap);
      },
      onEnd: (end) => ends.push(end),
    });
    await until(() => seen.length >= 10, "ten events");
    const before = seen.at(-1)!.seq;
    proxy.dropAll();
    await until(() => seen.length >= before + 10, "ten more after the rejoin");
    proxy.dropAll();
    await until(() => ends.length > 0, "the end");

    const log = await serverLog(app.url, runId);
    expect(seen.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(gaps).toEqual([]);
    expect(ends).toEqual([{ reason: "terminal", error: null }]);
    expect(seen.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
    // The app's own fields came: each checkpoint as the log names it.
    const checkpoints = seen.flatMap((e) => (e.__typename === "CheckpointEvent" ? [e.checkpoint.id] : []));
    expect(checkpoints.length).toBeGreaterThan(0);
    expect(checkpoints).toEqual(log.flatMap((e) => (e.__typename === "CheckpointEvent" ? [e.checkpointId] : [])));
    // Each rejoin asked for what came after what it had handed over.
    const afters = transport.subscriptions.filter((s) => s.query.includes("OwnRunEvents")).map((s) => Number(s.variables.after ?? 0));
    expect(afters[0]).toBe(0);
    expect(afters.length).toBeGreaterThanOrEqual(3);
    expect(afters[1]).toBeGreaterThanOrEqual(before);
    // Nothing more after the end.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ends).toHaveLength(1);
  });

  it("`after`: only the events after it; a run that is not there ends refused, with the server's code", async () => {
    const { client } = notingClient();
    const { runId } = await startRun(app.url, "Followed from the middle");
    await waitForRun(app.url, runId);
    const log = await serverLog(app.url, runId);
    const seen: number[] = [];
    const ends: RunEventsEnd[] = [];
    followRunEvents(client, runId, { after: 2, onEvent: (event) => seen.push(event.seq), onEnd: (end) => ends.push(end) });
    await until(() => ends.length > 0, "the end");
    expect(seen).toEqual(log.slice(2).map((e) => e.seq));

    const refused: RunEventsEnd[] = [];
    let events = 0;
    followRunEvents(client, "00000000-0000-4000-8000-000000000000", { onEvent: () => events++, onEnd: (end) => refused.push(end) });
    await until(() => refused.length > 0, "the refusal");
    expect(events).toBe(0);
    expect(refused).toEqual([{ reason: "refused", error: { code: "NOT_FOUND", message: expect.any(String) } }]);
  });
});

describe("the client's own operations", () => {
  it("query, mutate and subscribe run the app's documents on the one connection: a success, a typed refusal that starts nothing, and a live stream", async () => {
    const { client } = notingClient();
    const changes: string[] = [];
    const stop = client.subscribe(OWN_CHANGES, () => ({}), { next: (data) => changes.push(data.conversationsChanged.id), ended: () => true });
    await until(() => app.services.bus.stats().changeSubscribers >= 1, "the subscription on the server");

    const started = await client.mutate(OWN_START, { message: "Started by the app's own mutation" }, "startRun");
    if (!started.ok) throw new Error(started.error.message);
    expect(started.value).toMatchObject({ __typename: "StartRunSuccess", run: { id: expect.any(String) } });
    const { run, conversation } = started.value as { run: { id: string }; conversation: { id: string } };
    await until(() => changes.includes(conversation.id), "the new conversation told");
    await waitForRun(app.url, run.id);
    expect(await client.query(OWN_RUN, { id: run.id })).toEqual({ run: { id: run.id, status: "COMPLETED" } });

    const runs = (await gqlOk(app.url, `{ conversations(first: 100) { edges { node { id } } } }`)).conversations.edges.length;
    const refused = await client.mutate(OWN_START, { message: "" }, "startRun");
    expect(refused).toMatchObject({ ok: false, error: { code: "VALIDATION" } });
    expect((await gqlOk(app.url, `{ conversations(first: 100) { edges { node { id } } } }`)).conversations.edges.length).toBe(runs);
    stop();
  });
});

describe("the conversation list's rows", () => {
  it("carry the latest run's kind and error code, what a fork came from and when the conversation expires; a deletion elsewhere is told in `deleted`", async () => {
    const { client } = notingClient();
    fake.enqueue({ kind: "notFound" });
    const failed = await startRun(app.url, "A run that fails");
    await waitForRun(app.url, failed.runId);
    const source = await startRun(app.url, "A run to fork from");
    await waitForRun(app.url, source.runId);
    const checkpoint = (
      await gqlOk(app.url, `query ($id: ID!) { conversation(id: $id) { checkpoints(last: 1) { edges { node { id } } } } }`, { id: source.conversationId })
    ).conversation.checkpoints.edges[0].node.id;
    const fork = await gqlOk(
      app.url,
      `mutation ($id: ID!) { forkConversation(input: { checkpointId: $id }) { __typename ... on ForkConversationSuccess { conversation { id } } } }`,
      { id: checkpoint },
    );
    const forkId = fork.forkConversation.conversation.id as string;

    const list = createConversationList(client, { pageSize: 100 });
    await until(() => list.getSnapshot().phase === "ready", "the first page");
    const rows = new Map(list.getSnapshot().rows.map((r) => [r.id, r]));
    expect(rows.get(failed.conversationId)).toMatchObject({
      expiresAt: null,
      forkedFrom: null,
      latestRun: { id: failed.runId, status: "FAILED", kind: "START", errorCode: expect.any(String) },
    });
    expect(rows.get(forkId)).toMatchObject({ forkedFrom: { conversation: { id: source.conversationId } } });
    expect(list.getSnapshot().deleted.size).toBe(0);

    const deleted = await gqlOk(app.url, `mutation ($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename } }`, {
      id: failed.conversationId,
    });
    expect(deleted.deleteConversation.__typename).toBe("DeleteConversationSuccess");
    await until(() => list.getSnapshot().deleted.has(failed.conversationId), "the deletion told");
    expect(list.getSnapshot().rows.some((r) => r.id === failed.conversationId)).toBe(false);
    list.close();
  });
});

describe("the conversation list across a socket outage", () => {
  it("a conversation made while the socket is down and HTTP works is listed once the socket is back: the first page is read again only then", async () => {
    const { client } = notingClient();
    const list = createConversationList(client, { pageSize: 100 });
    await until(() => list.getSnapshot().phase === "ready", "the first page");
    await until(() => app.services.bus.stats().changeSubscribers >= 1, "the notices on the server");
    const statuses: string[] = [];
    client.connection.subscribe(() => statuses.push(client.connection.getSnapshot().status));

    proxy.refuseUpgrades(true);
    proxy.dropAll();
    await until(() => statuses.includes("reconnecting"), "the drop noticed");
    // Time for a read made at the drop to have come back (through the proxy, which lets HTTP through).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const made = await startRun(app.url, "Made while the socket was down");
    await waitForRun(app.url, made.runId);
    proxy.refuseUpgrades(false);
    await until(() => client.connection.getSnapshot().status === "connected", "connected again");
    await until(() => list.getSnapshot().rows.some((r) => r.id === made.conversationId), "the conversation made meanwhile listed");
    list.close();
  });

  it("a list made while the socket is down reads its first page over HTTP at once, and again once its notices are live", async () => {
    const { client } = notingClient();
    // Connected, with no list yet: the list's notices are the client's first.
    await until(() => client.connection.getSnapshot().status === "connected", "connected");
    proxy.refuseUpgrades(true);
    proxy.dropAll();
    await until(() => client.connection.getSnapshot().status === "reconnecting", "the drop noticed");

    const list = createConversationList(client, { pageSize: 100 });
    await until(() => list.getSnapshot().phase === "ready", "the first page, read while the socket is down");
    const made = await startRun(app.url, "Made after a list's first read, before its notices");
    await waitForRun(app.url, made.runId);
    expect(list.getSnapshot().rows.some((r) => r.id === made.conversationId)).toBe(false);
    proxy.refuseUpgrades(false);
    await until(() => list.getSnapshot().rows.some((r) => r.id === made.conversationId), "the conversation made before the notices were live listed");
    list.close();
  });
});
