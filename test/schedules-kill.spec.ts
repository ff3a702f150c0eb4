// A schedule on two instances sharing one SQLite file, one of them killed with
// SIGKILL while the schedule fires every second, then started again: no firing
// runs twice, the survivor keeps firing, at most the one firing the killed
// instance had claimed and not started is lost (docs/schedules.md), and no run
// is left RUNNING.
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses } from "../testkit/app.ts";
import { gql } from "../testkit/graphql.ts";
import { sleep, until } from "../testkit/streaming.ts";

const TOKEN = "schedules-kill-token";
const CREATE = /* GraphQL */ `
  mutation Create($input: CreateScheduleInput!) {
    createSchedule(input: $input) {
      __typename
      ... on CreateScheduleSuccess { schedule { id } }
    }
  }
`;
const PAUSE = `mutation($id: ID!) { pauseSchedule(input: { scheduleId: $id }) { __typename } }`;

interface Firing {
  fireAt: number;
  runId: string | null;
  error: string | null;
  claimedBy: string;
}

let fake: FakeOllama;
const startServer = trackedServerProcesses();

beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

describe("a schedule across two instances and a SIGKILL", () => {
  it(
    "fires each second once: the survivor goes on, the restarted instance joins again, no firing has two runs and no run stays RUNNING",
    async () => {
      const database = tempDatabaseUrl("runledger-schedules-kill-");
      const env = {
        DATABASE_URL: database.url,
        OLLAMA_HOST: fake.url,
        API_TOKEN: TOKEN,
        SCHEDULE_POLL_MS: "100",
        RUN_HEARTBEAT_MS: "200",
        RUN_LEASE_MS: "3000",
      };
      const call = async (url: string, query: string, variables: Record<string, unknown>) => {
        const result = await gql(url, query, variables, { authorization: `Bearer ${TOKEN}` });
        if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
        return result.data;
      };
      const a = await startServer(env);
      let b = await startServer(env);
      const created = (await call(a.url, CREATE, { input: { agent: "default", cron: "* * * * * *", timezone: "UTC", message: "tick" } })).createSchedule;
      expect(created.__typename).toBe("CreateScheduleSuccess");
      const id: string = created.schedule.id;

      const db = new Database(database.file, { readonly: true });
      const firings = (): Firing[] =>
        (
          db.prepare(`SELECT fire_at AS fireAt, run_id AS runId, error, claimed_by AS claimedBy FROM schedule_firings ORDER BY fire_at`).all() as {
            fireAt: string | number;
            runId: string | null;
            error: string | null;
            claimedBy: string;
          }[]
        ).map((f) => ({ ...f, fireAt: new Date(f.fireAt).getTime() }));
      try {
        // Both instances claim firings before one is killed.
        await until(() => new Set(firings().map((f) => f.claimedBy)).size === 2, "firings claimed by both instances", 20_000);
        const killedAt = Date.now();
        b.child.kill("SIGKILL");
        expect(await b.exited).toBeNull();
        await sleep(3_000);
        const whileDown = firings().filter((f) => f.fireAt > killedAt + 1_000);
        expect(whileDown.length).toBeGreaterThanOrEqual(1);
        b = await startServer(env);
        await sleep(3_000);
        await call(a.url, PAUSE, { id });
        // Runs started before the pause reach an outcome (the ones the killed instance executed are recorded INTERRUPTED).
        await until(
          () => (db.prepare(`SELECT count(*) AS n FROM runs WHERE status IN ('running', 'queued')`).get() as { n: number }).n === 0,
          "no run left running or queued",
          20_000,
        );

        const rows = firings();
        const times = rows.map((f) => f.fireAt);
        expect(new Set(times).size).toBe(rows.length);
        // Every firing started one run of its own, but the one the killed instance may have claimed and not started.
        const withRun = rows.filter((f) => f.runId !== null);
        expect(new Set(withRun.map((f) => f.runId)).size).toBe(withRun.length);
        const lost = rows.filter((f) => f.runId === null && f.error === null);
        expect(lost.length).toBeLessThanOrEqual(1);
        // No run for this schedule that no firing names: nothing fired twice.
        const runs = db.prepare(`SELECT id FROM runs WHERE input = 'tick' OR input LIKE '%"tick"%'`).all() as { id: string }[];
        expect(runs.map((r) => r.id).sort()).toEqual(withRun.map((f) => f.runId).sort());
        // Seconds with no firing are those the whole deployment could not serve: none while the survivor ran.
        const afterKill = times.filter((t) => t > killedAt + 1_000);
        expect(afterKill.length).toBeGreaterThanOrEqual(5);
        for (let i = 1; i < afterKill.length; i++) expect(afterKill[i]! - afterKill[i - 1]!).toBe(1_000);
      } finally {
        db.close();
        database.remove();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
