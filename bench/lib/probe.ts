// Loaded into runledger's own process ahead of src/main.ts (node --import) for
// the scenarios that read the server's instruments: an event-loop delay
// histogram of the main thread, a count of the SQL statements executed on every
// SQLite connection, and, when started with --expose-gc, a full garbage
// collection on request before a memory reading. Nothing is added to the API:
// the numbers leave through the IPC channel only (ask() in runledger.ts).
//
// In a cluster (WORKERS > 1) every process loads it: the primary answers the
// harness with what its workers answer it, each worker's loop measured on its
// own, the worst worker's percentiles (its delays are the ones its runs wait
// through), statements and memory summed.
import cluster from "node:cluster";
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

/** This process's answer to a request. */
function answer(request: ProbeRequest): unknown {
  if (request.cmd === "reset") {
    histogram.reset();
    return { ok: true };
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
    return delay;
  } else if (request.cmd === "gc") {
    // Only with --expose-gc: a full collection before a memory reading, so garbage does not count as growth.
    (globalThis as { gc?: () => void }).gc?.();
    return process.memoryUsage();
  }
  return statements.count();
}

/** The workers' answers, one from each, combined as one process's. */
function combine(request: ProbeRequest, answers: unknown[]): unknown {
  if (request.cmd === "reset") return { ok: true };
  if (request.cmd === "statements") return (answers as number[]).reduce((a, b) => a + b, 0);
  if (request.cmd === "gc") {
    const sum = (key: keyof NodeJS.MemoryUsage) => (answers as NodeJS.MemoryUsage[]).reduce((a, b) => a + b[key], 0);
    return { rss: sum("rss"), heapTotal: sum("heapTotal"), heapUsed: sum("heapUsed"), external: sum("external"), arrayBuffers: sum("arrayBuffers") };
  }
  const delays = answers as LoopDelay[];
  const worst = (key: keyof LoopDelay) => Math.max(...delays.map((d) => d[key]));
  return {
    p50: worst("p50"),
    p95: worst("p95"),
    p99: worst("p99"),
    max: worst("max"),
    mean: worst("mean"),
    samples: delays.reduce((a, d) => a + d.samples, 0),
  };
}

if (cluster.isWorker) {
  process.on("message", (message: { probe?: ProbeRequest }) => {
    if (message?.probe) process.send!({ probed: answer(message.probe) });
  });
} else {
  process.on("message", (request: ProbeRequest) => {
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is NonNullable<typeof w> => w !== undefined && w.isConnected());
    if (workers.length === 0) return process.send!(answer(request));
    const answers: unknown[] = [];
    const onMessage = (_worker: unknown, message: { probed?: unknown }) => {
      if (message?.probed === undefined) return;
      answers.push(message.probed);
      if (answers.length < workers.length) return;
      cluster.off("message", onMessage);
      process.send!(combine(request, answers));
    };
    cluster.on("message", onMessage);
    for (const worker of workers) worker.send({ probe: request });
  });
}
