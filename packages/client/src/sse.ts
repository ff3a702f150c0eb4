// The fallback transport: each subscription is its own HTTP request answered
// as Server-Sent Events (GraphQL over SSE, distinct connections mode, which
// runledger serves on /graphql), queries and mutations over HTTP. It works
// wherever plain HTTP does: through proxies that refuse WebSocket upgrades.
import { Value } from "./observable.js";
import { watchNetwork } from "./network.js";
import { httpRequest, post, TransportError, type ConnectionState, type ConnectionStatus, type HttpOptions, type Transport } from "./transport.js";

export interface SseTransportOptions extends HttpOptions {
  /**
   * A stream that sends nothing for this long (ms; default 30 000) is taken for
   * dead and ends with TransportError "closed". The server sends a comment
   * every 12 s, so a live stream is never silent for longer.
   */
  idleTimeoutMs?: number;
}

interface SseMessage {
  event: string;
  data: string;
}

/** Splits an SSE body into messages as it arrives; comments (keep-alive) count as activity only. */
async function readEvents(body: ReadableStream<Uint8Array>, onMessage: (message: SseMessage) => void, onActivity: () => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onActivity();
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":") || line === "") continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = text;
        else if (field === "data") data.push(text);
      }
      if (data.length || event !== "message") onMessage({ event, data: data.join("\n") });
    }
  }
}

export function createSseTransport(options: SseTransportOptions): Transport {
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const connection = new Value<ConnectionState>({ status: "connecting", transport: "sse", reconnects: 0 });
  let everConnected = false;
  let lost = false;
  let disposed = false;
  const streams = new Set<AbortController>();

  const setStatus = (status: ConnectionStatus) => {
    const state = connection.getSnapshot();
    if (state.status !== status) connection.set({ ...state, status });
  };
  // No connection of its own: the server is reachable when an answer comes, and lost when a request fails.
  const reached = () => {
    const state = connection.getSnapshot();
    if (state.status === "connected") return;
    connection.set({ ...state, status: "connected", reconnects: state.reconnects + (everConnected && lost ? 1 : 0) });
    everConnected = true;
    lost = false;
  };
  const failed = (error: unknown) => {
    if (disposed) return;
    if (error instanceof TransportError && error.kind === "unauthorized") return setStatus("unauthorized");
    lost = true;
    setStatus(!network.online() ? "offline" : everConnected ? "reconnecting" : "connecting");
  };
  const network = watchNetwork((online) => {
    if (!online) setStatus("offline");
    else if (connection.getSnapshot().status === "offline") setStatus(everConnected ? "reconnecting" : "connecting");
  });

  return {
    connection,
    async request(operation) {
      try {
        const result = await httpRequest(options, operation);
        reached();
        return result as never;
      } catch (error) {
        failed(error);
        throw error;
      }
    },
    subscribe(operation, sink) {
      const controller = new AbortController();
      streams.add(controller);
      let ended = false;
      let idle: ReturnType<typeof setTimeout> | undefined;
      const end = (how: () => void) => {
        if (ended) return;
        ended = true;
        clearTimeout(idle);
        streams.delete(controller);
        controller.abort();
        if (!disposed) how();
      };
      const activity = () => {
        clearTimeout(idle);
        idle = setTimeout(() => end(() => sink.error(new TransportError("closed", `the stream sent nothing for ${idleTimeoutMs} ms`))), idleTimeoutMs);
      };
      void (async () => {
        const response = await post(options, operation, "text/event-stream", controller.signal);
        const type = response.headers.get("content-type") ?? "";
        if (!type.includes("text/event-stream") || !response.body) {
          // Refused before it started: GraphQL errors as JSON, or a bare HTTP status.
          const body = type.includes("json") ? ((await response.json()) as { errors?: unknown }) : null;
          if (body?.errors) {
            reached();
            return end(() => sink.error(body.errors));
          }
          throw new TransportError("http", `HTTP ${response.status} without an event stream`, response.status);
        }
        reached();
        activity();
        let completed = false;
        await readEvents(
          response.body,
          (message) => {
            if (ended) return;
            if (message.event === "next") sink.next(JSON.parse(message.data));
            else if (message.event === "complete") completed = true;
          },
          activity,
        );
        if (completed) end(() => sink.complete());
        else throw new TransportError("closed", "the event stream ended without completing");
      })().catch((error: unknown) => {
        if (ended) return;
        const failure = error instanceof TransportError ? error : new TransportError("closed", `the event stream broke off: ${(error as Error).message}`);
        failed(failure);
        end(() => sink.error(failure));
      });
      return () => end(() => {});
    },
    reconnect() {
      if (connection.getSnapshot().status === "unauthorized") setStatus(everConnected ? "reconnecting" : "connecting");
    },
    async dispose() {
      disposed = true;
      network.stop();
      for (const controller of [...streams]) controller.abort();
      streams.clear();
    },
  };
}
