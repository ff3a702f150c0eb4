// What an idle server does without its polls. Runs and schedules do not wait
// for a poll to be noticed: with QUEUE_POLL_MS and SCHEDULE_POLL_MS far longer
// than these tests, an instance whose queue is empty looks at it when a
// conversation changes on another instance (a run queued there), and a
// schedule created or resumed fires on time, the sweeper sleeping until each
// next firing in between.
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, testCluster, tempDatabaseUrl } from "../testkit/app.ts";
import { gql } from "../testkit/graphql.ts";
import { until } from "../testkit/streaming.ts";
import type { App } from "../src/app.ts";

const TOKEN = "idle-admin-token";
const ADMIN = { authorization: `Bearer ${TOKEN}` };
/** Polls no test here waits for: the idle queue poll is ten times QUEUE_POLL_MS. */
const SLOW_POLLS = { QUEUE_POLL_MS: "600000", SCHEDULE_POLL_MS: "600000", API_TOKEN: TOKEN };

let fake: FakeOllama | undefined;
let apps: App[] = [];
let cluster: ReturnType<typeof testCluster> | undefined;
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  cluster?.close();
  cluster = undefined;
  await fake?.close();
  fake = undefined;
});

/** How many times the instance has asked whether any run is queued (a look at the queue). */
async function queueLooks(app: App): Promise<number> {
  const metric = await app.metrics.registry.getSingleMetric("runledger_db_operation_duration_seconds")!.get();
  const count = metric.values.find(
    (v) =>
      (v as { metricName?: string }).metricName === "runledger_db_operation_duration_seconds_count" &&
      v.labels.seam === "run_store" &&
      v.labels.operation === "anyQueued",
  );
  return count?.value ?? 0;
}

/** Two instances on one SQLite file and one cluster bus, both polling slowly (SLOW_POLLS). */
async function twoInstances() {
  fake = await startFakeOllama();
  cluster = testCluster();
  const { url: databaseUrl } = tempDatabaseUrl();
  for (let i = 0; i < 2; i++) apps.push(await startTestApp({ ollamaUrl: fake.url, databaseUrl, env: SLOW_POLLS, clusterBus: cluster.join() }));
  return [apps.at(-2)!, apps.at(-1)!] as const;
}

describe("the queue, idle", () => {
  it("is looked at by an idle instance when a conversation changes on another, without waiting for QUEUE_POLL_MS", async () => {
    const [a, b] = await twoInstances();
    // B's look at start found the queue empty: it now waits for the idle poll (100 minutes) or a notice.
    await until(async () => (await queueLooks(b)) >= 1, "B's first look");
    const before = await queueLooks(b);
    await a.services.bus.publishConversationChange({ kind: "updated", conversationId: "elsewhere", at: new Date() });
    await until(async () => (await queueLooks(b)) > before, "B to look at the queue", 5_000);
  });

  it("claims a run at once where it was queued, however slowly the instances poll", async () => {
    const [a, b] = await twoInstances();
    const started = await gql(a.url, `mutation { startRun(input: { message: "Hello" }) { ... on StartRunSuccess { run { id } } } }`, {}, ADMIN);
    const runId = started.data.startRun.run.id as string;
    const status = async () => (await gql(b.url, `query($id: ID!) { run(id: $id) { status } }`, { id: runId }, ADMIN)).data.run.status;
    await until(async () => (await status()) === "COMPLETED", "the run to complete", 10_000);
  });
});

describe("schedules, idle", () => {
  const CREATE = `mutation($cron: String!) {
    createSchedule(input: { agent: "default", cron: $cron, timezone: "UTC", message: "tick" }) { ... on CreateScheduleSuccess { schedule { id } } }
  }`;
  const ACT = (name: string) => `mutation($id: ID!) { ${name}(input: { scheduleId: $id }) { __typename } }`;

  it("fires a schedule created while the sweeper sleeps, and each next firing on time, with SCHEDULE_POLL_MS far off", async () => {
    fake = await startFakeOllama();
    const app = await startTestApp({ ollamaUrl: fake.url, env: SLOW_POLLS });
    apps.push(app);
    // Its first look found nothing: the sweeper sleeps SCHEDULE_POLL_MS unless woken.
    const created = await gql(app.url, CREATE, { cron: "* * * * * *" }, ADMIN);
    const id = created.data.createSchedule.schedule.id as string;
    const withRuns = async () => (await app.storage.schedules.firings(id)).filter((f) => f.runId).length;
    await until(async () => (await withRuns()) >= 2, "two firings", 10_000);
    // Paused, it fires no more; resumed, it fires again at once, however long the sweeper meant to sleep.
    expect((await gql(app.url, ACT("pauseSchedule"), { id }, ADMIN)).data.pauseSchedule.__typename).toBe("PauseScheduleSuccess");
    const paused = await withRuns();
    expect((await gql(app.url, ACT("resumeSchedule"), { id }, ADMIN)).data.resumeSchedule.__typename).toBe("ResumeScheduleSuccess");
    await until(async () => (await withRuns()) > paused, "a firing after the resume", 10_000);
  });
});
