// The terminal event comes only after the outcome is committed, on every
// deployment, and across instances where events go through Redis: the moment a
// subscriber receives a run's terminal RunStatusEvent, the run's row, read from
// the subscriber's own instance (its store and its API), already holds that
// status, finishedAt and usage (and a waiting run's interrupts). A check after
// the stream has ended could not tell a commit that raced the event from one
// that preceded it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama, type FakeStep } from "../../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl, testCluster } from "../../testkit/app.ts";
import { gqlOk } from "../../testkit/graphql.ts";
import { CANCEL_RUN, START_AGENT_RUN } from "../../testkit/documents.ts";
import { TRANSPORTS, until, type AnyClient } from "../../testkit/streaming.ts";
import type { App } from "../../src/app.ts";
import type { RunRecord } from "../../src/domain/records.ts";
import type { Deployment } from "./api.ts";

const STATUS_EVENTS = /* GraphQL */ `
  subscription($runId: ID!) { runEvents(runId: $runId) { __typename seq ... on RunStatusEvent { status errorCode } } }
`;
const OUTCOME = /* GraphQL */ `
  query($id: ID!) {
    run(id: $id) { status errorCode finishedAt usage { inputTokens outputTokens modelCalls timeToFirstTokenMs modelDurationMs } interrupts { id } }
  }
`;

/** What one subscriber saw and read when the terminal event reached it. */
interface Arrival {
  where: string;
  event: { status: string; errorCode: string | null };
  stored: Promise<RunRecord | null>;
  api: Promise<any>;
}

export function describeTerminalEventConformance(deployment: Deployment) {
  describe(`the terminal event after the commit, on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let cleanup: () => Promise<void> = async () => {};
    /** The instance that executes the runs first; a second one when events are shared. */
    let instances: App[] = [];

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      // "careful" pauses for approval before it calculates: a run that ends WAITING.
      const config = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "runledger-terminal-")), "agents.json");
      fs.writeFileSync(
        config,
        JSON.stringify({ agents: { default: { type: "chat" }, careful: { type: "chat", tools: ["calculator"], requireApproval: ["calculator"] } } }),
      );
      const env: Record<string, string> = { RUNLEDGER_CONFIG: config, ...selected.env };
      if (deployment.cluster) {
        const cluster = testCluster();
        const databaseUrl = tempDatabaseUrl("runledger-terminal-cluster-").url;
        instances = [
          await startTestApp({ ollamaUrl: fake.url, env, databaseUrl, clusterBus: cluster.join() }),
          await startTestApp({ ollamaUrl: fake.url, env, databaseUrl, clusterBus: cluster.join() }),
        ];
        const selectedCleanup = cleanup;
        cleanup = async () => {
          cluster.close();
          await selectedCleanup();
        };
        return;
      }
      instances = [await startTestApp({ ollamaUrl: fake.url, env })];
      if (env.REDIS_URL) instances.push(await startTestApp({ ollamaUrl: fake.url, env }));
    }, 60_000);
    afterAll(async () => {
      for (const instance of instances) await instance.close();
      await cleanup();
      await fake?.close();
    });

    /**
     * Subscribes on every instance over both transports, waits until each has
     * its first event, then lets `act` end the run; every subscriber reads the
     * row the moment its terminal event arrives.
     */
    async function observe(runId: string, act: () => Promise<void>): Promise<Arrival[]> {
      const arrivals: Arrival[] = [];
      const clients: AnyClient[] = [];
      const watchers = instances.flatMap((instance, i) =>
        TRANSPORTS.map(({ name, client: connect }) => {
          const client = connect(instance.url);
          clients.push(client);
          const where = `${name} on instance ${i + 1}`;
          let events = 0;
          const done = new Promise<void>((resolve, reject) => {
            client.subscribe<any>(
              { query: STATUS_EVENTS, variables: { runId } },
              {
                next: (result) => {
                  if (result.errors?.length) return reject(new Error(JSON.stringify(result.errors)));
                  const event = result.data.runEvents;
                  events += 1;
                  if (event.__typename === "RunStatusEvent" && event.status !== "RUNNING") {
                    // Now, before anything else runs: the store first (SQLite answers synchronously), then the API.
                    const stored = instance.services.store.getRun(runId);
                    arrivals.push({ where, event, stored, api: gqlOk(instance.url, OUTCOME, { id: runId }).then((d) => d.run) });
                  }
                },
                error: (error) => reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
                complete: resolve,
              },
            );
          });
          return { done, seen: () => events > 0 };
        }),
      );
      try {
        await until(() => watchers.every((w) => w.seen()), "every subscriber's first event");
        await act();
        await Promise.all(watchers.map((w) => w.done));
      } finally {
        for (const client of clients) await (client as { dispose: () => unknown }).dispose();
      }
      return arrivals;
    }

    /** Every subscriber got exactly one terminal event, and what it read then is the outcome as finally stored. */
    async function expectCommittedOnArrival(runId: string, arrivals: Arrival[], status: string) {
      expect(arrivals.map((a) => a.where).sort()).toEqual(instances.flatMap((_, i) => TRANSPORTS.map(({ name }) => `${name} on instance ${i + 1}`)).sort());
      const final = (await instances[0]!.services.store.getRun(runId))!;
      expect(final.status).toBe(status.toLowerCase());
      expect(final.finishedAt).not.toBeNull();
      expect(final.usage).not.toBeNull();
      for (const arrival of arrivals) {
        expect(arrival.event.status, arrival.where).toBe(status);
        const stored = await arrival.stored;
        expect({ status: stored?.status, errorCode: stored?.errorCode, finishedAt: stored?.finishedAt, usage: stored?.usage }, arrival.where).toEqual({
          status: final.status,
          errorCode: final.errorCode,
          finishedAt: final.finishedAt,
          usage: final.usage,
        });
        const api = await arrival.api;
        expect(api, arrival.where).toMatchObject({ status, errorCode: arrival.event.errorCode, usage: final.usage });
        expect(new Date(api.finishedAt).getTime(), arrival.where).toBe(final.finishedAt!.getTime());
        if (status === "WAITING") expect(api.interrupts, arrival.where).toHaveLength(1);
      }
    }

    /** The model's next answer waits until released. */
    function hold(step: FakeStep | null): () => void {
      let release = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      fake.setResponder(async (request) => {
        await gate;
        return step ?? defaultResponder(request);
      });
      return release;
    }

    async function start(message: string, agent = "default"): Promise<string> {
      const { startRun } = await gqlOk(instances[0]!.url, START_AGENT_RUN, { message, agent });
      expect(startRun.__typename).toBe("StartRunSuccess");
      return startRun.run.id;
    }

    it("COMPLETED: the row holds the outcome and the usage of its model calls when the event arrives", async () => {
      const release = hold(null);
      const runId = await start("Complete, please.");
      const arrivals = await observe(runId, async () => release());
      await expectCommittedOnArrival(runId, arrivals, "COMPLETED");
      expect((await arrivals[0]!.stored)?.usage?.modelCalls).toBe(1);
    });

    it("FAILED: the row holds the error when the event arrives", async () => {
      const release = hold({ kind: "errorLine", tokens: ["Half "], error: "the model broke" });
      const runId = await start("Fail, please.");
      const arrivals = await observe(runId, async () => release());
      await expectCommittedOnArrival(runId, arrivals, "FAILED");
      expect((await arrivals[0]!.stored)?.errorCode).toBe("MODEL_ERROR");
    });

    it("WAITING: the row and its interrupt are recorded when the event arrives", async () => {
      const release = hold(null);
      const runId = await start("Please calculate 6 * 7", "careful");
      const arrivals = await observe(runId, async () => release());
      await expectCommittedOnArrival(runId, arrivals, "WAITING");
    });

    it("CANCELLED from the last instance (another than the executing one where events are shared)", async () => {
      fake.setResponder(() => ({ kind: "silence", tokens: ["Working "] }));
      const runId = await start("Cancel me.");
      const arrivals = await observe(runId, async () => {
        await until(() => fake.openChatRequests() === 1, "the model request");
        const { cancelRun } = await gqlOk(instances.at(-1)!.url, CANCEL_RUN, { runId });
        expect(cancelRun.__typename).toBe("CancelRunSuccess");
      });
      await expectCommittedOnArrival(runId, arrivals, "CANCELLED");
      await until(() => fake.openChatRequests() === 0, "the model request to close");
    });
  });
}
