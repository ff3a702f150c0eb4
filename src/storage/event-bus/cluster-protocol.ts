// What the workers' cluster buses (cluster.ts) and the primary's relay
// (cluster-relay.ts) say to each other. Every message has a `bus` key, so a
// process's channel may carry other messages beside them. The channel must keep
// Dates (node's cluster with `serialization: "advanced"`, or a MessagePort):
// events go as they are, never as text.
import type { ConversationChange, RunEvent, RunEventBody } from "../../domain/events.ts";

/** Where a bus's messages go and come from: the IPC channel to the primary, or a MessagePort. */
export interface BusPort {
  post(message: BusMessage): void;
  /** Sends what was posted and not yet sent, now (before a message that must not overtake it, or an exit). */
  flush(): void;
  /** Calls `listener` for every message that arrives; returns the function that stops it. */
  onMessage(listener: (message: BusMessage) => void): () => void;
}

/** A run's log as its owner answers a follow request: the retained events after the seq asked for. */
export interface FollowAnswer {
  conversationId: string;
  events: RunEvent[];
  lastSeq: number;
  finished: boolean;
}

/** Requests a worker sends; the relay asks every other worker and answers. */
export type Request =
  /** The retained events of a run after `after`; with `feed`, every later one too, as `ev` messages for that feed. */
  | { op: "follow"; runId: string; after: number; feed: number | null }
  /** endAbandonedRun on whichever worker holds the run's log. */
  | { op: "end"; runId: string; conversationId: string; body: RunEventBody }
  /** From now on, send this conversation's events here too. Answered once every worker knows. */
  | { op: "watch"; conversationId: string }
  /** Answered by the relay itself: readiness. */
  | { op: "ping" };

export type BusMessage =
  // worker → relay: a request; relay → worker: the same request from another worker (`from`), to answer with `res`.
  | ({ bus: "req"; id: number; from?: number } & Request)
  // the answer to a request: worker → relay (`id` the relay's), relay → asker (`owner`: who answered, for follow).
  | { bus: "res"; id: number; value: unknown; owner?: number }
  // an event of a followed run, owner → relay → follower, for the follower's feed.
  | { bus: "ev"; to: number; feed: number; event: RunEvent }
  // the owner ends a feed without its terminal event (its bus closed).
  | { bus: "fend"; to: number; feed: number }
  // the follower needs a feed no more (owner's id in `to`).
  | { bus: "unfollow"; to: number; feed: number; from?: number }
  // an event of a conversation other workers watch, to each of them.
  | { bus: "cev"; to: number[]; event: RunEvent }
  // a worker stops watching a conversation; relayed with `from`.
  | { bus: "unwatch"; conversationId: string; from?: number }
  // relay → every worker: another worker watches a conversation (answered with `res`).
  | { bus: "watch"; id: number; conversationId: string; from: number }
  // a conversation change, sent through the relay so every worker sees all of them in one order; `ack` on the sender's copy.
  | { bus: "change"; change: ConversationChange; ack?: number }
  // a cancel request, to every other worker.
  | { bus: "cancel"; runId: string }
  // relay → every worker: a worker is gone (exited or closed its bus); its runs' feeds end, its watches and taps go.
  | { bus: "gone"; worker: number }
  // worker → relay: this bus is listening (requests reach it from now on) / closed.
  | { bus: "hello" }
  | { bus: "bye" };

/** What goes over the channel: a message, or those posted in one synchronous stretch, in order. */
type Packet = BusMessage | { bus: "batch"; messages: BusMessage[] };

export function isBusMessage(message: unknown): message is BusMessage {
  return typeof message === "object" && message !== null && typeof (message as { bus?: unknown }).bus === "string";
}

/**
 * A bus port over a channel's `send` and `listen`. What is posted in one pass
 * of the event loop (the tokens of every run that had its turn in it, a
 * relay's share of what it just read) leaves as one message, once the pass is
 * over (setImmediate): each message costs both ends a serialization and the
 * channel a write. Under load one pass holds many turns (src/turns.ts), each
 * a stretch of its own (docs/design.md, "The workers' channel", measures it);
 * an idle loop goes on to the next pass at once, so a lone event is not held.
 */
export function busPort(send: (packet: unknown) => void, listen: (listener: (packet: unknown) => void) => () => void): BusPort {
  let queue: BusMessage[] = [];
  let scheduled: NodeJS.Immediate | null = null;
  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = null;
    if (queue.length === 0) return;
    const messages = queue;
    queue = [];
    send(messages.length === 1 ? messages[0] : ({ bus: "batch", messages } satisfies Packet));
  };
  return {
    post(message) {
      queue.push(message);
      scheduled ??= setImmediate(flush);
    },
    flush,
    onMessage(listener) {
      return listen((received) => {
        if (!isBusMessage(received)) return;
        const packet = received as Packet;
        if (packet.bus === "batch") for (const message of packet.messages) listener(message);
        else listener(packet);
      });
    },
  };
}

/** A MessagePort (worker_threads) as a bus port: structured clone keeps Dates. */
export function messagePortBus(port: import("node:worker_threads").MessagePort): BusPort {
  return busPort(
    (packet) => port.postMessage(packet),
    (listener) => {
      port.on("message", listener);
      return () => port.off("message", listener);
    },
  );
}
