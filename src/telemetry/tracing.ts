// OpenTelemetry traces: the standard Node SDK, configured by the standard OTEL_*
// variables, started only when an OTLP endpoint is set. Until then nothing here
// makes a span: callers ask tracingOn() first, so a deployment without tracing
// pays for no context, span or callback (the SDK is not even loaded).
import { context, propagation, ROOT_CONTEXT, trace, type Context, type Span, type Tracer } from "@opentelemetry/api";

let on = false;

/** Whether spans are being made (startTracing ran and the SDK started). */
export function tracingOn(): boolean {
  return on;
}

export function tracer(): Tracer {
  return trace.getTracer("runledger");
}

export interface Tracing {
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts the SDK for traces only: the exporter, its protocol, the sampler, the
 * service name and resource come from OTEL_* (the SDK reads them); metrics are
 * Prometheus's (/metrics) and logs stay JSON lines, so neither is exported.
 */
export async function startTracing(): Promise<Tracing> {
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME?.trim() || "runledger",
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  on = true;
  return {
    async shutdown() {
      on = false;
      await sdk.shutdown();
    },
  };
}

/** Where a client's W3C trace context came in, as text headers (an HTTP request's, or a graphql-ws connection_init payload). */
export type TraceCarrier = Record<string, unknown>;

/** The client's trace context (`traceparent`, `tracestate`), or null when it sent none or an invalid one. */
export function clientContext(carrier: TraceCarrier | undefined): Context | null {
  if (!carrier || typeof carrier.traceparent !== "string") return null;
  const extracted = propagation.extract(ROOT_CONTEXT, carrier, {
    keys: (c) => Object.keys(c),
    get: (c, key) => {
      const value = c[key];
      return typeof value === "string" ? value : undefined;
    },
  });
  return trace.getSpanContext(extracted) ? extracted : null;
}

/** The context a request's span runs under: its span, with the client's context kept for the runs it starts. */
export function requestContext(span: Span, client: Context | null): Context {
  const base = trace.setSpan(client ?? ROOT_CONTEXT, span);
  return client ? base.setValue(CLIENT_PARENT, client) : base;
}

const CLIENT_PARENT = Symbol.for("runledger.client-trace-context");

/** A context as a W3C traceparent, for a run row (null when it holds no span, or tracing is off). */
export function traceParentOf(parent: Context): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(parent, carrier);
  return carrier.traceparent ?? null;
}

/**
 * Where a run's span hangs: under the client's own span when the request that
 * started it carried a `traceparent` (a frontend's trace continues into the
 * run), else under the request's span; with a link to the request's span either
 * way. Called while that request's context is active.
 */
export function runParent(): { parent: Context; request: Span | undefined } {
  const active = context.active();
  const client = active.getValue(CLIENT_PARENT) as Context | undefined;
  return { parent: client ?? active, request: trace.getSpan(active) };
}
