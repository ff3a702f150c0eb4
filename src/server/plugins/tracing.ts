// A span per GraphQL query or mutation, on every transport, continuing the
// client's W3C trace context: the `traceparent` header over HTTP, the
// `traceparent` of the connection_init payload over graphql-ws. The execution
// runs inside the span's context, so a run it starts hangs under it (the run's
// span is parented by the client's context and linked to this span:
// telemetry/tracing.ts, runParent). Nothing happens while tracing is off.
import { getOperationAST } from "graphql";
import { SpanKind, SpanStatusCode, context } from "@opentelemetry/api";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import { clientContext, requestContext, tracer, tracingOn, type TraceCarrier } from "../../telemetry/tracing.ts";

/** Where the operation's client put its trace context: the HTTP request's headers, or the WebSocket's connection_init payload. */
function carrierOf(operationContext: unknown): TraceCarrier | undefined {
  const { request, connectionParams } = (operationContext ?? {}) as { request?: Request; connectionParams?: unknown };
  if (request?.headers) {
    const traceparent = request.headers.get("traceparent");
    return traceparent === null ? undefined : { traceparent, tracestate: request.headers.get("tracestate") ?? undefined };
  }
  return connectionParams && typeof connectionParams === "object" ? (connectionParams as TraceCarrier) : undefined;
}

export function useTracing(): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      if (!tracingOn()) return;
      const operation = getOperationAST(args.document, args.operationName);
      const type = operation?.operation ?? "query";
      const name = args.operationName ?? operation?.name?.value;
      const client = clientContext(carrierOf(args.contextValue));
      const span = tracer().startSpan(
        name ? `${type} ${name}` : type,
        { kind: SpanKind.SERVER, attributes: { "graphql.operation.type": type, ...(name ? { "graphql.operation.name": name } : {}) } },
        client ?? context.active(),
      );
      const spanContext = requestContext(span, client);
      setExecuteFn((execArgs) => context.with(spanContext, () => executeFn(execArgs)));
      return {
        onExecuteDone({ result }) {
          if (!isAsyncIterable(result) && result.errors?.length) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: result.errors[0]!.message });
          }
          span.end();
        },
      };
    },
  };
}
