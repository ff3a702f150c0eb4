// What the primary and its workers say to each other besides the event bus's
// messages (src/storage/event-bus/cluster-protocol.ts), on the same IPC channel.
// Every message has a `cluster` key.
import type { BusMessage, BusPort } from "../storage/event-bus/cluster-protocol.ts";
import { busPort } from "../storage/event-bus/cluster-protocol.ts";

export type ClusterMessage =
  /** worker → primary: it listens; `fields` are what its "runledger listening" line would say. */
  | { cluster: "listening"; url: string; fields: Record<string, unknown> }
  /** primary → one worker: the cluster serves; check the model now (said once, not once per worker). */
  | { cluster: "report-model" }
  /** worker → primary: stopping, its runs are recorded; it closes on "close". */
  | { cluster: "drained" }
  /** primary → worker: every stopping worker has drained: close. */
  | { cluster: "close" }
  /** worker → primary: the cluster's /metrics, answered with "collected". */
  | { cluster: "collect"; id: number }
  | { cluster: "collected"; id: number; text: string }
  /** primary → worker: its own metrics, answered with "metrics-json". */
  | { cluster: "metrics"; id: number }
  | { cluster: "metrics-json"; id: number; metrics: unknown[] };

export function isClusterMessage(message: unknown): message is ClusterMessage {
  return typeof message === "object" && message !== null && typeof (message as { cluster?: unknown }).cluster === "string";
}

/** Something that sends and receives over an IPC channel: a worker's `process`, or the primary's handle of a worker. */
export interface IpcEnd {
  send(message: unknown, sendHandle?: undefined, options?: object, callback?: (error: Error | null) => void): boolean;
  on(event: "message", listener: (message: unknown) => void): unknown;
  off(event: "message", listener: (message: unknown) => void): unknown;
  readonly connected?: boolean;
  isConnected?(): boolean;
}

function connected(end: IpcEnd): boolean {
  return end.isConnected ? end.isConnected() : end.connected !== false;
}

/** The bus port on each channel, whose queued messages a cluster message must not overtake. */
const busPorts = new WeakMap<IpcEnd, BusPort>();

/**
 * Sends, dropping the message when the channel has closed (the other end is
 * gone and will be told so otherwise). A cluster message goes after what the
 * bus posted before it ("drained" after a run's terminal event, say).
 */
export function sendTo(end: IpcEnd, message: ClusterMessage | BusMessage | unknown): void {
  if (!connected(end)) return;
  if (isClusterMessage(message)) busPorts.get(end)?.flush();
  end.send(message, undefined, {}, () => {});
}

/** The event bus's side of an IPC channel. */
export function ipcBusPort(end: IpcEnd): BusPort {
  const port = busPort(
    (packet) => sendTo(end, packet),
    (listener) => {
      end.on("message", listener);
      return () => end.off("message", listener);
    },
  );
  busPorts.set(end, port);
  return port;
}
