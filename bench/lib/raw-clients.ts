// Minimal subscribers for fan-out, where a thousand clients share the harness
// process with everything else on the machine. They speak the real protocols
// (graphql-transport-ws over `ws`, GraphQL over SSE over fetch) but skip the
// client libraries' JSON parsing: the token's stamp and the status are read
// off the raw text. The floor relay's clients read the same way, so client
// cost is the same on both sides of the comparison.
import WebSocket from "ws";
import { nowMs } from "../../testkit/clock.ts";
import { RUN_TOKENS } from "../../testkit/documents.ts";
import { newLog, noteToken, type TokenLog, type TokenSubscription } from "./clients.ts";

const STATUS = /"status":"([A-Z]+)"/;

/** Applies one raw message to the log: tokens, then RUNNING (live) or a terminal status. */
export function readRaw(log: TokenLog, text: string, receivedAt: number, markLive: () => void): void {
  if (text.includes("⟨t=")) return noteToken(log, text, receivedAt);
  const status = STATUS.exec(text)?.[1];
  if (status === "RUNNING" || text.includes('"live":true')) {
    log.runningAt ??= receivedAt;
    markLive();
  } else if (status) log.finalStatus = status;
  else if (text.includes('"done":true')) log.finalStatus = "COMPLETED";
}

/** A promise that settles when the subscriber is live, and what settles it. */
export function liveSignal(): { live: Promise<void>; markLive: () => void } {
  let markLive!: () => void;
  const live = new Promise<void>((resolve) => (markLive = resolve));
  return { live, markLive };
}

/** A graphql-transport-ws subscriber to runEvents on its own connection. */
export function rawWsSubscriber(url: string, runId: string): TokenSubscription {
  const log = newLog();
  const { live, markLive } = liveSignal();
  const socket = new WebSocket(url.replace(/^http/, "ws") + "/graphql", "graphql-transport-ws");
  const done = new Promise<TokenLog>((resolve, reject) => {
    socket.on("open", () => socket.send(JSON.stringify({ type: "connection_init" })));
    socket.on("message", (data) => {
      const receivedAt = nowMs();
      const text = data.toString();
      if (text.startsWith('{"type":"connection_ack"')) {
        socket.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query: RUN_TOKENS, variables: { runId } } }));
      } else if (text.includes('"type":"complete"')) {
        markLive();
        resolve(log);
        socket.close(1000);
      } else if (text.includes('"type":"error"')) {
        log.endedBy = `error: ${text.slice(0, 200)}`;
        resolve(log);
      } else if (text.includes('"errors"') && !text.includes("⟨t=")) {
        // A result with errors (SUBSCRIBER_TOO_SLOW is one), followed by complete.
        log.endedBy = `errors: ${/"code":"([A-Z_]+)"/.exec(text)?.[1] ?? text.slice(0, 200)}`;
      } else if (text.includes('"type":"ping"')) socket.send(JSON.stringify({ type: "pong" }));
      else readRaw(log, text, receivedAt, markLive);
    });
    socket.on("error", (error) => {
      log.endedBy ??= `socket error: ${error.message}`;
      resolve(log);
    });
    socket.on("close", (code) => {
      if (log.finalStatus === null) log.endedBy ??= `closed with ${code}`;
      resolve(log);
    });
  });
  return { log, live, done, dispose: () => socket.terminate() };
}

/** Reads a text/event-stream body, calling onEvent with each event's name and data. */
export async function readEventStream(response: Response, onEvent: (event: string, data: string, receivedAt: number) => boolean | void): Promise<void> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const receivedAt = nowMs();
    pending += decoder.decode(value, { stream: true });
    const events = pending.split("\n\n");
    pending = events.pop()!;
    for (const block of events) {
      let event = "message";
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trimStart();
      }
      if (onEvent(event, data, receivedAt) === true) {
        await reader.cancel();
        return;
      }
    }
  }
}

/** A GraphQL-over-SSE subscriber to runEvents (one request per subscription, as graphql-sse's default mode does). */
export function rawSseSubscriber(url: string, runId: string): TokenSubscription {
  const log = newLog();
  const { live, markLive } = liveSignal();
  const controller = new AbortController();
  const done = (async () => {
    const response = await fetch(`${url}/graphql`, {
      method: "POST",
      signal: controller.signal,
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ query: RUN_TOKENS, variables: { runId } }),
    });
    if (!response.ok) throw new Error(`SSE subscription refused: ${response.status} ${await response.text()}`);
    await readEventStream(response, (event, data, receivedAt) => {
      if (event === "complete") return true;
      if (data.includes('"errors"') && !data.includes("⟨t=")) log.endedBy = `errors: ${/"code":"([A-Z_]+)"/.exec(data)?.[1] ?? data.slice(0, 200)}`;
      readRaw(log, data, receivedAt, markLive);
    });
    if (log.finalStatus === null) log.endedBy ??= "stream ended before the terminal event";
    markLive();
    return log;
  })().catch((error) => {
    markLive();
    if (!controller.signal.aborted) log.endedBy ??= `request failed: ${(error as Error).message}`;
    return log;
  });
  return { log, live, done, dispose: () => controller.abort() };
}
