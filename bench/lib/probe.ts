// Loaded into runledger's own process ahead of src/main.ts (node --import) for
// the scenarios that read the server's instruments: an event-loop delay
// histogram of the main thread, a count of the SQL statements executed on every
// SQLite connection, and, when started with --expose-gc, a full garbage
// collection on request before a memory reading. Nothing is added to the API:
// the numbers leave through the IPC channel only (ask() in runledger.ts).
import { monitorEventLoopDelay } from "node:perf_hooks";
import { countSqlStatements } from "../../testkit/sql-statements.ts";

export type ProbeRequest = { cmd: "reset" } | { cmd: "read" } | { cmd: "statements" } | { cmd: "gc" };
export interface LoopDelay {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
  samples: number;
}

// Counted at the driver, so every connection's statements are seen (the writer's, LangGraph's and the reader's).
const statements = countSqlStatements();
// The sampling timer lives in libuv, not in JavaScript, so it costs the loop
// nothing measurable. Node records the whole interval between two timer
// callbacks; the delay is that minus the resolution.
const RESOLUTION_MS = 1;
const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
histogram.enable();

process.on("message", (request: ProbeRequest) => {
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
    process.send!(statements.count());
  }
});
