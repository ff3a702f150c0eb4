// Raw protocol clients for hardening tests: a WebSocket that sends whatever
// frames it is given (graphql-transport-ws or not) and records how the server
// answers and closes, and a plain-fetch SSE reader.
import WebSocket from "ws";

export interface SocketOutcome {
  /** The close code, or null when the upgrade itself was refused. */
  code: number | null;
  reason: string;
  /** The HTTP status of a refused upgrade. */
  httpStatus?: number;
}

export interface RawSocket {
  ws: WebSocket;
  /** Every message received, parsed when it is JSON. */
  messages: any[];
  /** Resolves when the socket is closed, or the upgrade refused. */
  closed: Promise<SocketOutcome>;
  send(frame: string | Buffer | object): void;
  /** The first message (already received or still to come) that matches. */
  message(match: (m: any) => boolean, what?: string, timeoutMs?: number): Promise<any>;
  close(): Promise<SocketOutcome>;
}

export interface RawSocketOptions {
  /** The subprotocol to offer; null offers none. Default graphql-transport-ws. */
  protocol?: string | null;
  headers?: Record<string, string>;
  /** Send connection_init with this payload and wait for connection_ack. */
  init?: Record<string, unknown> | boolean;
}

export async function openRawSocket(baseUrl: string, options: RawSocketOptions = {}): Promise<RawSocket> {
  const url = baseUrl.replace(/^http/, "ws") + "/graphql";
  const protocol = options.protocol === undefined ? "graphql-transport-ws" : options.protocol;
  const ws = protocol === null ? new WebSocket(url, { headers: options.headers }) : new WebSocket(url, protocol, { headers: options.headers });
  const messages: any[] = [];
  const waiters = new Set<() => void>();
  ws.on("message", (data) => {
    const text = String(data);
    try {
      messages.push(JSON.parse(text));
    } catch {
      messages.push(text);
    }
    for (const wake of waiters) wake();
  });
  const closed = new Promise<SocketOutcome>((resolve) => {
    ws.on("close", (code, reason) => resolve({ code, reason: String(reason) }));
    ws.on("unexpected-response", (_req, res) => {
      resolve({ code: null, reason: res.statusMessage ?? "", httpStatus: res.statusCode });
      res.resume();
    });
    ws.on("error", () => {}); // the outcome is the close or the refused upgrade
  });
  const opened = await Promise.race([new Promise<boolean>((resolve) => ws.once("open", () => resolve(true))), closed.then(() => false)]);

  const socket: RawSocket = {
    ws,
    messages,
    closed,
    send(frame) {
      ws.send(typeof frame === "string" || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
    },
    message(match, what = "a matching message", timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(match);
          if (found === undefined) return false;
          cleanup();
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no ${what} within ${timeoutMs} ms; got ${JSON.stringify(messages)}`));
        }, timeoutMs);
        const wake = () => void check();
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(wake);
        };
        waiters.add(wake);
        void closed.then(() => {
          if (!check()) {
            cleanup();
            reject(new Error(`socket closed before ${what}; got ${JSON.stringify(messages)}`));
          }
        });
        check();
      });
    },
    async close() {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(1000);
      return closed;
    },
  };
  if (opened && options.init) {
    socket.send({ type: "connection_init", ...(options.init === true ? {} : { payload: options.init }) });
    await socket.message((m) => m?.type === "connection_ack", "connection_ack");
  }
  return socket;
}

/** A graphql-transport-ws subscribe frame. */
export function subscribe(id: string, query: string, variables?: Record<string, unknown>, operationName?: string) {
  return { id, type: "subscribe", payload: { query, ...(variables ? { variables } : {}), ...(operationName ? { operationName } : {}) } };
}

/** Everything the server sent for one operation id, up to its complete or error message. */
export async function operationResult(socket: RawSocket, id: string): Promise<{ next: any[]; error?: any[] }> {
  const end = await socket.message((m) => m?.id === id && (m.type === "complete" || m.type === "error"), `complete or error for ${id}`);
  const next = socket.messages.filter((m) => m?.id === id && m.type === "next").map((m) => m.payload);
  return end.type === "error" ? { next, error: end.payload } : { next };
}

export interface SseEvent {
  event: string;
  data: any;
}

/** One GraphQL over SSE request (distinct connections), read to its end. */
export async function sseRequest(
  baseUrl: string,
  body: { query: string; variables?: Record<string, unknown>; operationName?: string },
  options: { method?: "GET" | "POST"; headers?: Record<string, string> } = {},
): Promise<{ status: number; contentType: string | null; events: SseEvent[]; text: string }> {
  const method = options.method ?? "POST";
  const headers = { accept: "text/event-stream", ...options.headers };
  const response =
    method === "POST"
      ? await fetch(`${baseUrl}/graphql`, { method, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })
      : await fetch(
          `${baseUrl}/graphql?${new URLSearchParams({ query: body.query, ...(body.variables ? { variables: JSON.stringify(body.variables) } : {}), ...(body.operationName ? { operationName: body.operationName } : {}) })}`,
          { headers },
        );
  const text = await response.text();
  const events: SseEvent[] = [];
  for (const block of text.split("\n\n")) {
    const lines = block.split("\n").filter((l) => l && !l.startsWith(":"));
    if (!lines.length) continue;
    const event =
      lines
        .find((l) => l.startsWith("event:"))
        ?.slice(6)
        .trim() ?? "message";
    const data = lines
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).trimStart())
      .join("\n");
    events.push({ event, data: data ? JSON.parse(data) : null });
  }
  return { status: response.status, contentType: response.headers.get("content-type"), events, text };
}
