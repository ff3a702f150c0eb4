// Runs through runledger with one subscriber each, streaming only once every
// run is set up: the shared step of the relay and concurrent scenarios.
import type { Client as WsClient } from "graphql-ws";
import { startRun, wsClient } from "../../testkit/graphql.ts";
import { START_RUN } from "../../testkit/documents.ts";
import { createClient, subscribeTokens, type TokenLog, type Transport } from "./clients.ts";
import { planMessage, releaseStreams, waitForHeld, type StreamPlan } from "../../testkit/fake-ollama.ts";

/**
 * With BENCH_START_ON_SOCKET=1 (and transport "ws") each run is started over
 * its subscriber's own socket, not over HTTP: with several workers, the run
 * then executes on the worker that serves its subscriber, and none of its
 * events crosses between workers (bench/analysis.md, "Where the 50-run tail is").
 */
const START_ON_SOCKET = process.env.BENCH_START_ON_SOCKET === "1";

/** startRun sent over a graphql-ws socket; the client must not be lazy, or the socket closes before the subscription that follows. */
function startRunOnSocket(client: WsClient, message: string): Promise<{ runId: string }> {
  return new Promise((resolve, reject) => {
    let runId: string | undefined;
    client.subscribe<{ startRun: { run?: { id: string } } }>(
      { query: START_RUN, variables: { message } },
      {
        next: (result) => (runId = result.data?.startRun.run?.id),
        error: reject,
        complete: () => (runId ? resolve({ runId }) : reject(new Error("startRun over the socket answered no run"))),
      },
    );
  });
}

/**
 * Starts the runs, subscribes one client per run, waits until every subscription is live and every model request has arrived, then lets the model stream.
 * The clients subscribe on `subscribeUrl` when given: another instance than the one that runs them.
 */
export async function relayThroughRunledger(
  url: string,
  modelUrl: string,
  transport: Transport,
  runPlans: StreamPlan[],
  key: string,
  subscribeUrl = url,
): Promise<TokenLog[]> {
  const onSocket = START_ON_SOCKET && transport === "ws";
  const clients = runPlans.map(() => (onSocket ? wsClient(subscribeUrl, { lazy: false }) : createClient(transport, subscribeUrl)));
  const started = await Promise.all(
    runPlans.map((plan, i) => (onSocket ? startRunOnSocket(clients[i] as WsClient, planMessage(plan)) : startRun(url, planMessage(plan)))),
  );
  const subscriptions = started.map((run, i) => subscribeTokens(clients[i]!, run.runId));
  await Promise.all(subscriptions.map((s) => s.live));
  await waitForHeld(modelUrl, key, runPlans.length);
  await releaseStreams(modelUrl, key);
  const logs = await Promise.all(subscriptions.map((s) => s.done));
  for (const client of clients) await client.dispose();
  return logs;
}
