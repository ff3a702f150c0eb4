// Schedules (docs/schedules.md) on every deployment: a real server, the fake
// model. Firings are runs with Run.schedule set; pause, resume and delete;
// scoped to their owner; a bad cron expression or time zone writes nothing;
// firings missed while the server was down follow the schedule's missedPolicy;
// two instances on one database fire each firing once. And DST, through
// croner, across Europe/Berlin's change.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { gql, gqlOk } from "../testkit/graphql.ts";
import { sleep, until } from "../testkit/streaming.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";
import { openSqlite } from "../src/storage/sqlite/database.ts";
import { formatSqliteDate } from "../src/storage/sqlite/rows.ts";
import { decideFiring, MISSED_AFTER_MS, nextFiring } from "../src/schedules/cron.ts";
import type { App } from "../src/app.ts";
import { deployments } from "./conformance/backends.ts";

const ADMIN_TOKEN = "schedules-admin-token";
const SCHEDULE_FIELDS = `id agent cron timezone message owner paused missedPolicy nextRunAt conversation { id } lastRun { id schedule { id } }`;
const CREATE = /* GraphQL */ `
  mutation Create($input: CreateScheduleInput!) {
    createSchedule(input: $input) {
      __typename
      ... on CreateScheduleSuccess { schedule { ${SCHEDULE_FIELDS} } }
      ... on Error { code message }
      ... on ValidationError { field }
    }
  }
`;
const act = (name: "pauseSchedule" | "resumeSchedule" | "deleteSchedule") => /* GraphQL */ `
  mutation Act($id: ID!) {
    ${name}(input: { scheduleId: $id }) {
      __typename
      ${name === "deleteSchedule" ? "... on DeleteScheduleSuccess { scheduleId }" : `... on ${name === "pauseSchedule" ? "Pause" : "Resume"}ScheduleSuccess { schedule { id paused nextRunAt } }`}
      ... on Error { code }
      ... on NotFoundError { entity }
    }
  }
`;
const SCHEDULE = `query($id: ID!) { schedule(id: $id) { ${SCHEDULE_FIELDS} } node(id: $id) { id ... on Schedule { cron } } }`;
const SCHEDULES = `query { schedules(first: 100) { edges { node { id owner } } pageInfo { hasNextPage } } }`;
const RUN = `query($id: ID!) { run(id: $id) { id status kind input schedule { id owner } conversation { id owner } } }`;
const START = `mutation($m: String!) { startRun(input: { message: $m }) { ... on StartRunSuccess { run { id } conversation { id } } } }`;
const DELETE_CONVERSATION = `mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename ... on Error { code } } }`;

describe("croner's DST, through src/schedules/cron.ts", () => {
  it("computes the next firings across Europe/Berlin's change to and from summer time as UTC instants", () => {
    // 09:00 Berlin: 08:00Z in winter (CET), 07:00Z in summer (CEST); summer time began 2026-03-29 at 02:00.
    const spring = [new Date("2026-03-27T12:00:00Z")];
    for (let i = 0; i < 3; i++) spring.push(nextFiring("0 9 * * *", "Europe/Berlin", spring.at(-1)!)!);
    expect(spring.slice(1).map((d) => d.toISOString())).toEqual(["2026-03-28T08:00:00.000Z", "2026-03-29T07:00:00.000Z", "2026-03-30T07:00:00.000Z"]);
    // And back on 2026-10-25 at 03:00.
    expect(nextFiring("0 9 * * *", "Europe/Berlin", new Date("2026-10-24T12:00:00Z"))!.toISOString()).toBe("2026-10-25T08:00:00.000Z");
    expect(nextFiring("0 9 * * *", "Europe/Berlin", new Date("2026-10-24T06:00:00Z"))!.toISOString()).toBe("2026-10-24T07:00:00.000Z");
    // Every 30 minutes across the spring gap: 01:30 CET is followed by 03:00 CEST, 30 real minutes later.
    expect(nextFiring("*/30 * * * *", "Europe/Berlin", new Date("2026-03-29T00:30:00Z"))!.toISOString()).toBe("2026-03-29T01:00:00.000Z");
  });

  it("runs a firing found in time; one found later than a minute follows the missed policy", () => {
    const due = new Date("2026-06-01T09:00:00Z");
    const base = { cron: "0 9 * * *", timezone: "UTC", nextRunAt: due };
    const onTime = new Date(due.getTime() + 900);
    expect(decideFiring({ ...base, missedPolicy: "SKIP" }, onTime)).toEqual({ fireAt: due, next: new Date("2026-06-02T09:00:00Z") });
    const late = new Date(due.getTime() + MISSED_AFTER_MS + 3 * 86_400_000);
    expect(decideFiring({ ...base, missedPolicy: "SKIP" }, late)).toEqual({ fireAt: null, next: new Date("2026-06-05T09:00:00Z") });
    expect(decideFiring({ ...base, missedPolicy: "RUN_ONCE" }, late)).toEqual({ fireAt: due, next: new Date("2026-06-05T09:00:00Z") });
  });
});

for (const deployment of deployments) {
  describe(`schedules: ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App & { databaseFile: string };
    let env: Record<string, string>;
    let cleanup: () => Promise<void>;
    const extra: App[] = [];
    const keys: Record<"alice" | "bob", string> = { alice: "", bob: "" };
    type Who = keyof typeof keys | "admin";
    const as = (who: Who) => ({ authorization: `Bearer ${who === "admin" ? ADMIN_TOKEN : keys[who]}` });
    const call = async (who: Who, query: string, variables?: Record<string, unknown>, url = app.url) => {
      const result = await gql(url, query, variables, as(who));
      if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
      return result.data;
    };

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      env = { API_TOKEN: ADMIN_TOKEN, SCHEDULE_POLL_MS: "100", QUEUE_POLL_MS: "100", ...selected.env };
      app = await startTestApp({ ollamaUrl: fake.url, env });
      if (!env.DATABASE_URL) env.DATABASE_URL = `file:${app.databaseFile}`;
      keys.alice = (await createApiKey(app.storage.apiKeys, { userId: "alice", role: "user", label: null })).key;
      keys.bob = (await createApiKey(app.storage.apiKeys, { userId: "bob", role: "user", label: null })).key;
    }, 60_000);
    afterAll(async () => {
      for (const other of extra) await other.close();
      await app?.close();
      await fake?.close();
      await cleanup?.();
    }, 60_000);

    const create = async (who: Who, input: Record<string, unknown>) =>
      (await call(who, CREATE, { input: { agent: "default", timezone: "UTC", message: "scheduled hello", ...input } })).createSchedule;
    const firings = (id: string) => app.storage.schedules.firings(id);

    it("fires a per-second schedule: each firing a run of its own, in a new conversation of the owner's, with Run.schedule set", async () => {
      const created = await create("alice", { cron: "* * * * * *" });
      expect(created).toMatchObject({
        __typename: "CreateScheduleSuccess",
        schedule: { owner: "alice", paused: false, missedPolicy: "SKIP", conversation: null, lastRun: null },
      });
      const id = created.schedule.id;
      expect(new Date(created.schedule.nextRunAt).getTime()).toBeGreaterThan(Date.now() - 1000);
      const fired = await until(async () => {
        const rows = (await firings(id)).filter((f) => f.runId);
        return rows.length >= 2 && rows;
      }, "two firings with runs");
      const runs = await Promise.all(fired.slice(0, 2).map(async (f) => (await call("alice", RUN, { id: f.runId })).run));
      for (const run of runs) {
        expect(run).toMatchObject({ kind: "START", input: "scheduled hello", schedule: { id, owner: "alice" }, conversation: { owner: "alice" } });
      }
      expect(runs[0].conversation.id).not.toBe(runs[1].conversation.id);
      // One firing per second of the clock, each its own nominal time.
      expect(new Set(fired.map((f) => f.fireAt.getTime())).size).toBe(fired.length);
      for (const f of fired) expect(f.fireAt.getMilliseconds()).toBe(0);
      const { schedule, node } = await call("alice", SCHEDULE, { id });
      expect(schedule.lastRun.schedule.id).toBe(id);
      expect(node).toEqual({ id, cron: "* * * * * *" });
      // A run nobody scheduled has none.
      const plain = (await call("alice", START, { m: "by hand" })).startRun.run.id;
      expect((await call("alice", RUN, { id: plain })).run.schedule).toBeNull();

      // Pause: no firing after it answers.
      expect((await call("alice", act("pauseSchedule"), { id })).pauseSchedule).toMatchObject({
        __typename: "PauseScheduleSuccess",
        schedule: { paused: true },
      });
      const atPause = (await firings(id)).length;
      await sleep(2_200);
      expect(await firings(id)).toHaveLength(atPause);
      // Resume: it fires again, from now on (nothing made up for the pause).
      const resumedAt = Date.now();
      const resumed = (await call("alice", act("resumeSchedule"), { id })).resumeSchedule;
      expect(resumed).toMatchObject({ __typename: "ResumeScheduleSuccess", schedule: { paused: false } });
      expect(new Date(resumed.schedule.nextRunAt).getTime()).toBeGreaterThan(resumedAt - 1000);
      await until(async () => (await firings(id)).length >= atPause + 2, "firings after resume");
      expect((await firings(id)).slice(atPause).every((f) => f.fireAt.getTime() > resumedAt - 1000)).toBe(true);

      // Delete: gone, its firings too; the runs stay, no longer linked.
      expect((await call("alice", act("deleteSchedule"), { id })).deleteSchedule).toEqual({ __typename: "DeleteScheduleSuccess", scheduleId: id });
      expect((await call("alice", SCHEDULE, { id })).schedule).toBeNull();
      expect(await app.storage.schedules.get(id)).toBeNull();
      const run = (await call("alice", RUN, { id: runs[0].id })).run;
      expect(run.schedule).toBeNull();
      expect((await call("alice", act("deleteSchedule"), { id })).deleteSchedule).toEqual({
        __typename: "NotFoundError",
        code: "NOT_FOUND",
        entity: "Schedule",
      });
    }, 60_000);

    it("fires onto its conversation, waiting behind a busy one (ENQUEUE); deleting the conversation deletes the schedule", async () => {
      const conversationId = (await call("alice", START, { m: "the conversation" })).startRun.conversation.id;
      const created = await create("alice", { cron: "* * * * * *", conversationId });
      expect(created.schedule.conversation).toEqual({ id: conversationId });
      const id = created.schedule.id;
      const fired = await until(async () => {
        const rows = (await firings(id)).filter((f) => f.runId);
        return rows.length >= 2 && rows;
      }, "two firings on the conversation");
      for (const f of fired.slice(0, 2))
        expect((await call("alice", RUN, { id: f.runId })).run).toMatchObject({ conversation: { id: conversationId }, schedule: { id } });
      expect((await firings(id)).every((f) => f.error === null)).toBe(true);
      await call("alice", act("pauseSchedule"), { id });
      // Once its runs are done, deleting the conversation takes the schedule with it.
      await until(
        async () =>
          (await gql(app.url, DELETE_CONVERSATION, { id: conversationId }, as("alice"))).data?.deleteConversation.__typename === "DeleteConversationSuccess",
        "conversation deleted",
      );
      expect(await app.storage.schedules.get(id)).toBeNull();
    }, 60_000);

    it("is its owner's: another user neither sees nor acts on it (NotFoundError), an admin sees every one", async () => {
      const mine = (await create("alice", { cron: "0 0 9 * * *" })).schedule;
      const conversationId = (await call("alice", START, { m: "alice's" })).startRun.conversation.id;
      expect((await call("bob", SCHEDULE, { id: mine.id })).schedule).toBeNull();
      expect((await call("bob", SCHEDULE, { id: mine.id })).node).toBeNull();
      expect((await call("bob", SCHEDULES)).schedules.edges.map((e: any) => e.node.owner)).not.toContain("alice");
      for (const name of ["pauseSchedule", "resumeSchedule", "deleteSchedule"] as const) {
        expect((await call("bob", act(name), { id: mine.id }))[name]).toMatchObject({ __typename: "NotFoundError", entity: "Schedule" });
      }
      expect(await create("bob", { cron: "0 0 9 * * *", conversationId })).toMatchObject({ __typename: "NotFoundError", code: "NOT_FOUND" });
      const bobs = (await create("bob", { cron: "0 0 9 * * *" })).schedule;
      expect((await call("bob", SCHEDULES)).schedules.edges.map((e: any) => e.node.id)).toEqual([bobs.id]);
      const alices = (await call("alice", SCHEDULES)).schedules.edges.map((e: any) => e.node.owner);
      expect(new Set(alices)).toEqual(new Set(["alice"]));
      const everyone = (await call("admin", SCHEDULES)).schedules.edges.map((e: any) => e.node.id);
      expect(everyone).toEqual(expect.arrayContaining([mine.id, bobs.id]));
      expect((await call("alice", SCHEDULE, { id: mine.id })).schedule.paused).toBe(false);
    }, 60_000);

    it("refuses a bad cron expression, time zone, agent or message with a ValidationError, writing nothing", async () => {
      const before = (await app.storage.schedules.list({ take: 1000, skip: 0 }, null)).length;
      const cases: [Record<string, unknown>, string][] = [
        [{ cron: "every morning" }, "cron"],
        [{ cron: "61 * * * *" }, "cron"],
        [{ cron: "0 0 0 1 1 * 2020" }, "cron"],
        [{ cron: "0 9 * * *", timezone: "Mars/Olympus_Mons" }, "timezone"],
        [{ cron: "0 9 * * *", timezone: "" }, "timezone"],
        [{ cron: "0 9 * * *", agent: "nobody" }, "agent"],
        [{ cron: "0 9 * * *", message: "   " }, "message"],
        [{ cron: "0 9 * * *", conversationId: "not-a-uuid" }, "conversationId"],
      ];
      for (const [input, field] of cases) {
        expect(await create("alice", input), JSON.stringify(input)).toMatchObject({ __typename: "ValidationError", code: "VALIDATION", field });
      }
      expect(await app.storage.schedules.list({ take: 1000, skip: 0 }, null)).toHaveLength(before);
    });

    it("after a restart, missed firings follow the schedule's policy: SKIP runs none, RUN_ONCE runs one", async () => {
      // Once a year, so no firing of its own comes due during the test.
      const skip = (await create("alice", { cron: "0 0 0 1 1 *", missedPolicy: "SKIP" })).schedule;
      const once = (await create("alice", { cron: "0 0 0 1 1 *", missedPolicy: "RUN_ONCE" })).schedule;
      await app.close();
      const past = new Date(Math.floor(Date.now() / 1000) * 1000 - 2 * 3_600_000);
      await setNextRunAt(env.DATABASE_URL!, [skip.id, once.id], past);
      const restartedAt = Date.now();
      app = await startTestApp({ ollamaUrl: fake.url, env });
      await until(async () => (await firings(once.id)).some((f) => f.runId), "the RUN_ONCE firing's run");
      await sleep(1_000);
      expect(await firings(skip.id)).toEqual([]);
      const ran = await firings(once.id);
      expect(ran).toHaveLength(1);
      expect(ran[0]!.fireAt).toEqual(past);
      for (const s of [skip, once]) {
        const after = (await call("alice", SCHEDULE, { id: s.id })).schedule;
        expect(new Date(after.nextRunAt).getTime()).toBeGreaterThan(restartedAt);
      }
      expect((await call("alice", SCHEDULE, { id: once.id })).schedule.lastRun.id).toBe(ran[0]!.runId);
      for (const s of [skip, once]) await call("alice", act("deleteSchedule"), { id: s.id });
    }, 60_000);

    it("fires each firing exactly once with two instances on one database", async () => {
      const second = await startTestApp({ ollamaUrl: fake.url, env });
      extra.push(second);
      const id = (await create("alice", { cron: "* * * * * *" })).schedule.id;
      await sleep(5_000);
      await call("alice", act("pauseSchedule"), { id });
      const rows = await firings(id);
      expect(rows.length).toBeGreaterThanOrEqual(3);
      // One row per nominal time (the primary key), each with a run of its own.
      const times = rows.map((f) => f.fireAt.getTime());
      expect(new Set(times).size).toBe(rows.length);
      await until(async () => (await firings(id)).every((f) => f.runId), "every firing's run recorded");
      const runIds = (await firings(id)).map((f) => f.runId);
      expect(new Set(runIds).size).toBe(rows.length);
      for (const runId of runIds) expect((await call("alice", RUN, { id: runId })).run.schedule.id).toBe(id);
      // No firing was missed either: consecutive seconds.
      const sorted = [...times].sort((a, b) => a - b);
      expect(sorted.at(-1)! - sorted[0]!).toBe((rows.length - 1) * 1000);
    }, 60_000);
  });
}

describe("schedules and quotas", () => {
  let fake: FakeOllama;
  let app: App;
  beforeAll(async () => {
    fake = await startFakeOllama();
    app = await startTestApp({ ollamaUrl: fake.url, env: { SCHEDULE_POLL_MS: "100", QUOTA_RUNS_PER_MINUTE: "2", QUOTA_ADMINS: "true" } });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it("counts each firing in its owner's quotas: beyond them a firing starts no run and records why", async () => {
    const created = await gqlOk(app.url, CREATE, { input: { agent: "default", timezone: "UTC", message: "tick", cron: "* * * * * *" } });
    const id = created.createSchedule.schedule.id;
    const rows = await until(async () => {
      const all = await app.storage.schedules.firings(id);
      return all.filter((f) => f.error).length >= 1 && all;
    }, "a firing refused by the quota");
    await gqlOk(app.url, act("pauseSchedule"), { id });
    expect(rows.filter((f) => f.runId)).toHaveLength(2);
    expect(rows.find((f) => f.error)!.error).toMatch(/QUOTA|quota/);
  }, 30_000);
});

/** Moves schedules' next firing time, in the database itself, with no server running. */
async function setNextRunAt(databaseUrl: string, ids: string[], at: Date): Promise<void> {
  if (databaseUrl.startsWith("file:")) {
    const db = openSqlite(databaseUrl.slice("file:".length));
    try {
      for (const id of ids) db.prepare(`UPDATE schedules SET next_run_at = ? WHERE id = ?`).run(formatSqliteDate(at), id);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`UPDATE schedules SET next_run_at = $1 WHERE id = ANY($2)`, [at, ids]);
  } finally {
    await client.end();
  }
}
