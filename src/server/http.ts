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

/** Paths that answer without the API token: liveness, readiness, the GraphiQL page and the console's files (which execute nothing). */
function isOpen(req: http.IncomingMessage, path: string): boolean {
  if (path === "/health" || path === "/ready" || isConsoleRequest(req.method, path)) return true;
  return isGraphiQLRequest(req, path);
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

  const server = http.createServer(async (req, res) => {
    try {
      if (cors.handle(req, res)) return;
      const path = (req.url ?? "/").split("?")[0]!;
      // Liveness and readiness answer at once; everything else, its authentication included, waits its turn on the loop.
      if (path !== "/health" && path !== "/ready") await turns.turn();
      if (!isOpen(req, path)) {
        try {
          setPrincipal(req, await authenticator.authenticate(req.headers.authorization));
        } catch (error) {
          if (!(error instanceof UnauthenticatedError)) throw error;
          res.setHeader("www-authenticate", 'Bearer realm="runledger"');
          return sendJson(res, 401, { errors: [{ message: error.message, extensions: { code: "UNAUTHENTICATED" } }] });
        }
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
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: "internal server error" }] });
      else res.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => reject(listenError(error, config)));
    server.listen(config.port, config.host, () => resolve());
  });
  // Attached once listening: the WebSocket server re-emits the server's errors,
  // and a port in use would otherwise surface as its "internal error" with a stack.
  const webSockets = attachWebSocketServer({ server, yoga, config, cors, authenticator, trusted, metrics });
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
