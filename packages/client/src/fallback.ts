// The transport a client uses unless told otherwise: the WebSocket one, and
// SSE instead when there is no WebSocket at all, or when the socket cannot be
// made while HTTP reaches the server (a proxy that refuses upgrades). The SSE
// transport is loaded only then (an app's bundler splits sse.ts off), so a
// page whose socket works never downloads it.
import { Value } from "./observable.js";
import type { SseTransportOptions } from "./sse.js";
import { createWebSocketTransport, type WebSocketTransportOptions } from "./websocket.js";
import { httpRequest, TransportError, type ConnectionState, type Sink, type Transport } from "./transport.js";

export type AutoTransportOptions = Omit<WebSocketTransportOptions, "onUnreachable"> & SseTransportOptions;

function hasWebSocket(options: AutoTransportOptions): boolean {
  return options.webSocketImpl !== undefined || typeof (globalThis as { WebSocket?: unknown }).WebSocket === "function";
}

/**
 * SSE until sse.ts is loaded: queries over HTTP, subscriptions held. The switch
 * ends them (TransportError "closed"), so their owners subscribe again over SSE.
 */
function loadingSse(options: AutoTransportOptions): Transport {
  return {
    connection: new Value<ConnectionState>({ status: "connecting", transport: "sse", reconnects: 0 }),
    request: (operation) => httpRequest(options, operation),
    subscribe: () => () => {},
    reconnect() {},
    dispose: async () => {},
  };
}

/** The WebSocket, falling back to SSE; `sse: true` (or no WebSocket at all): SSE from the start. */
export function createAutoTransport(options: AutoTransportOptions, sse = !hasWebSocket(options)): Transport {
  const subscriptions = new Set<{ sink: Sink; unsubscribe: () => void }>();
  /** SSE is wanted (from the start, or the socket proved unreachable) and loaded. */
  let wanted = sse;
  let switched = false;
  let disposed = false;
  let current: Transport = sse
    ? loadingSse(options)
    : createWebSocketTransport({
        ...options,
        onUnreachable: () => {
          // Only when HTTP answers: a server that is down is no reason to give up the socket.
          void httpRequest(options, { query: "{ __typename }" }).then(
            () => useSse(),
            () => {},
          );
        },
      });
  const connection = new Value<ConnectionState>(current.connection.getSnapshot());
  let unfollow = current.connection.subscribe(() => connection.set(current.connection.getSnapshot()));

  const useSse = async () => {
    if (switched || disposed) return;
    wanted = switched = true;
    let createSseTransport;
    try {
      ({ createSseTransport } = await import("./sse.js"));
    } catch {
      // Not loaded (the network went meanwhile): the next subscribe tries again.
      switched = false;
      return;
    }
    if (disposed) return;
    const retired = current;
    unfollow();
    current = createSseTransport(options);
    const reconnects = connection.getSnapshot().reconnects;
    const follow = () => connection.set({ ...current.connection.getSnapshot(), reconnects: reconnects + current.connection.getSnapshot().reconnects });
    unfollow = current.connection.subscribe(follow);
    follow();
    // Every stream on the socket ends, so its owner subscribes again, now over SSE.
    for (const subscription of [...subscriptions]) {
      subscriptions.delete(subscription);
      subscription.unsubscribe();
      subscription.sink.error(new TransportError("closed", "switched to Server-Sent Events"));
    }
    void retired.dispose().catch(() => {});
  };

  if (sse) void useSse();

  return {
    connection,
    request: (operation) => current.request(operation),
    subscribe(operation, sink) {
      if (wanted && !switched) void useSse();
      const entry = { sink: sink as Sink, unsubscribe: () => {} };
      const done = () => subscriptions.delete(entry);
      entry.unsubscribe = current.subscribe(operation, {
        next: (result) => sink.next(result as never),
        error: (error) => {
          done();
          sink.error(error);
        },
        complete: () => {
          done();
          sink.complete();
        },
      });
      subscriptions.add(entry);
      return () => {
        done();
        entry.unsubscribe();
      };
    },
    reconnect: () => current.reconnect(),
    async dispose() {
      disposed = true;
      unfollow();
      subscriptions.clear();
      await current.dispose();
    },
  };
}
