// GraphQL over WebSocket (graphql-ws, the graphql-transport-ws protocol) on the
// HTTP server's /graphql. Each operation runs through yoga's envelop, so the
// operation limits, masking and shared results apply as over HTTP. Protocol
// breaches close the socket with graphql-ws's own codes; CLOSE_UNAUTHORIZED for a
// connection_init without a valid credential, CLOSE_GOING_AWAY on shutdown. Subscriptions
// whose field is marked for it run once per distinct operation and are sent to
// every socket that asked (ws-broadcast.ts).
import type http from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import { useServer } from "graphql-ws/use/ws";
import { GraphQLError, getOperationAST, type DocumentNode, type ExecutionArgs, type GraphQLSchema } from "graphql";
import type { Config } from "../config.ts";
import type { GraphQLParams } from "graphql-yoga";
import type { Yoga } from "./yoga.ts";
import type { CorsPolicy } from "./cors.ts";
import { formatForWebSocket } from "./plugins/masking.ts";
import { BROADCAST_EXTENSION, createBroadcast, type BroadcastMode } from "./ws-broadcast.ts";
import { SubscriberOverflowError } from "../storage/event-bus/subscriber.ts";
import { setPrincipal, UnauthenticatedError, principalOf, type Authenticator } from "./auth.ts";
import type { Principal } from "../domain/principal.ts";
import type { TrustedOperations } from "./plugins/trusted-operations.ts";
import type { Metrics } from "../telemetry/metrics.ts";
import { turns } from "../turns.ts";
import type { CredentialWatch } from "./live/credential-watch.ts";
import { StreamCapExceededError, type StreamCap } from "./live/stream-cap.ts";

/** WebSocket close code for a connection_init without a valid credential (UNAUTHENTICATED). */
export const CLOSE_UNAUTHORIZED = 4401;
/** WebSocket close code sent to clients when the server shuts down. */
export const CLOSE_GOING_AWAY = 1001;
/** On shutdown, how long WebSocket operations may take to send their last events before the sockets close. */
const WS_DRAIN_MS = 2_000;

export interface WebSocketEndpoint {
  /** Lets open operations send their last events (for at most a moment), then closes every socket with 1001. */
  close(): Promise<void>;
  /** Open operations over all sockets, and the broadcast groups that serve their subscriptions. */
  stats(): WebSocketStats;
}

export interface WebSocketStats {
  connections: number;
  operations: number;
  broadcast: { groups: number; members: number };
}

export function attachWebSocketServer(options: {
  server: http.Server;
  yoga: Yoga;
  config: Config;
  cors: CorsPolicy;
  authenticator: Authenticator;
  /** Set: yoga's onParams hooks never see graphql-ws operations, so the trusted-operations rule is applied here. */
  trusted?: TrustedOperations;
  /** Counts this endpoint's open operations and the subscribers it cuts off. */
  metrics?: Metrics;
  /** Closes a socket with CLOSE_UNAUTHORIZED once its credential expires or is revoked. */
  credentials: CredentialWatch;
  /** Counts the sockets' operations toward their principals' caps on live streams. */
  streamCap: StreamCap;
}): WebSocketEndpoint {
  const { server, yoga, config, cors, authenticator, trusted, metrics, credentials, streamCap } = options;
  const wsServer = new WebSocketServer({
    server,
    path: "/graphql",
    // MAX_REQUEST_BYTES: a larger message closes the socket with 1009.
    maxPayload: config.limits.requestBytes,
    verifyClient: (info, done) => (cors.allowsUpgrade(info.req) ? done(true) : done(false, 403, "Origin not allowed")),
  });
  // Open connections, so shutdown can let each finish sending its operations' last events.
  const connections = new Set<{ subscriptions: Record<string, unknown> }>();
  // What each socket's end undoes: its credential watch and its count toward the stream cap.
  const releases = new WeakMap<object, () => void>();
  const broadcast = createBroadcast({
    queueLimit: config.subscriberQueueLimit,
    replayLimit: config.eventRetention,
    formatErrors: formatForWebSocket,
    tooSlow: (limit) => {
      metrics?.subscribersCutOff.inc();
      const overflow = new SubscriberOverflowError(limit);
      return new GraphQLError(overflow.message, { extensions: { code: overflow.code } });
    },
  });
  // Who sent each operation graphql-ws is about to subscribe: its socket, id and payload.
  const senders = new WeakMap<ExecutionArgs, { socket: WebSocket; id: string; key: string }>();
  const disposable = useServer(
    {
      // WS_INIT_TIMEOUT_MS: no connection_init by then closes the socket with 4408.
      connectionInitWaitTimeout: config.limits.wsInitTimeoutMs,
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: result.errors.map(formatForWebSocket) } : undefined),
      onError: (_ctx, _id, _payload, errors) => errors.map(formatForWebSocket),
      onConnect: async (ctx) => {
        let principal: Principal;
        try {
          const authorization = (ctx.connectionParams as { authorization?: unknown } | undefined)?.authorization;
          if (authorization !== undefined && typeof authorization !== "string")
            throw new UnauthenticatedError("the authorization of connection_init must be a string");
          principal = await authenticator.authenticate(authorization);
        } catch (error) {
          if (!(error instanceof UnauthenticatedError)) throw error;
          ctx.extra.socket.close(CLOSE_UNAUTHORIZED, "Unauthorized");
          return false;
        }
        // The socket's operations run as whoever opened it: the context reads it from the upgrade request.
        setPrincipal(ctx.extra.request, principal);
        // A credential that expires (a JWT's exp) or is revoked (an API key) ends the socket then: nothing runs on a stale identity.
        const unwatch = credentials.watch(principal, () => ctx.extra.socket.close(CLOSE_UNAUTHORIZED, "Unauthorized"));
        const uncount = streamCap.addSocket(principal, ctx);
        releases.set(ctx, () => {
          unwatch();
          uncount();
        });
        connections.add(ctx);
        return true;
      },
      onClose: (ctx) => {
        releases.get(ctx)?.();
        connections.delete(ctx);
      },
      execute: (args: ExecutionArgs) => (args.rootValue as { execute: (a: ExecutionArgs) => unknown }).execute(args) as never,
      subscribe: (args: ExecutionArgs) => {
        const own = () => (args.rootValue as { subscribe: (a: ExecutionArgs) => Promise<never> }).subscribe(args);
        const sender = senders.get(args);
        const mode = sender && broadcastMode(args.schema, args.document, args.operationName);
        return ((mode && broadcast.join(sender.key, mode, sender, own)) ?? own()) as never;
      },
      onSubscribe: async (ctx, id, sent) => {
        // Parsing, validating and executing the operation is work: it waits its turn on the loop, as over HTTP.
        await turns.turn();
        const principal = principalOf(ctx.extra.request);
        // The credential is read again before each operation, so nothing runs, and nothing is written,
        // through a socket whose key was revoked since, even before the periodic check closes it.
        if (!(await authenticator.stillValid(principal))) {
          ctx.extra.socket.close(CLOSE_UNAUTHORIZED, "Unauthorized");
          return [new GraphQLError("the connection's credential was revoked or has expired", { extensions: { code: "UNAUTHENTICATED" } })];
        }
        try {
          streamCap.checkSocketOperation(principal);
        } catch (error) {
          if (!(error instanceof StreamCapExceededError)) throw error;
          return [new GraphQLError(error.message, { extensions: error.extensions() })];
        }
        // ctx.subscriptions already holds this operation's id.
        if (Object.keys(ctx.subscriptions).length > config.wsMaxSubscriptions) {
          return [
            new GraphQLError(
              `this connection already has ${config.wsMaxSubscriptions} operations open (WS_MAX_SUBSCRIPTIONS); complete one first or open another connection`,
              {
                extensions: { code: "TOO_MANY_SUBSCRIPTIONS" },
              },
            ),
          ];
        }
        let payload = sent;
        if (trusted) {
          try {
            // An id becomes its trusted document; a document from a non-admin, or an unknown id, is refused.
            payload = (await trusted.resolve(sent as GraphQLParams, ctx.extra.request)) as typeof sent;
          } catch (error) {
            if (error instanceof GraphQLError) return [error];
            throw error;
          }
        }
        const enveloped = yoga.getEnveloped({ ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params: payload });
        let document;
        try {
          document = enveloped.parse(payload.query);
        } catch (error) {
          // A syntax error or a document limit: an error message for this operation, as over HTTP, not a 4500 close.
          if (error instanceof GraphQLError) return [error];
          throw error;
        }
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length) return errors;
        const args: ExecutionArgs = {
          schema: enveloped.schema,
          operationName: payload.operationName,
          document,
          variableValues: payload.variables,
          contextValue: await enveloped.contextFactory(),
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
        };
        // Operations with the same text and variables, sent by the same principal, share one stream:
        // what a stream may carry is decided once, for whoever subscribed.
        const who = principal;
        senders.set(args, {
          socket: ctx.extra.socket,
          id,
          key: JSON.stringify([who.role, who.id, payload.query, payload.operationName ?? null, payload.variables ?? null]),
        });
        return args;
      },
    },
    wsServer,
    // WS_KEEPALIVE_MS: ping every socket this often; one that did not answer the previous ping is dropped.
    config.wsKeepAliveMs,
  );

  // Operations open on sockets: subscriptions, and the rare query or mutation in flight.
  metrics?.setSubscriptionsSource("ws", () => {
    let operations = 0;
    for (const ctx of connections) operations += Object.keys(ctx.subscriptions).length;
    return operations;
  });

  return {
    stats() {
      let operations = 0;
      for (const ctx of connections) operations += Object.keys(ctx.subscriptions).length;
      return { connections: connections.size, operations, broadcast: broadcast.stats() };
    },
    async close() {
      // Subscriptions the event bus has ended still have their last events to send
      // (a run's terminal status among them): close the sockets once they are sent.
      const drainedBy = Date.now() + WS_DRAIN_MS;
      while (Date.now() < drainedBy && [...connections].some((ctx) => Object.keys(ctx.subscriptions).length > 0)) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      for (const client of wsServer.clients) client.close(CLOSE_GOING_AWAY, "server shutting down");
      await disposable.dispose();
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
    },
  };
}

const modes = new WeakMap<DocumentNode, Map<string | null, BroadcastMode | null>>();

/** The broadcast mode of a subscription with one root field that is marked for it; null otherwise. */
function broadcastMode(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): BroadcastMode | null {
  let byName = modes.get(document);
  if (!byName) modes.set(document, (byName = new Map()));
  const name = operationName ?? null;
  let mode = byName.get(name);
  if (mode === undefined) {
    const operation = getOperationAST(document, operationName);
    const [selection, ...others] = operation?.operation === "subscription" ? operation.selectionSet.selections : [];
    const field = selection?.kind === "Field" && others.length === 0 ? schema.getSubscriptionType()?.getFields()[selection.name.value] : undefined;
    mode = (field?.extensions?.[BROADCAST_EXTENSION] as BroadcastMode | undefined) ?? null;
    byName.set(name, mode);
  }
  return mode;
}
