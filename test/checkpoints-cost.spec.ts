// The correlation's cost: the SQL statements a response needs do not grow with
// the number of runs, checkpoints or conversations in it. Every statement any
// connection executes (Prisma's, the read model's, LangGraph's) is counted at
// the SQLite driver, for the Prisma adapter's copy of the driver as well.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { countSqlStatements } from "../testkit/sql-statements.ts";
import { gql, gqlOk } from "../testkit/graphql.ts";
import { SINGLE_READS_PER_THREAD } from "../src/read/scope.ts";
import { LOCAL_PRINCIPAL } from "../src/domain/principal.ts";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let conversationId: string;
const otherConversations: string[] = [];

beforeAll(async () => {
  fake = await startFakeOllama();
  // No heartbeat and no look at the queue during the measurements: only the query's own statements are counted.
  app = await startTestApp({
    ollamaUrl: fake.url,
    env: { RUN_HEARTBEAT_MS: "600000", RUN_LEASE_MS: "1200000", EVENT_GRACE_MS: "0", QUEUE_POLL_MS: "600000", SCHEDULE_POLL_MS: "600000" },
  });
  const runs = app.services.runs;
  for (let i = 0; i < 100; i += 1) {
    const { run, conversation } = await runs.startRun({ conversationId: conversationId ?? null, message: `message ${i}` }, LOCAL_PRINCIPAL);
    conversationId = conversation.id;
    await runs.whenFinished(run.id);
  }
  for (let i = 0; i < 6; i += 1) {
    const { run, conversation } = await runs.startRun({ message: `another conversation ${i}` }, LOCAL_PRINCIPAL);
    otherConversations.push(conversation.id);
    await runs.whenFinished(run.id);
  }
}, 120_000);
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

async function measure(query: string, variables: Record<string, unknown>) {
  const counter = countSqlStatements({ keepSql: true });
  try {
    const data = await gqlOk(app.url, query, variables);
    return { data, statements: counter.count(), sql: counter.sql };
  } finally {
    counter.restore();
  }
}

const RUNS_CHECKPOINTS_RUN = /* GraphQL */ `
  query($id: ID!, $n: Int) { conversation(id: $id) { runs(first: $n) { edges { node { id checkpoints { run { id } } } } } } }
`;

describe("statements per response", () => {
  it("conversation { runs(first: 100) { checkpoints { run } } } over 100 runs takes a small constant number", async () => {
    const hundred = await measure(RUNS_CHECKPOINTS_RUN, { id: conversationId, n: 100 });
    const runs = hundred.data.conversation.runs.edges.map((e: any) => e.node);
    expect(runs).toHaveLength(100);
    for (const run of runs) expect(run.checkpoints.map((c: any) => c.run.id)).toEqual([run.id, run.id, run.id]);
    // The conversation, the page of its runs, and the checkpoints inside every
    // run's window in one statement; each checkpoint's run is known from the
    // window that holds it.
    expect(hundred.sql).toHaveLength(3);
    // The same count for 3 runs as for 100: constant, not per run or per checkpoint.
    const three = await measure(RUNS_CHECKPOINTS_RUN, { id: conversationId, n: 3 });
    expect(three.data.conversation.runs.edges).toHaveLength(3);
    expect(three.statements).toBe(hundred.statements);
  });

  it("adds a constant per nesting level: parents, writes and failed tasks of every checkpoint and run", async () => {
    const query = `query($id: ID!, $n: Int) { conversation(id: $id) { runs(first: $n) { edges { node {
      checkpoints { id run { id } parent { id } writes { channel } }
      failedTasks { message }
    } } } } }`;
    const hundred = await measure(query, { id: conversationId, n: 100 });
    const runs = hundred.data.conversation.runs.edges.map((e: any) => e.node);
    expect(runs[5].checkpoints[0].writes.map((w: any) => w.channel)).toEqual(["messages", "branch:to:agent"]);
    expect(runs[5].checkpoints[0].parent.id).toBe(runs[4].checkpoints.at(-1).id);
    // The conversation and the page of its runs (2), the windows (1), the thread's
    // checkpoints and failed tasks (2, in one read transaction: BEGIN and COMMIT
    // are 2 more) and runs (1) for parents and failed tasks, the writes of every checkpoint (1).
    expect(hundred.sql).toHaveLength(9);
    const three = await measure(query, { id: conversationId, n: 3 });
    expect(three.statements).toBe(hundred.statements);
  });

  it("reads LangGraph's states for messages one by one for a few runs, and as one history for many", async () => {
    const query = `query($id: ID!, $n: Int) { conversation(id: $id) { runs(first: $n) { edges { node { checkpoints { run { id } } messages { role content } } } } } }`;
    // The base reads the whole correlated thread too (failedTasks needs it), so the
    // difference is only LangGraph's state reads.
    const withThread = `query($id: ID!, $n: Int) { conversation(id: $id) { runs(first: $n) { edges { node { checkpoints { run { id } } failedTasks { message } } } } } }`;
    const base = (await measure(withThread, { id: conversationId, n: 100 })).statements;
    for (const n of [1, 3, 100]) {
      const { data, statements } = await measure(query, { id: conversationId, n });
      const runs = data.conversation.runs.edges.map((e: any) => e.node);
      expect(runs.map((r: any) => r.messages.map((m: any) => m.content))).toEqual(runs.map((_: unknown, i: number) => [`message ${i}`, `Echo: message ${i}`]));
      // At most SINGLE_READS_PER_THREAD checkpoint reads, or one history read.
      expect(statements - base).toBeGreaterThanOrEqual(1);
      expect(statements - base).toBeLessThanOrEqual(SINGLE_READS_PER_THREAD);
    }
  });

  it("reads many conversations' checkpoint pages with one statement per level", async () => {
    const query = `query($n: Int) { conversations(first: $n) { edges { node { id checkpoints(first: 2) { edges { node { step run { id } } } } } } } }`;
    const two = await measure(query, { n: 2 });
    const seven = await measure(query, { n: 7 });
    const nodes = seven.data.conversations.edges.map((e: any) => e.node);
    expect(nodes).toHaveLength(7);
    for (const node of nodes) expect(node.checkpoints.edges.map((e: any) => e.node.step)).toHaveLength(2);
    // The conversation page, its checkpoint pages, then the checkpoints and failed
    // tasks (one read transaction: 2 more for BEGIN and COMMIT) and the runs of all of them.
    expect(seven.statements).toBe(7);
    expect(seven.statements).toBe(two.statements);
  });

  it("lists conversations with their active and latest runs in a constant number of statements", async () => {
    const query = `query($n: Int) { conversations(first: $n) { totalCount edges { node { id title activeRun { id } latestRun { id status } runs(first: 1) { totalCount } } } } }`;
    const two = await measure(query, { n: 2 });
    const seven = await measure(query, { n: 7 });
    expect(seven.data.conversations.edges).toHaveLength(7);
    for (const { node } of seven.data.conversations.edges) expect(node.latestRun.status).toBe("COMPLETED");
    expect(seven.statements).toBe(two.statements);
  });

  it("pages at most 100 checkpoints", async () => {
    const query = `query($id: ID!, $n: Int) { conversation(id: $id) { checkpoints(first: $n) { pageInfo { hasNextPage } edges { cursor } } } }`;
    const { conversation } = await gqlOk(app.url, query, { id: conversationId, n: 100 });
    expect(conversation.checkpoints.edges).toHaveLength(100);
    expect(conversation.checkpoints.pageInfo.hasNextPage).toBe(true);
    // A larger page is refused before execution (MAX_PAGE_SIZE), or cut to 100; never more.
    const larger = await gql(app.url, query, { id: conversationId, n: 1000 });
    if (larger.errors) expect(larger.errors[0]!.message).toContain("at most 100");
    else expect(larger.data.conversation.checkpoints.edges).toHaveLength(100);
  });
});
