// graphql-yoga: GraphQL over HTTP and SSE, GraphiQL, liveness and readiness,
// with every envelop plugin in the order they apply. WebSocket operations run
// through the same envelop (src/server/ws.ts), so each plugin holds on every
// transport.
import { createYoga, type YogaServerInstance } from "graphql-yoga";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { schema } from "../schema/index.ts";
import type { IncomingMessage } from "node:http";
import { createContext, type Context, type Services } from "../context.ts";
import { principalOf } from "./auth.ts";
import { GRAPHIQL_OPTIONS, renderGraphiQLInWorker } from "./graphiql.ts";
import { useReadiness, type ReadinessProbe } from "./readiness.ts";
import { useJsonBodiesOnly } from "./plugins/content-type.ts";
import { useOperationLimits } from "./plugins/operation-limits.ts";
import { usePageSizeLimit } from "./plugins/page-size.ts";
import { useWellFormedStrings } from "./plugins/well-formed-strings.ts";
import { useSharedSubscriptionResults } from "./plugins/shared-subscription-results.ts";
import { useHiddenSuggestions } from "./plugins/suggestions.ts";
import { createErrorMasking } from "./plugins/masking.ts";
import type { TrustedOperations } from "./plugins/trusted-operations.ts";
import { useOperationMetrics } from "./plugins/operation-metrics.ts";
import { useTracing } from "./plugins/tracing.ts";
import type { Metrics } from "../telemetry/metrics.ts";

export type Yoga = YogaServerInstance<Record<string, unknown>, Context>;

export function createYogaServer(options: {
  config: Config;
  services: Services;
  logger: Logger;
  readiness: ReadinessProbe;
  /** Set: only trusted operations run, except for admins (plugins/trusted-operations.ts). */
  trusted?: TrustedOperations;
  metrics?: Metrics;
}): Yoga {
  const { config, services, logger } = options;
  const { limits } = config;
  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: "/graphql",
    // Who sent the operation: http.ts authenticated the request (over WebSocket, its upgrade request).
    context: (initial) => createContext(services, principalOf((initial as { req?: IncomingMessage }).req)),
    graphiql: GRAPHIQL_OPTIONS,
    // GraphiQL's scripts and styles inlined in the page: it works without access to
    // a CDN. Rendered in a worker; http.ts serves the page compressed (graphiql.ts).
    renderGraphiQL: renderGraphiQLInWorker,
    landingPage: false,
    healthCheckEndpoint: "/health",
    // CORS is src/server/cors.ts's, for every route.
    cors: false,
    // MAX_REQUEST_BYTES is enforced by useJsonBodiesOnly, at less cost than yoga's own limit.
    maxRequestBodySize: false,
    // One operation per request: a batch would multiply every per-operation limit.
    batching: false,
    // No uploads in this API, and a multipart form is a POST any web page can send.
    multipart: false,
    maskedErrors: createErrorMasking(logger),
    plugins: [
      useReadiness(options.readiness),
      useJsonBodiesOnly({ maxBytes: limits.requestBytes }),
      // Before anything reads the document: an id becomes its trusted document here.
      ...(options.trusted?.plugins ?? []),
      ...useOperationLimits(limits),
      usePageSizeLimit(limits.pageSize),
      useWellFormedStrings(),
      useSharedSubscriptionResults({ sharedContext: (principal) => createContext(services, principal) }),
      ...(limits.hideSuggestions ? [useHiddenSuggestions()] : []),
      // graphql-ws operations carry their socket in the context (ws.ts); the WebSocket endpoint counts those.
      ...(options.metrics ? [useOperationMetrics(options.metrics, (c) => (c as { socket?: unknown } | null)?.socket !== undefined)] : []),
      // Last: it wraps the execution the plugins before it settled on, so the span's context is active in every resolver.
      useTracing(),
    ],
    logging: {
      debug: (...args) => logger.debug(String(args[0]), { args: args.slice(1).map(String) }),
      info: (...args) => logger.info(String(args[0])),
      warn: (...args) => logger.warn(String(args[0])),
      error: (...args) => logger.error(String(args[0]), { error: args[1] instanceof Error ? args[1] : undefined }),
    },
  });
}
