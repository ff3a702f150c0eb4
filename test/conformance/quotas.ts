// Per-principal quotas on every deployment: runs active at once and runs started
// per minute, counted in the database, so they hold on every instance; beyond
// them a typed QuotaExceededError (REST: 429 with Retry-After) that changes nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, startTestApp, waitForRun } from "../../testkit/app.ts";
import { startServerProcess } from "../../testkit/processes.ts";
import { gqlOk } from "../../testkit/graphql.ts";
import { CANCEL_RUN } from "../../testkit/documents.ts";
import { until } from "../../testkit/streaming.ts";
import type { App } from "../../src/app.ts";
import type { Deployment } from "./api.ts";

const START = /* GraphQL */ `
  mutation Start($message: String!, $conversationId: ID) {
    startRun(input: { message: $message, conversationId: $conversationId }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on QuotaExceededError { code message limit retryAfterSeconds }
      ... on Error { code message }
    }
  }
`;
const COUNT = /* GraphQL */ `query { conversations(first: 1) { totalCount } }`;

export function describeQuotaConformance(deployment: Deployment) {
  describe(`quotas on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App & { databaseFile: string };
    let env: Record<string, string>;
    let cleanup: () => Promise<void> = async () => {};

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      // The local developer is an admin: QUOTA_ADMINS holds it to the quotas.
      env = { QUOTA_ACTIVE_RUNS: "1", QUOTA_RUNS_PER_MINUTE: "3", QUOTA_ADMINS: "true", ...selected.env };
      app = await startTestApp({ ollamaUrl: fake.url, env });
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await cleanup();
      await fake?.close();
    });

    it(
      "refuses a start beyond the active runs and beyond the runs per minute, on every instance and over REST, writing nothing",
      { timeout: PROCESS_TEST_TIMEOUT_MS },
      async () => {
        const other = await startServerProcess({ ...env, DATABASE_URL: env.DATABASE_URL ?? `file:${app.databaseFile}`, OLLAMA_HOST: fake.url });
        try {
          fake.enqueue({ kind: "silence", tokens: ["Busy "] });
          const first = (await gqlOk(app.url, START, { message: "One at a time." })).startRun;
          expect(first.__typename).toBe("StartRunSuccess");
          await until(() => fake.openChatRequests() > 0, "the model request");
          const conversations = (await gqlOk(app.url, COUNT)).conversations.totalCount;
          for (const instance of [app, other]) {
            expect((await gqlOk(instance.url, START, { message: "A second one." })).startRun).toMatchObject({
              __typename: "QuotaExceededError",
              code: "QUOTA_EXCEEDED",
              limit: "QUOTA_ACTIVE_RUNS",
              retryAfterSeconds: 1,
            });
          }
          const rest = await fetch(`${other.url}/api/chat`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ message: "Over REST." }),
          });
          expect(rest.status).toBe(429);
          expect(rest.headers.get("retry-after")).toBe("1");
          expect(await rest.json()).toMatchObject({ code: "QUOTA_EXCEEDED", limit: "QUOTA_ACTIVE_RUNS", retryAfterSeconds: 1 });
          // Nothing was written by the refusals.
          expect((await gqlOk(app.url, COUNT)).conversations.totalCount).toBe(conversations);

          await gqlOk(app.url, CANCEL_RUN, { runId: first.run.id });
          // Two more starts fill the minute (three runs); each ends before the next.
          for (const message of ["Two.", "Three."]) {
            const started = (await gqlOk(other.url, START, { message })).startRun;
            expect(started.__typename).toBe("StartRunSuccess");
            expect((await waitForRun(other.url, started.run.id)).status).toBe("COMPLETED");
          }
          for (const instance of [app, other]) {
            const refused = (await gqlOk(instance.url, START, { message: "Four." })).startRun;
            expect(refused).toMatchObject({ __typename: "QuotaExceededError", limit: "QUOTA_RUNS_PER_MINUTE" });
            expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
            expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
          }
          expect((await gqlOk(app.url, COUNT)).conversations.totalCount).toBe(conversations + 2);
        } finally {
          expect(await other.stop()).toBe(0);
        }
      },
    );

    it("leaves admins out of the quotas unless QUOTA_ADMINS is true", { timeout: PROCESS_TEST_TIMEOUT_MS }, async () => {
      // The same database, limits reached above; this instance does not hold admins to them. A process of
      // its own: two instances in one process would take each other for a previous incarnation and recover its runs.
      const exempt = await startServerProcess({
        ...env,
        DATABASE_URL: env.DATABASE_URL ?? `file:${app.databaseFile}`,
        OLLAMA_HOST: fake.url,
        QUOTA_ADMINS: "false",
      });
      try {
        const started = (await gqlOk(exempt.url, START, { message: "Admins go ahead." })).startRun;
        expect(started.__typename).toBe("StartRunSuccess");
        expect((await waitForRun(exempt.url, started.run.id)).status).toBe("COMPLETED");
      } finally {
        expect(await exempt.stop()).toBe(0);
      }
    });
  });
}
