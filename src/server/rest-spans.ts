// A span per request of the REST routes under /api (the seed's lab), continuing
// the client's `traceparent`; its context is active while the route works, so a
// run it starts hangs under it as under a GraphQL mutation. Nothing while
// tracing is off.
import type { IncomingMessage } from "node:http";
import { SpanKind, SpanStatusCode, context } from "@opentelemetry/api";
import { clientContext, requestContext, tracer, tracingOn } from "../telemetry/tracing.ts";

/** The route's path with ids taken out (`/api/conversations/:id`): a span name of a bounded set. */
function routeOf(path: string): string {
  return path.replace(/\/[^/]*[0-9][^/]*$/, "/:id");
}

/** Runs `handle` (which answers true when a route took the request) under the request's span, for paths under /api. */
export async function traceRestRequest(req: IncomingMessage, path: string, handle: () => Promise<boolean>): Promise<boolean> {
  if (!tracingOn() || !path.startsWith("/api/")) return handle();
  const client = clientContext(req.headers as Record<string, unknown>);
  const route = routeOf(path);
  const span = tracer().startSpan(
    `${req.method} ${route}`,
    { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method ?? "", "http.route": route, "url.path": path } },
    client ?? context.active(),
  );
  try {
    return await context.with(requestContext(span, client), handle);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    // An event stream (GET /api/chat) answers for as long as its run: the span ends when the route is done with it.
    span.end();
  }
}
