// Helpers for the live-event tests: the two transports as a table, raw clients
// that can stop reading (to play a stalled subscriber), and polling.
import http from "node:http";
import { once } from "node:events";
import WebSocket from "ws";
import type { Client as WsClient } from "graphql-ws";
import type { Client as SseClient } from "graphql-sse";
import { sseClient, wsClient } from "./graphql.ts";

export type AnyClient = WsClient | SseClient;

/** Both subscription transports, so a scenario runs over each. */
export const TRANSPORTS: { name: string; client: (url: string) => AnyClient }[] = [
  { name: "graphql-ws", client: (url) => wsClient(url) },
  { name: "graphql-sse", client: (url) => sseClient(url) },
];

export async function until<T>(
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A graphql-transport-ws client on a bare `ws` socket: it can pause reading. */
export interface RawWs {
  socket: WebSocket;
  /** Every message received, parsed, in order. */
  messages: any[];
  subscribe(id: string, query: string, variables?: Record<string, unknown>): void;
  /** Messages of one operation. */
  of(id: string): any[];
  closed: Promise<{ code: number; reason: string }>;
}

export async function rawWs(baseUrl: string): Promise<RawWs> {
  const socket = new WebSocket(baseUrl.replace(/^http/, "ws") + "/graphql", "graphql-transport-ws");
  const messages: any[] = [];
  socket.on("message", (data) => messages.push(JSON.parse(String(data))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once("close", (code, reason) => resolve({ code, reason: String(reason) })));
  socket.on("error", () => {});
  await once(socket, "open");
  socket.send(JSON.stringify({ type: "connection_init" }));
  await until(() => messages.some((m) => m.type === "connection_ack"), "connection_ack");
  return {
    socket,
    messages,
    closed,
    subscribe(id, query, variables) {
      socket.send(JSON.stringify({ id, type: "subscribe", payload: { query, variables } }));
    },
    of(id) {
      return messages.filter((m) => m.id === id);
    },
  };
}

/** One GraphQL-over-SSE request (distinct connections mode) whose body is parsed as it arrives, unless paused. */
export interface RawSse {
  request: http.ClientRequest;
  response: Promise<http.IncomingMessage>;
  /** Parsed `event:`/`data:` messages so far. */
  events: { event: string; data: string }[];
  /** `:` comment lines (keep-alive pings) so far. */
  comments: number;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
}

export function rawSse(baseUrl: string, query: string, variables?: Record<string, unknown>, options: { paused?: boolean } = {}): RawSse {
  const request = http.request(`${baseUrl}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
  });
  request.on("error", () => {});
  const state: RawSse = {
    request,
    events: [],
    comments: 0,
    response: once(request, "response").then(([res]) => res as http.IncomingMessage),
    ended: Promise.resolve(),
  };
  state.ended = state.response.then(
    (res) =>
      new Promise<void>((resolve) => {
        let buffer = "";
        res.setEncoding("utf8");
        if (options.paused) res.pause();
        res.on("data", (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (block.startsWith(":")) {
              state.comments += 1;
              continue;
            }
            const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
            const data = /^data: ?(.*)$/m.exec(block)?.[1] ?? "";
            state.events.push({ event, data });
          }
        });
        res.on("end", () => resolve());
        res.on("close", () => resolve());
      }),
  );
  // A request destroyed before its response rejects these; that is the point of destroying it.
  state.response.catch(() => {});
  state.ended = state.ended.catch(() => {});
  request.end(JSON.stringify({ query, variables }));
  return state;
}

/** The `next` payloads of a raw SSE stream, parsed. */
export function sseResults(sse: RawSse): any[] {
  return sse.events.filter((e) => e.event === "next").map((e) => JSON.parse(e.data));
}

/** Asserts nothing, returns the seqs; used to compare sequences. */
export function seqs(events: { seq: number }[]): number[] {
  return events.map((e) => e.seq);
}

/** 1..n */
export function range(n: number, from = 1): number[] {
  return Array.from({ length: n }, (_, i) => i + from);
}
