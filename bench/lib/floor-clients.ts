// Clients of the floor relay (floor-relay-main.ts): a plain WebSocket and a
// plain SSE reader, timing tokens exactly as the raw GraphQL clients do.
import WebSocket from "ws";
import { nowMs } from "../../testkit/clock.ts";
import { newLog, type TokenLog, type TokenSubscription } from "./clients.ts";
import { liveSignal, readEventStream, readRaw } from "./raw-clients.ts";
import { startUrlProcess, type Child } from "../../testkit/processes.ts";
import { KILL_AFTER_MS } from "./runledger.ts";

export function startFloorProcess(modelUrl: string): Promise<Child & { url: string }> {
  return startUrlProcess("bench/lib/floor-relay-main.ts", { env: { OLLAMA_HOST: modelUrl }, exposeGc: true, killAfterMs: KILL_AFTER_MS });
}

export function floorWsSubscriber(url: string): TokenSubscription {
  const log = newLog();
  const { live, markLive } = liveSignal();
  const socket = new WebSocket(url.replace(/^http/, "ws") + "/ws");
  const done = new Promise<TokenLog>((resolve, reject) => {
    socket.on("message", (data) => {
      readRaw(log, data.toString(), nowMs(), markLive);
      if (log.finalStatus) resolve(log);
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(log));
  });
  return { log, live, done, dispose: () => socket.terminate() };
}

export function floorSseSubscriber(url: string): TokenSubscription {
  const log = newLog();
  const { live, markLive } = liveSignal();
  const controller = new AbortController();
  const done = (async () => {
    const response = await fetch(`${url}/sse`, { signal: controller.signal, headers: { accept: "text/event-stream" } });
    await readEventStream(response, (_event, data, receivedAt) => {
      readRaw(log, data, receivedAt, markLive);
      return log.finalStatus !== null;
    });
    return log;
  })().catch((error) => {
    if (controller.signal.aborted) return log;
    throw error;
  });
  return { log, live, done, dispose: () => controller.abort() };
}

export async function floorStream(url: string, message: string): Promise<void> {
  const response = await fetch(`${url}/stream`, { method: "POST", body: JSON.stringify({ message }) });
  await response.arrayBuffer();
}
