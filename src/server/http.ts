// The HTTP server: origin checks and the API token first, then the plain-HTTP
// routes, GraphiQL's page (compressed), then yoga (GraphQL over HTTP and SSE, /health, /ready),
// every request but the health checks in its turn on the event loop (src/turns.ts);
// WebSockets upgrade on the same port and path (ws.ts). close() is the ordered
// shutdown of all of it.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError, type Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { Services } from "../context.ts";
import { setPrincipal, UnauthenticatedError, type Authenticator } from "./auth.ts";
import { createCorsPolicy } from "./cors.ts";
import { closeWhenStalled } from "./write-stall.ts";
import { sendJson } from "./send.ts";
import { createYogaServer } from "./yoga.ts";
import { attachWebSocketServer, type WebSocketStats } from "./ws.ts";
import type { ReadinessProbe } from "./readiness.ts";
import { isConsoleRequest } from "./routes/console.ts";
import { graphiqlRoute, isGraphiQLRequest } from "./graphiql.ts";
import type { TrustedManifest } from "./trusted-manifest.ts";
import { useTrustedOperations } from "./plugins/trusted-operations.ts";
import type { Metrics } from "../telemetry/metrics.ts";
import { traceRestRequest } from "./rest-spans.ts";
import { turns } from "../turns.ts";
import { readRequestTarget } from "./request-target.ts";
import { createCredentialWatch } from "./live/credential-watch.ts";
import { StreamCap, StreamCapExceededError } from "./live/stream-cap.ts";

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<boolean> | boolean;

export interface HttpServerOptions {
  config: Config;
  services: Services;
  logger: Logger;
  readiness: ReadinessProbe;
  /** Plain-HTTP routes tried before GraphQL; each returns true when it answered. */
  routes?: Route[];
  /** Who is calling: every request but the open paths is authenticated. */
  authenticator: Authenticator;
  /** TRUSTED_OPERATIONS_FILE's operations: the only ones non-admins may run, on every transport. */
  trustedOperations?: TrustedManifest;
  /** This server's metrics: GraphQL operations and live subscriptions are counted here. */
  metrics?: Metrics;
}

export interface HttpServer {
  server: http.Server;
  url: string;
  /** Stops accepting connections, lets subscriptions send their last events, closes WebSockets with 1001. */
  close(): Promise<void>;
  /** What the WebSocket endpoint holds open now. */
  webSocketStats(): WebSocketStats;
}

/**
 * Paths that answer without a credential: liveness, readiness, the GraphiQL page
 * and the console's files (which execute nothing). Decided on the path in normal
 * form (request-target.ts), the one every route then reads.
 */
function isOpen(req: http.IncomingMessage, path: string): boolean {
  if (path === "/health" || path === "/ready" || isConsoleRequest(req.method, path)) return true;
  return isGraphiQLRequest(req, path);
}

/** Responses that stay open to stream: GraphQL over SSE, and the lab's chat streams. */
function isLiveStream(req: http.IncomingMessage, path: string): boolean {
  return path === "/api/chat" || (req.headers.accept ?? "").includes("text/event-stream");
}

export async function startHttpServer({
  config,
  services,
  logger,
  readiness,
  routes = [],
  authenticator,
  trustedOperations,
  metrics,
}: HttpServerOptions): Promise<HttpServer> {
  const cors = createCorsPolicy(config.corsOrigins, { logger });
  const trusted = trustedOperations && useTrustedOperations(trustedOperations);
  const yoga = createYogaServer({ config, services, logger, readiness, trusted, metrics });
  const graphiql = graphiqlRoute(async () => yoga.fetch("http://localhost/graphql", { headers: { accept: "text/html" } }));
  const credentials = createCredentialWatch({
    authenticator,
    recheckMs: config.credentialRecheckMs,
    onCheckError: (error) => logger.warn("an open stream's credential could not be checked again", { error }),
  });
  const streamCap = new StreamCap(config.maxStreamsPerPrincipal, config.quotas.admins);

  const server = http.createServer(async (req, res) => {
    try {
      const target = readRequestTarget(req.url);
      if (!target) {
        const message = "the request target must be a path in normal form: no dot segments (in any encoding), doubled slashes or backslashes";
        return sendJson(res, 400, { errors: [{ message, extensions: { code: "INVALID_PATH" } }] });
      }
      // From here on every reader (the routes, yoga, the URL parser) reads this one target.
      req.url = target.target;
      const { path } = target;
      if (cors.handle(req, res)) return;
      // Liveness and readiness answer at once; everything else, its authentication included, waits its turn on the loop.
      if (path !== "/health" && path !== "/ready") await turns.turn();
      if (!isOpen(req, path)) {
        let principal;
        try {
          principal = await authenticator.authenticate(req.headers.authorization);
        } catch (error) {
          if (!(error instanceof UnauthenticatedError)) throw error;
          res.setHeader("www-authenticate", 'Bearer realm="runledger"');
          return sendJson(res, 401, { errors: [{ message: error.message, extensions: { code: "UNAUTHENTICATED" } }] });
        }
        setPrincipal(req, principal);
        if (isLiveStream(req, path)) {
          let release: () => void;
          try {
            release = streamCap.openSse(principal);
          } catch (error) {
            if (!(error instanceof StreamCapExceededError)) throw error;
            return sendJson(res, 429, { errors: [{ message: error.message, extensions: error.extensions() }] });
          }
          res.once("close", release);
        }
        // A response still open when its credential expires or is revoked is cut: a stream must not outlive it.
        const unwatch = credentials.watch(principal, () => res.destroy());
        res.once("close", unwatch);
      }
      closeWhenStalled(res, config.writeStallTimeoutMs);
      if (
        await traceRestRequest(req, path, async () => {
          for (const route of routes) if (await route(req, res)) return true;
          return false;
        })
      )
        return;
      if (await graphiql(req, res)) return;
      await yoga.requestListener(req, res);
    } catch (error) {
      logger.error("request failed", { error });
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: "Unexpected error.", extensions: { code: "INTERNAL_SERVER_ERROR" } }] });
      else res.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => reject(listenError(error, config)));
    server.listen(config.port, config.host, () => resolve());
  });
  // Attached once listening: the WebSocket server re-emits the server's errors,
  // and a port in use would otherwise surface as its "internal error" with a stack.
  const webSockets = attachWebSocketServer({ server, yoga, config, cors, authenticator, trusted, metrics, credentials, streamCap });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  return {
    server,
    url,
    webSocketStats: () => webSockets.stats(),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await webSockets.close();
      server.closeIdleConnections();
      // SSE responses and other long requests end once their iterators complete;
      // whatever is still open after a moment is cut.
      const timer = setTimeout(() => server.closeAllConnections(), 1_000);
      await closed;
      clearTimeout(timer);
      credentials.close();
      await yoga.dispose();
    },
  };
}

/** A port that cannot be had is a setting to change: one line naming PORT (or HOST), exit code 2. */
function listenError(error: NodeJS.ErrnoException, config: Pick<Config, "port" | "host">): Error {
  const where = `${config.host}:${config.port}`;
  if (error.code === "EADDRINUSE") return new ConfigError(`PORT: ${where} is already in use (is another server running?); stop it or choose another PORT`);
  if (error.code === "EACCES") return new ConfigError(`PORT: not allowed to listen on ${where}; choose a PORT above 1023`);
  if (error.code === "EADDRNOTAVAIL") return new ConfigError(`HOST: ${config.host} is not an address of this machine`);
  return error;
}
