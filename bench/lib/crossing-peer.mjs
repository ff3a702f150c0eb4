// The other side of the crossing scenario (bench/scenarios/crossing.ts), in a
// worker thread or in a child process: on "send" it sends run events at a
// given rate, each stamped with its send time; on "load" it imports the
// packages an executing instance holds (LangGraph, LangChain, the Ollama
// client) and answers when done; on "elu" it answers how busy its event loop
// was since the last ask. Plain JavaScript, so both load it as it is.
import { parentPort } from "node:worker_threads";
import { performance } from "node:perf_hooks";

const post = parentPort ? (message) => parentPort.postMessage(message) : (message) => process.send(message);
const listen = parentPort ? (handler) => parentPort.on("message", handler) : (handler) => process.on("message", handler);

let elu = performance.eventLoopUtilization();

/** A token event as the event bus carries it between instances. */
function tokenEvent(runId, seq) {
  return {
    kind: "event",
    event: {
      runId,
      seq,
      type: "token",
      at: new Date().toISOString(),
      payload: { text: `token ${seq} `, messageId: `run-${runId}-message`, node: "agent" },
    },
    sentAt: performance.timeOrigin + performance.now(),
  };
}

listen(async (message) => {
  if (message.type === "send") {
    const { count, perMs, runs } = message;
    let sent = 0;
    const started = performance.now();
    // Sends what is due every millisecond, as runs streaming together would.
    await new Promise((resolve) => {
      const tick = () => {
        const due = Math.min(count, Math.floor((performance.now() - started) * perMs));
        while (sent < due) {
          post(tokenEvent(`r${sent % runs}`, Math.floor(sent / runs) + 1));
          sent++;
        }
        if (sent >= count) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
    post({ kind: "sent", count: sent });
  } else if (message.type === "load") {
    await import("@langchain/langgraph");
    await import("@langchain/ollama");
    await import("@langchain/core/messages");
    post({ kind: "loaded", rss: process.memoryUsage().rss });
  } else if (message.type === "elu") {
    const now = performance.eventLoopUtilization();
    const since = performance.eventLoopUtilization(now, elu);
    elu = now;
    post({ kind: "elu", activeMs: since.active });
  } else if (message.type === "exit") {
    if (parentPort) parentPort.close();
    else process.exit(0);
  }
});
post({ kind: "ready" });
