// Every user sees only their own, on every deployment: user B tries every query,
// mutation, subscription, REST route and export on user A's ids (conversation,
// run, checkpoint, interrupt, fork source), and every answer is the not-found
// answer while the database stays exactly as it was; B's conversationsChanged
// never carries A's conversations while A works. Admins see everyone's.
// Principals come from real API keys (the api_keys table), sent as bearers.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { ROOT, startTestApp } from "../../testkit/app.ts";
import { collect, gql, sseClient, wsClient } from "../../testkit/graphql.ts";
import { CONVERSATION_EVENTS, CONVERSATIONS_CHANGED_ROW, RUN_EVENTS } from "../../testkit/documents.ts";
import { snapshotDatabase } from "../../testkit/db-snapshot.ts";
import { sleep, until } from "../../testkit/streaming.ts";
import { createApiKey } from "../../src/server/identity/api-keys.ts";
import type { App } from "../../src/app.ts";
import type { Deployment } from "./api.ts";

const ADMIN_TOKEN = "cross-user-admin-token";

const START = /* GraphQL */ `
  mutation Start($message: String!, $conversationId: ID, $agent: String) {
    startRun(input: { message: $message, conversationId: $conversationId, agent: $agent }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id owner } }
      ... on Error { code message }
    }
  }
`;
const LOOK = /* GraphQL */ `
  query Look($conversation: ID!, $run: ID!, $checkpoint: ID!, $queued: ID!, $graphRun: ID!) {
    conversation(id: $conversation) { id }
    run(id: $run) { id toolCalls { toolCallId name } }
    graphRun: run(id: $graphRun) { id customEvents { name data } messageNodes { messageId node } }
    graphRunNode: node(id: $graphRun) { id ... on Run { customEvents { name } messageNodes { node } } }
    queued: run(id: $queued) { id queuePosition queueReason queuedAt }
    queuedNode: node(id: $queued) { id ... on Run { queuePosition } }
    conversationNode: node(id: $conversation) { id }
    runNode: node(id: $run) { id }
    checkpointNode: node(id: $checkpoint) { id ... on Checkpoint { state metadata } }
    conversations(first: 50) { totalCount edges { node { id owner } } }
    asked: conversations(first: 50, owner: "alice") { totalCount edges { node { id } } }
  }
`;
const MUTATIONS: { name: string; query: string; variables: (ids: AliceIds) => Record<string, unknown> }[] = [
  { name: "startRun on the conversation", query: START, variables: (ids) => ({ message: "mine now", conversationId: ids.conversation }) },
  {
    name: "startRun queued behind the active run (ENQUEUE)",
    query: `mutation($c: ID!) { startRun(input: { conversationId: $c, message: "after yours", multitask: ENQUEUE }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ c: ids.active }),
  },
  {
    name: "cancelRun of the run waiting in line",
    query: `mutation($r: ID!) { cancelRun(input: { runId: $r }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ r: ids.queuedRun }),
  },
  {
    name: "resumeRun answering the waiting conversation",
    query: `mutation($c: ID!, $i: ID!) { resumeRun(input: { conversationId: $c, responses: [{ interruptId: $i, value: { toolCalls: [] } }] }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ c: ids.waiting, i: ids.interrupt }),
  },
  {
    name: "resumeRun of the conversation",
    query: `mutation($c: ID!) { resumeRun(input: { conversationId: $c }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ c: ids.conversation }),
  },
  {
    name: "cancelRun of the active run",
    query: `mutation($r: ID!) { cancelRun(input: { runId: $r }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ r: ids.activeRun }),
  },
  {
    name: "renameConversation",
    query: `mutation($c: ID!) { renameConversation(input: { conversationId: $c, title: "taken" }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ c: ids.conversation }),
  },
  {
    name: "deleteConversation",
    query: `mutation($c: ID!) { deleteConversation(input: { conversationId: $c }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ c: ids.conversation }),
  },
  {
    name: "editState of its checkpoint",
    query: `mutation($k: ID!) { editState(input: { checkpointId: $k, values: { messages: [{ role: "USER", content: "mine now" }] }, asNode: "__start__" }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ k: ids.checkpoint }),
  },
  {
    name: "editState of its checkpoint, with an idempotency key",
    query: `mutation($k: ID!) { editState(input: { checkpointId: $k, values: { messages: [] }, idempotencyKey: "bobs-key" }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ k: ids.checkpoint }),
  },
  {
    name: "forkConversation of its checkpoint",
    query: `mutation($k: ID!) { forkConversation(input: { checkpointId: $k, message: "a copy" }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ k: ids.checkpoint }),
  },
  {
    name: "createSchedule on the conversation",
    query: `mutation($c: ID!) { createSchedule(input: { agent: "default", cron: "0 9 * * *", timezone: "UTC", message: "mine", conversationId: $c }) { __typename ... on Error { code } } }`,
    variables: (ids) => ({ c: ids.conversation }),
  },
  ...(["pauseSchedule", "resumeSchedule", "deleteSchedule"] as const).map((name) => ({
    name: `${name} of its schedule`,
    query: `mutation($s: ID!) { ${name}(input: { scheduleId: $s }) { __typename ... on Error { code } } }`,
    variables: (ids: AliceIds) => ({ s: ids.schedule }),
  })),
];

interface AliceIds {
  conversation: string;
  run: string;
  checkpoint: string;
  waiting: string;
  interrupt: string;
  active: string;
  activeRun: string;
  queuedRun: string;
  /** A finished run of a custom graph: it stored a custom event and its message's node. */
  graphRun: string;
  /** A schedule on the finished conversation, once a year (it does not fire during the test). */
  schedule: string;
}

/** Every table but the ones that record processes and credentials' use, as JSON: equal dumps, nothing written. */
async function snapshot(databaseUrl: string | undefined, file: string): Promise<string> {
  if (!databaseUrl?.startsWith("postgres")) return snapshotDatabase(file);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT IN ('run_owners', 'api_keys') ORDER BY 1`,
    );
    const dump: Record<string, unknown[]> = {};
    for (const { name } of tables) dump[name] = (await client.query(`SELECT * FROM "${name}" ORDER BY 1`)).rows;
    return JSON.stringify(dump);
  } finally {
    await client.end();
  }
}

export function describeCrossUserConformance(deployment: Deployment) {
  describe(`every user sees only their own, on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App & { databaseFile: string };
    let env: Record<string, string>;
    let cleanup: () => Promise<void> = async () => {};
    const keys: Record<"alice" | "bob" | "root", string> = { alice: "", bob: "", root: "" };
    let ids: AliceIds;

    const headers = (who: keyof typeof keys) => ({ authorization: `Bearer ${keys[who]}` });
    const as = (who: keyof typeof keys, query: string, variables?: Record<string, unknown>) => gql(app.url, query, variables, headers(who));

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-cross-user-"));
      const agents = path.join(dir, "agents.json");
      fs.writeFileSync(
        agents,
        JSON.stringify({
          agents: {
            default: { type: "chat" },
            careful: { type: "chat", tools: ["calculator"], requireApproval: ["calculator"] },
            planner: { type: "graph", module: path.join(ROOT, "test", "fixtures", "graphs", "two-node.ts"), export: "graph" },
          },
        }),
      );
      env = { API_TOKEN: ADMIN_TOKEN, RUNLEDGER_CONFIG: agents, MODEL_IDLE_TIMEOUT_MS: "600000", ...selected.env };
      app = await startTestApp({ ollamaUrl: fake.url, env });
      for (const [who, role] of [
        ["alice", "user"],
        ["bob", "user"],
        ["root", "admin"],
      ] as const) {
        keys[who] = (await createApiKey(app.storage.apiKeys, { userId: who, role, label: `${who}'s key` })).key;
      }

      // Alice's things: a finished conversation (a run, checkpoints), a finished custom graph's, one waiting for an approval, one with a run still active.
      const ended = async (runId: string) =>
        !["QUEUED", "RUNNING"].includes((await as("alice", `query($r: ID!) { run(id: $r) { status } }`, { r: runId })).data.run.status);
      const done = (await as("alice", START, { message: "Please calculate 2 * 3" })).data.startRun;
      expect(done.conversation.owner).toBe("alice");
      // Ended before the next runs start, so the silent step below goes to Alice's active run and no other.
      await until(() => ended(done.run.id), "Alice's first run to end");
      const planned = (await as("alice", START, { message: "What is a prime?", agent: "planner" })).data.startRun;
      await until(() => ended(planned.run.id), "Alice's graph run to end");
      const waiting = (await as("alice", START, { message: "Please calculate 4 * 5", agent: "careful" })).data.startRun;
      await until(
        async () =>
          (await as("alice", `query($c: ID!) { conversation(id: $c) { pendingInterrupts { id } } }`, { c: waiting.conversation.id })).data.conversation
            .pendingInterrupts.length > 0,
        "the approval",
      );
      fake.enqueue({ kind: "silence", tokens: ["Still "] });
      const active = (await as("alice", START, { message: "Take your time." })).data.startRun;
      await until(() => fake.openChatRequests() > 0, "the model request");
      const queued = (
        await as(
          "alice",
          `mutation($c: ID!) { startRun(input: { conversationId: $c, message: "And then this.", multitask: ENQUEUE }) { __typename ... on StartRunSuccess { run { id status queueReason } } } }`,
          {
            c: active.conversation.id,
          },
        )
      ).data.startRun;
      expect(queued.run).toMatchObject({ status: "QUEUED", queueReason: "BEHIND_ACTIVE_RUN" });
      const seen = (
        await as(
          "alice",
          `query($c: ID!, $w: ID!) { c: conversation(id: $c) { checkpoints(first: 1) { edges { node { id } } } } w: conversation(id: $w) { pendingInterrupts { id } } }`,
          {
            c: done.conversation.id,
            w: waiting.conversation.id,
          },
        )
      ).data;
      ids = {
        conversation: done.conversation.id,
        run: done.run.id,
        checkpoint: seen.c.checkpoints.edges[0].node.id,
        waiting: waiting.conversation.id,
        interrupt: seen.w.pendingInterrupts[0].id,
        active: active.conversation.id,
        activeRun: active.run.id,
        queuedRun: queued.run.id,
        graphRun: planned.run.id,
        schedule: (
          await as(
            "alice",
            `mutation($c: ID!) { createSchedule(input: { agent: "default", cron: "0 0 0 1 1 *", timezone: "UTC", message: "Happy new year", conversationId: $c }) { ... on CreateScheduleSuccess { schedule { id } } } }`,
            { c: done.conversation.id },
          )
        ).data.createSchedule.schedule.id,
      };
      // Bob has a conversation of his own; his key has been used once (its last use recorded before the dumps).
      expect((await as("bob", START, { message: "Bob's own question." })).data.startRun.__typename).toBe("StartRunSuccess");
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await cleanup();
      await fake?.close();
    });

    it("answers Bob's every query, mutation and REST request on Alice's ids as for ids that do not exist, and writes nothing", async () => {
      await until(
        async () =>
          (await as("bob", `{ conversations(first: 5) { edges { node { activeRun { id } } } } }`)).data.conversations.edges.every(
            (e: any) => !e.node.activeRun,
          ),
        "Bob's run to end",
      );
      const before = await snapshot(env.DATABASE_URL, app.databaseFile);

      const lookAt = { conversation: ids.conversation, run: ids.run, checkpoint: ids.checkpoint, queued: ids.queuedRun, graphRun: ids.graphRun };
      const look = (await as("bob", LOOK, lookAt)).data;
      expect(look).toMatchObject({
        conversation: null,
        run: null,
        queued: null,
        queuedNode: null,
        conversationNode: null,
        runNode: null,
        checkpointNode: null,
        graphRun: null,
        graphRunNode: null,
        asked: { totalCount: 0, edges: [] },
      });
      expect(look.conversations.edges.map((e: any) => e.node.owner)).toEqual(["bob"]);
      // The same question from Alice answers every field Bob was refused.
      const own = (await as("alice", LOOK, lookAt)).data;
      expect(own.run.toolCalls.map((c: { name: string }) => c.name)).toEqual(["calculator"]);
      expect(own.graphRun.customEvents).toEqual([{ name: "plan", data: { steps: ["read the question", "answer it briefly"], question: "What is a prime?" } }]);
      expect(own.graphRun.messageNodes).toEqual([{ messageId: expect.any(String), node: "answer" }]);
      expect(own.graphRunNode).toEqual({ id: ids.graphRun, customEvents: [{ name: "plan" }], messageNodes: [{ node: "answer" }] });
      expect(own.queued).toMatchObject({ id: ids.queuedRun, queuePosition: 1, queueReason: "BEHIND_ACTIVE_RUN" });
      expect(own.queuedNode).toEqual({ id: ids.queuedRun, queuePosition: 1 });
      expect(look.conversations.totalCount).toBe(1);
      const schedules = `query($s: ID!) { schedule(id: $s) { id } node(id: $s) { id } schedules(first: 50) { edges { node { owner } } } }`;
      expect((await as("bob", schedules, { s: ids.schedule })).data).toEqual({ schedule: null, node: null, schedules: { edges: [] } });
      expect((await as("alice", schedules, { s: ids.schedule })).data).toEqual({
        schedule: { id: ids.schedule },
        node: { id: ids.schedule },
        schedules: { edges: [{ node: { owner: "alice" } }] },
      });

      for (const mutation of MUTATIONS) {
        const result = await as("bob", mutation.query, mutation.variables(ids));
        const answer = Object.values(result.data)[0] as { __typename: string; code: string };
        expect(answer, mutation.name).toMatchObject({ __typename: "NotFoundError", code: "NOT_FOUND" });
      }

      for (const [name, transport] of [
        ["graphql-ws", () => wsClient(app.url, { token: keys.bob })],
        ["SSE", () => sseClient(app.url, headers("bob"))],
      ] as const) {
        for (const [query, variables] of [
          [RUN_EVENTS, { runId: ids.run }],
          [RUN_EVENTS, { runId: ids.activeRun }],
          [CONVERSATION_EVENTS, { conversationId: ids.active }],
        ] as const) {
          const error = await collect(transport(), query, variables).done.then(
            () => null,
            (e: Error) => e.message,
          );
          expect(error, `${name}: ${JSON.stringify(variables)}`).toMatch(/NOT_FOUND|does not exist/);
        }
      }

      const rest = async (method: string, url: string, body?: unknown) => {
        const response = await fetch(`${app.url}${url}`, {
          method,
          headers: { ...headers("bob"), ...(body ? { "content-type": "application/json" } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        return { status: response.status, json: await response.json().catch(() => null) };
      };
      expect((await rest("GET", "/api/conversations")).json.map((c: any) => c.id)).not.toContain(ids.conversation);
      for (const [method, url, body] of [
        ["GET", `/api/conversations/${ids.conversation}`],
        ["GET", `/api/chat?conversation=${ids.active}`],
        ["POST", "/api/chat", { message: "mine", conversation: ids.conversation }],
        ["POST", "/api/chat", { resume: true, conversation: ids.conversation }],
        ["GET", `/api/conversations/${ids.conversation}/export?format=jsonl`],
        ["GET", `/api/conversations/${ids.conversation}/export?format=markdown`],
      ] as const) {
        expect(await rest(method, url, body), `${method} ${url}`).toMatchObject({ status: 404, json: { code: "NOT_FOUND" } });
      }

      expect(await snapshot(env.DATABASE_URL, app.databaseFile)).toEqual(before);
      // Alice still has all of hers, untouched.
      const mine = (await as("alice", `{ conversations(first: 10) { totalCount } }`)).data.conversations.totalCount;
      expect(mine).toBe(4);
    });

    it("never carries Alice's conversations on Bob's conversationsChanged, over either transport, while Alice works", async () => {
      const streams = [
        collect(wsClient(app.url, { token: keys.bob }), CONVERSATIONS_CHANGED_ROW),
        collect(sseClient(app.url, headers("bob")), CONVERSATIONS_CHANGED_ROW),
      ];
      await sleep(300);
      const created = (await as("alice", START, { message: "Alice works." })).data.startRun;
      await until(
        async () => !["QUEUED", "RUNNING"].includes((await as("alice", `query($r: ID!) { run(id: $r) { status } }`, { r: created.run.id })).data.run.status),
        "Alice's run to end",
      );
      await as("alice", `mutation($c: ID!) { renameConversation(input: { conversationId: $c, title: "Alice's" }) { __typename } }`, {
        c: created.conversation.id,
      });
      // Bob's own change arrives on both: the streams were live while Alice worked.
      const own = (await as("bob", START, { message: "Bob works too." })).data.startRun;
      await until(() => streams.every((s) => s.results.some((r) => r.conversationsChanged.id === own.conversation.id)), "Bob's own change on both transports");
      for (const stream of streams) {
        expect(stream.results.map((r) => r.conversationsChanged.id)).not.toContain(created.conversation.id);
        stream.dispose();
      }
    });

    it("lets an admin see every owner's, and one owner's with owner:", async () => {
      const all = (
        await as(
          "root",
          `{ conversations(first: 50) { edges { node { id owner } } } alices: conversations(first: 50, owner: "alice") { totalCount } me { id role } }`,
        )
      ).data;
      expect(all.me).toEqual({ id: "root", role: "ADMIN" });
      const owners = new Set(all.conversations.edges.map((e: any) => e.node.owner));
      expect(owners).toEqual(new Set(["alice", "bob"]));
      expect(all.alices.totalCount).toBe(5);
      expect((await as("bob", `{ me { id role } }`)).data.me).toEqual({ id: "bob", role: "USER" });
      // The admin can act on Alice's: cancel her active run.
      const cancelled = (await as("root", `mutation($r: ID!) { cancelRun(input: { runId: $r }) { __typename } }`, { r: ids.activeRun })).data.cancelRun;
      expect(cancelled.__typename).toBe("CancelRunSuccess");
    });

    it("lets the owner read her checkpoint's state and edit it, recorded as started by her; an admin reads it too", async () => {
      const read = `query($k: ID!) { node(id: $k) { ... on Checkpoint { state metadata } } }`;
      const hers = (await as("alice", read, { k: ids.checkpoint })).data.node;
      expect(hers.metadata).toMatchObject({ source: "input" });
      expect((await as("root", read, { k: ids.checkpoint })).data.node).toEqual(hers);
      const edited = (
        await as(
          "alice",
          `mutation($k: ID!) { editState(input: { checkpointId: $k, values: { messages: [{ role: "USER", content: "Please calculate 3 * 3" }] }, asNode: "__start__" }) {
            __typename ... on EditStateSuccess { run { kind status startedBy } checkpoint { run { kind } } } } }`,
          { k: ids.checkpoint },
        )
      ).data.editState;
      expect(edited).toEqual({
        __typename: "EditStateSuccess",
        run: { kind: "EDIT", status: "COMPLETED", startedBy: "alice" },
        checkpoint: { run: { kind: "EDIT" } },
      });
    });
  });
}
