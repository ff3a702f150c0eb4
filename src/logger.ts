// One JSON line per log record on stderr, filtered by LOG_LEVEL. A line written
// while a trace span is active names it (trace_id, span_id), so a log search and
// a trace lead to each other.
import { trace } from "@opentelemetry/api";
import type { LogLevel } from "./config.ts";

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l + "\n")): Logger {
  const log = (at: Exclude<LogLevel, "silent">) => (msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[at] < ORDER[level]) return;
    const record: Record<string, unknown> = { time: new Date().toISOString(), level: at, msg, ...fields };
    // Without a tracing SDK no span is ever active: this is a lookup that finds nothing.
    const span = trace.getActiveSpan()?.spanContext();
    if (span) {
      record.trace_id = span.traceId;
      record.span_id = span.spanId;
    }
    if (record.error instanceof Error) record.error = { name: record.error.name, message: record.error.message, stack: record.error.stack };
    write(JSON.stringify(record));
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}
