// The HTTP server: GraphQL over HTTP and SSE (graphql-yoga), GraphQL over
// WebSocket (graphql-ws) on the same port and path, health, readiness, and the
// ordered shutdown.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createYoga } from "graphql-yoga";
import { WebSocketServer } from "ws";
import { useServer } from "graphql-ws/use/ws";
import { GraphQLError, type ExecutionArgs } from "graphql";
import type { Config } from "./config.ts";
import type { Logger } from "./logger.ts";
import { schema } from "./schema/index.ts";
import { createContext, type Services } from "./context.ts";
import { createTokenCheck } from "./http/auth.ts";
import { checkReadiness, sendJson } from "./http/health.ts";
import { renderGraphiQL } from "@graphql-yoga/render-graphiql";
import { GRAPHIQL_DEFAULT_DOCUMENT } from "./graphiql.ts";
import { createRequestLimits } from "./http/limits.ts";
import { createCorsPolicy } from "./http/cors.ts";
import { formatForWebSocket } from "./plugins/errors.ts";
import { closeWhenStalled } from "./http/write-stall.ts";
import { isConsoleRequest } from "./console/route.ts";

/** WebSocket close code for a connection_init without the right token. */
export const CLOSE_FORBIDDEN = 4403;
/** WebSocket close code sent to clients when the server shuts down. */
export const CLOSE_GOING_AWAY = 1001;
/** On shutdown, how long WebSocket operations may take to send their last events before the sockets close. */
const WS_DRAIN_MS = 2_000;

export interface HttpServerOptions {
  config: Config;
  services: Services;
  logger: Logger;
  /** Runs SELECT 1 (or equivalent) against the database, for /ready. */
  pingDatabase: () => Promise<void>;
  /** Extra plain-HTTP routes tried before GraphQL; return true when handled. */
  routes?: ((req: http.IncomingMessage, res: http.ServerResponse) => Promise<boolean> | boolean)[];
}

export interface HttpServer {
  server: http.Server;
  url: string;
  /** Stops accepting connections and closes WebSocket clients with 1001. */
  close(): Promise<void>;
}

export async function startHttpServer({ config, services, logger, pingDatabase, routes = [] }: HttpServerOptions): Promise<HttpServer> {
  const authorized = createTokenCheck(config.apiToken);
  const limits = createRequestLimits(config, logger);
  const cors = createCorsPolicy(config.corsOrigins);

  const yoga = createYoga({
    schema,
    graphqlEndpoint: "/graphql",
    context: () => createContext(services),
    graphiql: { subscriptionsProtocol: "WS", defaultQuery: GRAPHIQL_DEFAULT_DOCUMENT, title: "runledger" },
    // GraphiQL's scripts and styles inlined in the page: it works without access to a CDN.
    renderGraphiQL,
    landingPage: false,
    // CORS is src/http/cors.ts's, for every route.
    cors: false,
    ...limits.yoga,
    logging: {
      debug: (...args) => logger.debug(String(args[0]), { args: args.slice(1).map(String) }),
      info: (...args) => logger.info(String(args[0])),
      warn: (...args) => logger.warn(String(args[0])),
      error: (...args) => logger.error(String(args[0]), { error: args[1] instanceof Error ? args[1] : undefined }),
    },
  });

  const server = http.createServer(async (req, res) => {
    try {
      if (cors.handle(req, res)) return;
      const path = (req.url ?? "/").split("?")[0];
      if (path === "/health") return sendJson(res, 200, { status: "ok" });
      if (path === "/ready") {
        const result = await checkReadiness({ database: pingDatabase, ollamaHost: config.ollamaHost, ollamaModel: config.ollamaModel });
        return sendJson(res, result.ready ? 200 : 503, result);
      }
      // yoga answers this with the GraphiQL page and executes nothing, as the console's static files execute nothing; nowhere else is open.
      const isGraphiqlPage = path === "/graphql" && req.method === "GET" && (req.headers.accept ?? "").includes("text/html");
      if (!isGraphiqlPage && !isConsoleRequest(req.method, path) && !authorized(req.headers.authorization)) {
        res.setHeader("www-authenticate", 'Bearer realm="runledger"');
        return sendJson(res, 401, { errors: [{ message: "missing or wrong bearer token", extensions: { code: "UNAUTHENTICATED" } }] });
      }
      closeWhenStalled(res, config.writeStallTimeoutMs);
      for (const route of routes) if (await route(req, res)) return;
      await yoga.requestListener(req, res);
    } catch (error) {
      logger.error("request failed", { error });
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: "internal server error" }] });
      else res.destroy();
    }
  });

  const wsServer = new WebSocketServer({
    server,
    path: "/graphql",
    maxPayload: limits.webSocket.maxPayload,
    verifyClient: (info, done) => (cors.allowsUpgrade(info.req) ? done(true) : done(false, 403, "Origin not allowed")),
  });
  // Open WebSocket connections, so shutdown can let each finish sending its operations' last events.
  const wsConnections = new Set<{ subscriptions: Record<string, unknown> }>();
  const wsDisposable = useServer(
    {
      connectionInitWaitTimeout: limits.webSocket.connectionInitWaitTimeout,
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: result.errors.map(formatForWebSocket) } : undefined),
      onError: (_ctx, _id, _payload, errors) => errors.map(formatForWebSocket),
      onConnect: (ctx) => {
        if (!authorized((ctx.connectionParams as { authorization?: string } | undefined)?.authorization)) return false;
        wsConnections.add(ctx);
        return true;
      },
      onClose: (ctx) => {
        wsConnections.delete(ctx);
      },
      execute: (args: ExecutionArgs) => (args.rootValue as { execute: (a: ExecutionArgs) => unknown }).execute(args) as never,
      subscribe: (args: ExecutionArgs) => (args.rootValue as { subscribe: (a: ExecutionArgs) => unknown }).subscribe(args) as never,
      onSubscribe: async (ctx, _id, payload) => {
        // ctx.subscriptions already holds this operation's id.
        if (Object.keys(ctx.subscriptions).length > config.wsMaxSubscriptions) {
          return [
            new GraphQLError(`this connection already has ${config.wsMaxSubscriptions} operations open (WS_MAX_SUBSCRIPTIONS); complete one first or open another connection`, {
              extensions: { code: "TOO_MANY_SUBSCRIPTIONS" },
            }),
          ];
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
        return {
          schema: enveloped.schema,
          operationName: payload.operationName,
          document,
          variableValues: payload.variables,
          contextValue: await enveloped.contextFactory(),
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
        };
      },
    },
    wsServer,
    config.wsKeepAliveMs,
  );

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  return {
    server,
    url,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Subscriptions the event bus has ended still have their last events to send
      // (a run's terminal status among them): close the sockets once they are sent.
      const drainedBy = Date.now() + WS_DRAIN_MS;
      while (Date.now() < drainedBy && [...wsConnections].some((ctx) => Object.keys(ctx.subscriptions).length > 0)) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      for (const client of wsServer.clients) client.close(CLOSE_GOING_AWAY, "server shutting down");
      await wsDisposable.dispose();
      await new Promise<void>((resolve) => wsServer.close(() => resolve()));
      server.closeIdleConnections();
      // SSE responses and other long requests end once their iterators complete;
      // whatever is still open after a moment is cut.
      const timer = setTimeout(() => server.closeAllConnections(), 1_000);
      await closed;
      clearTimeout(timer);
      await yoga.dispose();
    },
  };
}
