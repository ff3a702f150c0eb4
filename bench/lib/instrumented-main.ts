// runledger started the way src/main.ts starts it (startApp), plus
// instruments the harness reads over IPC: an event-loop delay histogram of the
// main thread, a count of the SQL statements executed on every SQLite
// connection (Prisma's, LangGraph's and the read model's), and, when started
// with --expose-gc, a full garbage collection on request before memory readings. Nothing is added to
// the API: the numbers leave through the IPC channel only, and only here.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { startApp } from "../../src/app.ts";
import { countSqlStatements } from "../../test/support/sql-statements.ts";

export type InstrumentRequest = { cmd: "reset" } | { cmd: "read" } | { cmd: "statements" } | { cmd: "gc" };
export interface LoopDelay {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
  samples: number;
}
export interface StatementCount {
  /** Executions of prepared statements on every connection, counted at the driver. */
  driver: number;
  /** The correlation read model's own count, when it keeps one. */
  readModel: number | null;
}

const statements = countSqlStatements();
const config = loadConfig();
const app = await startApp(config, createLogger(config.logLevel));
// The sampling timer lives in libuv, not in JavaScript, so it costs the loop
// nothing measurable. Node records the whole interval between two timer
// callbacks; the delay is that minus the resolution.
const RESOLUTION_MS = 1;
const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
histogram.enable();

process.on("message", (request: InstrumentRequest) => {
  if (request.cmd === "reset") {
    histogram.reset();
    process.send!({ ok: true });
  } else if (request.cmd === "read") {
    const ms = (ns: number) => Math.max(0, ns / 1e6 - RESOLUTION_MS);
    const delay: LoopDelay = {
      p50: ms(histogram.percentile(50)),
      p95: ms(histogram.percentile(95)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
      mean: ms(histogram.mean),
      samples: histogram.count,
    };
    process.send!(delay);
  } else if (request.cmd === "gc") {
    // Only with --expose-gc: a full collection before a memory reading, so garbage does not count as growth.
    (globalThis as { gc?: () => void }).gc?.();
    process.send!(process.memoryUsage());
  } else if (request.cmd === "statements") {
    const own = (app.services as { checkpointReads?: { statementCount?: unknown } }).checkpointReads?.statementCount;
    const count: StatementCount = { driver: statements.count(), readModel: typeof own === "number" ? own : null };
    process.send!(count);
  }
});

const stop = () => {
  histogram.disable();
  void app.close().then(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
