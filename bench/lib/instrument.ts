// The harness side of instrumented-main.ts: start it, and ask it over IPC.
import { startRunledger, type RunledgerProcess } from "./processes.ts";
import type { InstrumentRequest, LoopDelay, StatementCount } from "./instrumented-main.ts";

export type { LoopDelay, StatementCount };

export function startInstrumented(options: Omit<Parameters<typeof startRunledger>[0], "entry">): Promise<RunledgerProcess> {
  return startRunledger({ ...options, entry: "bench/lib/instrumented-main.ts" });
}

/** Sends one request and resolves with the next message the server sends back. */
export function ask<T>(server: RunledgerProcess, request: InstrumentRequest): Promise<T> {
  return new Promise((resolve) => {
    server.child.once("message", (reply) => resolve(reply as T));
    server.child.send(request);
  });
}
