// Clocks that disagree across instances (docs/checkpoints-and-runs.md, "Clocks
// and correlation across instances"). Another instance whose clock runs ahead
// leaves marks and checkpoint ids in the future of this one: a run here waits
// until its clock has passed them, for at most MAX_CLOCK_SKEW_MS; further
// behind, startRun and resumeRun answer CLOCK_SKEW (HTTP 503) and write nothing. At start-up an
// instance whose clock differs from PostgreSQL's by more than the bound refuses
// to start. The future ids are written as that other instance would write them,
// through the saver; the start-up check reads this host's clock through the one
// seam it has for that (startApp's `clock`).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { v6 } from "@langchain/core/utils/uuid";
import { ClockSkewError, mintMark, mintMarkAfter } from "../src/correlation/marks.ts";
import { ConfigError, loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startApp, type App } from "../src/app.ts";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk, startRun } from "../testkit/graphql.ts";
import { CONVERSATION, RESUME_RUN, START_RUN } from "../testkit/documents.ts";
import { postgresDatabase, SERVICES_TIMEOUT_MS } from "../testkit/services.ts";

/** A time-ordered id for a moment `aheadMs` from now, as a host whose clock is that far ahead mints one. */
function idAhead(aheadMs: number): string {
  return v6({ msecs: Date.now() + aheadMs, nsecs: 0, clockseq: 0x1234, node: Uint8Array.from([1, 2, 3, 4, 5, 6]) });
}

describe("mintMarkAfter", () => {
  it("answers at once when there is no floor or the floor is in the past", async () => {
    const past = mintMark();
    const started = performance.now();
    const [free, after] = [await mintMarkAfter(null, 1_000), await mintMarkAfter(past, 1_000)];
    expect(performance.now() - started).toBeLessThan(50);
    expect(after > past).toBe(true);
    expect(free > past).toBe(true);
  });

  it("waits out a clock behind the floor by less than the bound, then mints a mark after it", async () => {
    const floor = idAhead(300);
    const started = performance.now();
    const mark = await mintMarkAfter(floor, 1_000);
    const waited = performance.now() - started;
    expect(mark > floor).toBe(true);
    expect(waited).toBeGreaterThanOrEqual(280);
    expect(waited).toBeLessThan(1_000);
  });

  it("refuses at once, without waiting, a clock further behind than the bound", async () => {
    for (const [aheadMs, boundMs] of [
      [5_000, 1_000],
      [50, 0],
    ] as const) {
      const started = performance.now();
      const refused = (await mintMarkAfter(idAhead(aheadMs), boundMs).catch((e: unknown) => e)) as ClockSkewError;
      expect(performance.now() - started).toBeLessThan(50);
      expect(refused).toBeInstanceOf(ClockSkewError);
      expect(refused.behindMs).toBeGreaterThan(aheadMs - 50);
      expect(refused.behindMs).toBeLessThanOrEqual(aheadMs + 1);
      expect(refused.message).toMatch(/MAX_CLOCK_SKEW_MS/);
    }
  });
});

describe("runs on a conversation another instance's clock ran ahead on", () => {
  let fake: FakeOllama;
  let app: App;

  beforeAll(async () => {
    fake = await startFakeOllama();
    app = await startTestApp({ ollamaUrl: fake.url, env: { MAX_CLOCK_SKEW_MS: "1000" } });
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  /** Appends to the thread a copy of its head under `id`: the state unchanged, as a state update from another instance would leave it. */
  async function appendCheckpoint(conversationId: string, id: string): Promise<void> {
    const { saver } = app.storage;
    const head = (await saver.getTuple({ configurable: { thread_id: conversationId, checkpoint_ns: "" } }))!;
    const parent = { configurable: { thread_id: conversationId, checkpoint_ns: "", checkpoint_id: head.config.configurable?.checkpoint_id } };
    await saver.put(
      parent,
      { ...head.checkpoint, id },
      { ...head.metadata!, source: "update", step: head.metadata!.step + 1 },
      head.checkpoint.channel_versions,
    );
  }

  const RUNS = /* GraphQL */ `
    query($id: ID!) { conversation(id: $id) { updatedAt resumable runs(first: 20) { totalCount edges { node { id status checkpoints { id } } } } checkpoints(first: 100) { edges { node { id run { id } } } } } }
  `;

  it("answers CLOCK_SKEW with HTTP 503 to startRun and resumeRun, writing nothing, when this clock is too far behind", async () => {
    fake.enqueue({ kind: "errorLine", tokens: ["Par"], error: "the model broke" });
    const { runId, conversationId } = await startRun(app.url, "Fail, so there is something to resume.");
    expect(await waitForRun(app.url, runId)).toMatchObject({ status: "FAILED" });
    await appendCheckpoint(conversationId, idAhead(5_000));
    const before = (await gqlOk(app.url, RUNS, { id: conversationId })).conversation;
    expect(before).toMatchObject({ resumable: true, runs: { totalCount: 1 } });

    for (const [document, variables] of [
      [START_RUN, { conversationId, message: "Too early." }],
      [RESUME_RUN, { conversationId }],
    ] as const) {
      const response = await fetch(`${app.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
        body: JSON.stringify({ query: document, variables }),
      });
      expect(response.status).toBe(503);
      const body = (await response.json()) as { data: Record<string, unknown> | null; errors: { message: string; extensions: { code: string } }[] };
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0]).toMatchObject({ extensions: { code: "CLOCK_SKEW" } });
      expect(body.errors[0]!.message).toMatch(/behind the conversation's last recorded moment/);
    }
    // Nothing was written: no run, no new checkpoint, the conversation unchanged.
    expect((await gqlOk(app.url, RUNS, { id: conversationId })).conversation).toEqual(before);
    expect(await app.services.store.activeRun(conversationId)).toBeNull();
  });

  it("waits out a clock behind by less than MAX_CLOCK_SKEW_MS: the run starts after the other instance's checkpoint, which stays no run's", async () => {
    const { runId, conversationId } = await startRun(app.url, "First turn.");
    await waitForRun(app.url, runId);
    const ahead = idAhead(400);
    await appendCheckpoint(conversationId, ahead);

    const asked = performance.now();
    const { startRun: started } = await gqlOk(app.url, START_RUN, { conversationId, message: "Second turn." });
    expect(performance.now() - asked).toBeGreaterThanOrEqual(350);
    expect(started.__typename).toBe("StartRunSuccess");
    const run = (await app.services.store.getRun(started.run.id))!;
    expect(run.startMark > ahead).toBe(true);
    expect(run.startCheckpointId).toBe(ahead);
    expect(await waitForRun(app.url, run.id)).toMatchObject({ status: "COMPLETED" });

    const { conversation } = await gqlOk(app.url, RUNS, { id: conversationId });
    const owners = new Map(conversation.checkpoints.edges.map((e: any) => [e.node.id, e.node.run?.id ?? null]));
    expect(owners.get(ahead)).toBeNull();
    const second = conversation.runs.edges.map((e: any) => e.node).find((r: any) => r.id === run.id);
    expect(second.checkpoints.length).toBeGreaterThan(0);
    for (const checkpoint of second.checkpoints) expect(checkpoint.id > ahead).toBe(true);
    const messages = (await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation.messages.map((m: any) => m.content);
    expect(messages).toEqual(["First turn.", "Echo: First turn.", "Second turn.", "Echo: Second turn."]);
  });
});

describe("start-up on a host whose clock differs from PostgreSQL's", () => {
  let fake: FakeOllama;
  let database: { url: string; drop(): Promise<void> };

  beforeAll(async () => {
    fake = await startFakeOllama();
    database = await postgresDatabase();
  }, SERVICES_TIMEOUT_MS);
  afterAll(async () => {
    await database?.drop();
    await fake?.close();
  });

  const config = (databaseUrl: string) =>
    loadConfig({ PORT: "0", DATABASE_URL: databaseUrl, OLLAMA_HOST: fake.url, MAX_CLOCK_SKEW_MS: "1000", LOG_LEVEL: "info" });

  async function owners(): Promise<number> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      return (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM run_owners`)).rows[0]!.n;
    } finally {
      await client.end();
    }
  }

  it("refuses to start, naming MAX_CLOCK_SKEW_MS, a host further behind or ahead than the bound, before it registers as an owner", async () => {
    for (const [offsetMs, side] of [
      [-5_000, "behind"],
      [5_000, "ahead of"],
    ] as const) {
      const refused = (await startApp(config(database.url), createLogger("silent"), { clock: () => Date.now() + offsetMs }).catch(
        (e: unknown) => e,
      )) as ConfigError;
      expect(refused).toBeInstanceOf(ConfigError);
      expect(refused.message).toMatch(new RegExp(`^MAX_CLOCK_SKEW_MS: this host's clock is ${side} the database's by about \\d+ ms \\(more than 1000\\)`));
      expect(Number(/about (\d+) ms/.exec(refused.message)![1])).toBeGreaterThan(4_900);
    }
    expect(await owners()).toBe(0);
  });

  it("starts within the bound, warning above 100 ms; on SQLite there is no other clock to compare", async () => {
    const lines: string[] = [];
    const app = await startApp(
      config(database.url),
      createLogger("info", (line) => lines.push(line)),
      { clock: () => Date.now() - 400 },
    );
    try {
      const warning = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "this host's clock differs from the database's");
      expect(warning).toMatchObject({ level: "warn", maxClockSkewMs: 1000 });
      expect(warning.offsetMs).toBeGreaterThan(300);
      expect(await owners()).toBe(1);
      const { runId } = await startRun(app.url, "Started anyway.");
      expect(await waitForRun(app.url, runId)).toMatchObject({ status: "COMPLETED" });
    } finally {
      await app.close();
    }
    const sqlite = tempDatabaseUrl();
    const onSqlite = await startApp(config(sqlite.url), createLogger("silent"), { clock: () => Date.now() + 60_000 });
    await onSqlite.close();
    sqlite.remove();
  });
});
