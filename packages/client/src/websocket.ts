// The default transport: one graphql-ws socket per client carrying every
// subscription (graphql-transport-ws on /graphql), queries and mutations over
// HTTP. The socket is kept open, pinged, and reconnected with backoff; the
// credential provider is asked on every connect, and again after a 4401 close.
//
// A subscription never survives its socket: when a connected socket closes,
// each one ends with TransportError "closed", so its owner subscribes again
// with variables of its own choosing (a run's `after: lastSeq`). graphql-ws
// alone would send it again with the variables it started with.
import { createClient, type Client } from "graphql-ws/client";
import { Value } from "./observable.js";
import { Alarm, backoff, watchNetwork } from "./network.js";
import {
  askCredential,
  graphqlEndpoint,
  httpRequest,
  TransportError,
  type ConnectionState,
  type ConnectionStatus,
  type HttpOptions,
  type Operation,
  type Sink,
  type Transport,
} from "./transport.js";

export interface WebSocketTransportOptions extends HttpOptions {
  /** The WebSocket class, where there is no global one (Node 20: the `ws` package's default export). */
  webSocketImpl?: unknown;
  /** How often the client pings the server (ms; default 10 000). Browsers hide the server's pings, so a socket whose network died would look open for minutes. */
  keepAliveMs?: number;
  /** How long a ping waits for its pong before the socket is dropped and made again (ms; default 5 000). */
  pongTimeoutMs?: number;
  /** Failed attempts, none of them connected, after which `onUnreachable` is called (default 3). */
  unreachableAfter?: number;
  /** The socket could not be made `unreachableAfter` times in a row and never was (a proxy that refuses upgrades): the auto transport falls back to SSE. */
  onUnreachable?: () => void;
}

/** The close code of a connection whose credential is missing, wrong, expired or revoked. */
const UNAUTHORIZED = 4401;

interface CloseLike {
  code: number;
  reason?: string;
}

function isClose(value: unknown): value is CloseLike {
  return typeof value === "object" && value !== null && typeof (value as { code?: unknown }).code === "number";
}

function describeClose(event: unknown): string {
  if (isClose(event)) return `the connection closed (${event.code}${event.reason ? ` ${event.reason}` : ""})`;
  return event instanceof Error ? event.message : "the connection closed";
}

/** Disposes a graphql-ws client whose socket may have failed: its dispose() rejects with that failure, which is known already. */
function quietly(client: Client): void {
  Promise.resolve(client.dispose()).catch(() => {});
}

interface Subscription {
  operation: Operation;
  sink: Sink;
  /** Counts attachments to a graphql-ws client; callbacks of an earlier one are ignored. */
  attachment: number;
  unsubscribe: (() => void) | null;
  ended: boolean;
}

export function createWebSocketTransport(options: WebSocketTransportOptions): Transport {
  const wsUrl = graphqlEndpoint(options.url).replace(/^http/, "ws");
  const keepAliveMs = options.keepAliveMs ?? 10_000;
  const pongTimeoutMs = options.pongTimeoutMs ?? 5_000;
  const unreachableAfter = options.unreachableAfter ?? 3;
  const connection = new Value<ConnectionState>({ status: "connecting", transport: "websocket", reconnects: 0 });
  const alarm = new Alarm();
  /** Subscriptions handed to the current graphql-ws client. */
  const attached = new Set<Subscription>();
  /** Subscriptions waiting for a client (while the credential is refused). */
  const parked = new Set<Subscription>();
  let client: Client | null = null;
  /** Counts clients made: events of a client that is no longer the current one change nothing. */
  let generation = 0;
  let everConnected = false;
  let acknowledged = false;
  let failedAttempts = 0;
  let lastCredential: string | undefined;
  let disposed = false;

  const setStatus = (status: ConnectionStatus) => {
    const state = connection.getSnapshot();
    if (state.status !== status) connection.set({ ...state, status });
  };
  const waitingStatus = (): ConnectionStatus => (!network.online() ? "offline" : everConnected ? "reconnecting" : "connecting");

  const network = watchNetwork(
    (online) => {
      if (online) alarm.wake();
      if (connection.getSnapshot().status !== "connected" && connection.getSnapshot().status !== "unauthorized") setStatus(waitingStatus());
    },
    () => alarm.wake(),
  );

  const attach = (sub: Subscription) => {
    const attachment = ++sub.attachment;
    const current = () => attachment === sub.attachment && !sub.ended;
    attached.add(sub);
    sub.unsubscribe = client!.subscribe(sub.operation as { query: string; variables?: Record<string, unknown> }, {
      next: (result) => {
        if (current()) sub.sink.next(result as never);
      },
      error: (error) => {
        if (!current()) return;
        finish(sub);
        sub.sink.error(isClose(error) ? new TransportError(error.code === UNAUTHORIZED ? "unauthorized" : "closed", describeClose(error)) : error);
      },
      complete: () => {
        if (!current()) return;
        finish(sub);
        sub.sink.complete();
      },
    });
  };

  /** Takes the subscription off its graphql-ws client; nothing it does after reaches the sink. */
  const detach = (sub: Subscription) => {
    sub.attachment++;
    attached.delete(sub);
    const unsubscribe = sub.unsubscribe;
    sub.unsubscribe = null;
    unsubscribe?.();
  };

  const finish = (sub: Subscription) => {
    sub.ended = true;
    attached.delete(sub);
    parked.delete(sub);
  };

  /** The socket closed: a live subscription missed what came meanwhile, so it ends and its owner subscribes again. */
  const endAttached = (reason: string, park: boolean) => {
    for (const sub of [...attached]) {
      detach(sub);
      if (park) {
        parked.add(sub);
      } else {
        finish(sub);
        sub.sink.error(new TransportError("closed", reason));
      }
    }
  };

  /** The server refused the credential: ask the provider again; a different one reconnects at once, the same one waits for reconnect(). */
  const refused = async (retired: Client) => {
    const refusedCredential = lastCredential;
    quietly(retired);
    let next: string | undefined;
    try {
      next = await askCredential(options.credentials);
    } catch {
      next = undefined;
    }
    if (disposed || client) return;
    if (next !== undefined && next !== refusedCredential) open();
    else setStatus("unauthorized");
  };

  function open() {
    acknowledged = false;
    let pongTimer: ReturnType<typeof setTimeout> | undefined;
    const mine = ++generation;
    const current = () => mine === generation && !disposed;
    // A client that is not lazy starts connecting inside createClient: its first events come before it is assigned.
    let created: Client | undefined;
    created = createClient({
      url: wsUrl,
      webSocketImpl: options.webSocketImpl,
      lazy: false,
      retryAttempts: Number.POSITIVE_INFINITY,
      shouldRetry: () => true,
      retryWait: async (retries) => {
        await alarm.sleep(backoff(retries));
        while (!disposed && !network.online()) await alarm.sleep(30_000);
      },
      keepAlive: keepAliveMs,
      connectionParams: async () => {
        const credential = await askCredential(options.credentials);
        lastCredential = credential;
        return credential ? { authorization: `Bearer ${credential}` } : {};
      },
      // A close graphql-ws does not retry (4401, a protocol error): this client is done, a new one takes over.
      onNonLazyError: (error) => {
        if (!current()) return;
        if (isClose(error) && error.code === UNAUTHORIZED) return;
        generation++;
        client = null;
        if (created) quietly(created);
        endAttached(describeClose(error), false);
        void alarm.sleep(backoff(failedAttempts++)).then(() => {
          if (!disposed && !client) open();
        });
      },
      on: {
        connecting: () => {
          if (current()) setStatus(waitingStatus());
        },
        connected: () => {
          if (!current()) return;
          acknowledged = true;
          failedAttempts = 0;
          const state = connection.getSnapshot();
          connection.set({ ...state, status: "connected", reconnects: state.reconnects + (everConnected ? 1 : 0) });
          everConnected = true;
        },
        closed: (event) => {
          clearTimeout(pongTimer);
          if (!current()) return;
          const wasConnected = acknowledged;
          acknowledged = false;
          if (isClose(event) && event.code === UNAUTHORIZED) {
            generation++;
            client = null;
            endAttached(describeClose(event), !wasConnected);
            setStatus("reconnecting");
            void refused(created!);
            return;
          }
          if (wasConnected) endAttached(describeClose(event), false);
          else if (++failedAttempts === unreachableAfter && !everConnected) options.onUnreachable?.();
          setStatus(waitingStatus());
        },
        ping: (received) => {
          if (!received) pongTimer = setTimeout(() => created?.terminate(), pongTimeoutMs);
        },
        pong: (received) => {
          if (received) clearTimeout(pongTimer);
        },
      },
    });
    client = created;
    for (const sub of [...parked]) {
      parked.delete(sub);
      attach(sub);
    }
  }

  open();

  return {
    connection,
    request: (operation) => httpRequest(options, operation),
    subscribe(operation, sink) {
      const sub: Subscription = { operation, sink: sink as Sink, attachment: 0, unsubscribe: null, ended: false };
      if (disposed) {
        sub.ended = true;
      } else if (client) {
        attach(sub);
      } else {
        parked.add(sub);
      }
      return () => {
        if (sub.ended) return;
        sub.ended = true;
        parked.delete(sub);
        detach(sub);
      };
    },
    reconnect() {
      if (disposed) return;
      if (client) {
        alarm.wake();
        return;
      }
      setStatus(everConnected ? "reconnecting" : "connecting");
      open();
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      generation++;
      network.stop();
      alarm.wake();
      for (const sub of [...attached, ...parked]) {
        sub.ended = true;
        detach(sub);
      }
      parked.clear();
      const retired = client;
      client = null;
      if (retired) quietly(retired);
    },
  };
}
