// Maps how a run ended to the run error codes of the API. The transport report
// (what the model's HTTP stream showed) and the abort reason are more reliable
// than error messages, so they are consulted first.
import { ModelIdleTimeoutError, type ModelTransportReport } from "../agent/model-fetch.ts";
import type { RunErrorCodeValue } from "../domain/records.ts";

/** Why the run's AbortSignal fired. */
export class RunAbortReason extends Error {
  override name = "RunAbortReason";
  constructor(readonly kind: "cancel" | "shutdown") {
    super(kind === "cancel" ? "the run was cancelled" : "the server shut down while the run was active");
  }
}

export interface Classified {
  status: "failed" | "cancelled" | "interrupted";
  errorCode: RunErrorCodeValue;
  errorMessage: string;
}

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EPIPE",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_CLOSED",
]);

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  while (current && chain.length < 10 && !chain.includes(current)) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

/** The error's message with its causes, so "fetch failed" keeps "connect ECONNREFUSED 127.0.0.1:59999". */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  for (const e of causes(error)) {
    const text = e instanceof Error ? e.message : String(e);
    if (text && !parts.includes(text)) parts.push(text);
  }
  return parts.join(": ") || "unknown error";
}

export function classifyFailure(error: unknown, abortReason: unknown, report: ModelTransportReport): Classified {
  const errorMessage = describeError(error);
  if (abortReason instanceof RunAbortReason) {
    return abortReason.kind === "cancel"
      ? { status: "cancelled", errorCode: "CANCELLED", errorMessage: abortReason.message }
      : { status: "interrupted", errorCode: "INTERRUPTED", errorMessage: abortReason.message };
  }
  const chain = causes(error);
  const failed = (errorCode: RunErrorCodeValue): Classified => ({ status: "failed", errorCode, errorMessage });
  if (report.timedOut || chain.some((e) => e instanceof ModelIdleTimeoutError)) return failed("MODEL_TIMEOUT");
  if (chain.some((e) => (e as { name?: string })?.name === "GraphRecursionError")) return failed("RECURSION_LIMIT");
  const status =
    report.httpStatus ??
    (chain.find((e) => typeof (e as { status_code?: unknown })?.status_code === "number") as { status_code?: number } | undefined)?.status_code;
  if (status === 404 || /model ["'].*["'] not found/i.test(errorMessage)) return failed("MODEL_NOT_FOUND");
  if (report.modelError !== undefined || (status !== undefined && status >= 400)) return failed("MODEL_ERROR");
  const networkCode = chain.some((e) => NETWORK_CODES.has(String((e as { code?: unknown })?.code)));
  if (networkCode || /fetch failed|terminated|other side closed|socket hang up/i.test(errorMessage)) return failed("MODEL_UNAVAILABLE");
  return failed("AGENT_FAILURE");
}
