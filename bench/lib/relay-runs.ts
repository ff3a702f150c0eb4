// Runs through runledger with one subscriber each, streaming only once every
// run is set up: the shared step of the relay and concurrent scenarios.
import { startRun } from "../../testkit/graphql.ts";
import { createClient, subscribeTokens, type TokenLog, type Transport } from "./clients.ts";
import { planMessage, releaseStreams, waitForHeld, type StreamPlan } from "../../testkit/fake-ollama.ts";

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
  const started = await Promise.all(runPlans.map((plan) => startRun(url, planMessage(plan))));
  const clients = started.map(() => createClient(transport, subscribeUrl));
  const subscriptions = started.map((run, i) => subscribeTokens(clients[i]!, run.runId));
  await Promise.all(subscriptions.map((s) => s.live));
  await waitForHeld(modelUrl, key, runPlans.length);
  await releaseStreams(modelUrl, key);
  const logs = await Promise.all(subscriptions.map((s) => s.done));
  for (const client of clients) await client.dispose();
  return logs;
}
