// The IPC channel between a cluster's primary and a worker: what the event bus
// posts in one pass of the event loop leaves as one message, and a cluster
// message ("drained", "close") never overtakes what the bus posted before it.
// test/cluster.spec.ts runs the whole cluster between real processes.
import { describe, expect, it } from "vitest";
import { ipcBusPort, sendTo, type IpcEnd } from "../src/cluster/messages.ts";
import type { BusMessage } from "../src/storage/event-bus/cluster-protocol.ts";

/** An IPC end that records what it is asked to send. */
function recordingEnd(): IpcEnd & { sent: unknown[] } {
  const sent: unknown[] = [];
  return {
    sent,
    send(message) {
      sent.push(message);
      return true;
    },
    on() {},
    off() {},
    connected: true,
  };
}

const cancel = (runId: string): BusMessage => ({ bus: "cancel", runId });
const nextPass = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the cluster's IPC channel", () => {
  it("sends what the bus posts in one pass of the loop as one batch, once the pass is over", async () => {
    const end = recordingEnd();
    const port = ipcBusPort(end);
    // Two turns in one check phase, as src/turns.ts gives them, each posting after an await.
    await new Promise<void>((resolve) => {
      setImmediate(() => port.post(cancel("a")));
      setImmediate(async () => {
        await Promise.resolve();
        port.post(cancel("b"));
        resolve();
      });
    });
    expect(end.sent).toEqual([]);
    await nextPass();
    expect(end.sent).toEqual([{ bus: "batch", messages: [cancel("a"), cancel("b")] }]);
  });

  it("sends a lone message as it is, on the next pass", async () => {
    const end = recordingEnd();
    const port = ipcBusPort(end);
    port.post(cancel("a"));
    await nextPass();
    expect(end.sent).toEqual([cancel("a")]);
  });

  it("sends what the bus queued before a cluster message, first", async () => {
    const end = recordingEnd();
    const port = ipcBusPort(end);
    port.post(cancel("a"));
    sendTo(end, { cluster: "drained" });
    expect(end.sent).toEqual([cancel("a"), { cluster: "drained" }]);
    await nextPass();
    // Nothing is sent twice.
    expect(end.sent).toHaveLength(2);
  });

  it("flush() sends the queue at once (the bus's last message before it closes)", () => {
    const end = recordingEnd();
    const port = ipcBusPort(end);
    port.post(cancel("a"));
    port.post({ bus: "bye" });
    port.flush();
    expect(end.sent).toEqual([{ bus: "batch", messages: [cancel("a"), { bus: "bye" }] }]);
  });
});
