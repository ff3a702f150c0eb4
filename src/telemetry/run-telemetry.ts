// What one run tells the metrics and, when tracing is on, its `runledger.run`
// span. The run executes detached from the request that started it, so the
// span's parent is taken when the run launches (runParent) and carried
// explicitly from then on. A token costs a counter and a histogram bucket; the
// span gets no per-token work.
import { context, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Link, type Span } from "@opentelemetry/api";
import type { Metrics } from "./metrics.ts";
import { clientContext, runParent, traceParentOf, tracer, tracingOn } from "./tracing.ts";

export interface RunFacts {
  id: string;
  conversationId: string;
  /** The run's kind: start, resume, edit. */
  kind: string;
  agent: string;
  /** When the run was queued, if it waited for a slot: its span starts then, with the wait as a child. */
  queuedAt?: Date | null;
}

/** Where a run's span hangs, taken while the request that starts (or queues) the run is active; null: a trace of its own. */
export type RunOrigin = ReturnType<typeof runParent> | null;

export interface RunEnd {
  status: string;
  errorCode: string | null;
}

export interface RunWatch {
  /** The context the run's own spans (model and tool calls, checkpoint writes) hang under; undefined when tracing is off. */
  readonly trace: Context | undefined;
  /** Runs `fn` with the run's span active, so log lines and nested spans name it. */
  within<T>(fn: () => T): T;
  token(): void;
  modelCall(inputTokens: number, outputTokens: number): void;
  interrupt(id: string, node: string): void;
  end(outcome: RunEnd | null): void;
}

export class RunTelemetry {
  constructor(private readonly metrics?: Metrics) {}

  /** The active request's context, for a run it starts or queues (runParent); null while tracing is off. */
  origin(): RunOrigin {
    return tracingOn() ? runParent() : null;
  }

  /** The active request's run parent as a W3C traceparent, stored with the run; null while tracing is off. */
  traceParent(): string | null {
    return tracingOn() ? traceParentOf(runParent().parent) : null;
  }

  /** The origin of a run another instance queued: its stored traceparent, continued here (no link: that request's span is elsewhere). */
  originFrom(traceParent: string | null): RunOrigin {
    const parent = tracingOn() && traceParent ? clientContext({ traceparent: traceParent }) : null;
    return parent ? { parent, request: undefined } : null;
  }

  /** A run begins executing; `origin` is what origin() said in the request that started or queued it. */
  start(run: RunFacts, origin: RunOrigin = null): RunWatch {
    const { metrics } = this;
    metrics?.runsStarted.inc({ agent: run.agent, kind: run.kind });
    if (run.queuedAt) metrics?.queueWait.observe({ agent: run.agent }, Math.max(0, Date.now() - run.queuedAt.getTime()) / 1000);
    const span = tracingOn() ? startRunSpan(run, origin) : undefined;
    // Not the active context: a run claimed when another ends must not hang under that one.
    const spanContext = span && trace.setSpan(ROOT_CONTEXT, span);
    const startedAt = performance.now();
    let lastToken: number | undefined;
    const tokens = metrics?.tokens.labels({ agent: run.agent });
    const gaps = metrics?.tokenGap.labels({ agent: run.agent });
    let ended = false;
    return {
      trace: spanContext,
      within: (fn) => (spanContext ? context.with(spanContext, fn) : fn()),
      token() {
        const now = performance.now();
        if (lastToken === undefined) {
          metrics?.timeToFirstToken.observe({ agent: run.agent }, (now - startedAt) / 1000);
          span?.addEvent("first_token");
        } else gaps?.observe((now - lastToken) / 1000);
        lastToken = now;
        tokens?.inc();
      },
      modelCall(inputTokens, outputTokens) {
        metrics?.modelTokens.inc({ agent: run.agent, type: "input" }, inputTokens);
        metrics?.modelTokens.inc({ agent: run.agent, type: "output" }, outputTokens);
      },
      interrupt(id, node) {
        span?.addEvent("interrupt", { "interrupt.id": id, "interrupt.node": node });
      },
      end(outcome) {
        if (ended) return;
        ended = true;
        if (outcome) {
          metrics?.runsFinished.inc({ agent: run.agent, kind: run.kind, status: outcome.status, error_code: outcome.errorCode ?? "" });
          metrics?.runDuration.observe({ agent: run.agent, status: outcome.status }, (performance.now() - startedAt) / 1000);
        }
        if (span) {
          span.setAttribute("run.status", outcome?.status ?? "unrecorded");
          if (outcome?.errorCode) {
            span.setAttribute("run.error_code", outcome.errorCode);
            span.setAttribute("error.type", outcome.errorCode);
          }
          if (!outcome || outcome.status === "failed") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome?.errorCode ?? "outcome not recorded" });
          span.end();
        }
      },
    };
  }
}

function startRunSpan(run: RunFacts, origin: RunOrigin): Span {
  const links: Link[] = origin?.request ? [{ context: origin.request.spanContext() }] : [];
  const span = tracer().startSpan(
    "runledger.run",
    {
      attributes: {
        "run.id": run.id,
        "conversation.id": run.conversationId,
        "run.kind": run.kind,
        "run.agent": run.agent,
        "gen_ai.conversation.id": run.conversationId,
        "gen_ai.agent.name": run.agent,
      },
      links,
      ...(run.queuedAt ? { startTime: run.queuedAt } : {}),
    },
    origin?.parent ?? ROOT_CONTEXT,
  );
  if (run.queuedAt) {
    tracer().startSpan("runledger.queue", { startTime: run.queuedAt }, trace.setSpan(ROOT_CONTEXT, span)).end();
  }
  return span;
}
