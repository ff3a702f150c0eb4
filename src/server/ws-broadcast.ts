// One execution, one serialization and one send loop for every WebSocket
// operation that subscribed with the same document and variables.
//
// graphql-ws runs each subscription on its own: its own event stream, its own
// `for await`, its own JSON.stringify and an awaited send per event. For a run
// watched by many clients that is most of the server's work. Here the first
// operation of a kind starts the group's one stream; each result is serialized
// once, and every member gets it as one frame that differs only in its
// operation id (a prefix per member, built when it joins). graphql-ws still
// owns the protocol: it sees each member as an operation whose stream yields
// nothing and ends when the group ends, so `complete` from the client, a closed
// socket and the server's own `complete` work as for any other operation.
//
// What a member would have had on its own, it has here:
// - a subscription field marked `replay` (runEvents: retained events, then
//   live) sends a late member what the group has sent so far, then the rest; a
//   `live` field (conversationEvents, conversationsChanged) starts at joining;
// - the slow-subscriber rule: a member with more than `queueLimit` frames not
//   yet written to its socket is cut off with the SUBSCRIBER_TOO_SLOW result and
//   completed, and the others go on;
// - errors: a result with errors is sent as it would be (formatted by
//   `formatErrors`); a stream that throws ends every member with an error message.
import type { WebSocket } from "ws";
import { GraphQLError, type ExecutionResult, type GraphQLFormattedError } from "graphql";

/** How a subscription field treats a member that joins a running group. */
export type BroadcastMode = "replay" | "live";

/** The `extensions` key a subscription field sets to be broadcast. */
export const BROADCAST_EXTENSION = "broadcast";

export interface BroadcastOptions {
  /** SUBSCRIBER_QUEUE_LIMIT: frames a member may have unwritten before it is cut off. */
  queueLimit: number;
  /** The frames a `replay` group keeps for late members; a group past it takes no new members. */
  replayLimit: number;
  /** How errors are written into a result sent over WebSocket. */
  formatErrors: (error: GraphQLError) => GraphQLFormattedError;
  /** The message and code of the result that cuts a slow member off. */
  tooSlow: (limit: number) => GraphQLError;
}

type Source = AsyncIterator<ExecutionResult>;

interface Member {
  socket: WebSocket;
  /** `{"id":<id>,"type":"next","payload":` for this member's operation id. */
  prefix: string;
  /** Frames handed to the socket and not yet written out. */
  unwritten: number;
  /** Of those, the backlog a late member was sent on joining: like a bus replay, it does not count against queueLimit. */
  replayLeft: number;
  written: () => void;
  /** Ends the member's operation for graphql-ws: done (it sends `complete`), or an error (it sends `error`). */
  finish: (error?: unknown) => void;
  /** Ends it and takes it out of its group. */
  leave: () => void;
  ended: boolean;
}

interface Group {
  members: Set<Member>;
  /** Wakes the pump once some member has written everything it was sent. */
  wake: (() => void) | null;
  /** What the group has sent, for late members of a `replay` group; null for `live` and once past replayLimit. */
  sent: string[] | null;
  /** Settles when the stream has started: null, or the single result a failed start gave. */
  started: Promise<ExecutionResult | null>;
  source: Source | null;
  ended: boolean;
}

export interface Broadcast {
  /**
   * Joins (or starts) the group for `key`. `start` runs only for a new group and
   * answers the stream, or a single result when the subscription failed to start
   * (every member waiting for that start gets it, as graphql-ws would send it).
   * Undefined when this operation cannot join the running group (a `replay`
   * group past replayLimit): the caller runs it on its own.
   */
  join(
    key: string,
    mode: BroadcastMode,
    member: { socket: WebSocket; id: string },
    start: () => Promise<AsyncIterable<ExecutionResult> | ExecutionResult>,
  ): Promise<AsyncIterableIterator<never> | ExecutionResult> | undefined;
  /** Groups and members now. */
  stats(): { groups: number; members: number };
}

export function createBroadcast(options: BroadcastOptions): Broadcast {
  const groups = new Map<string, Group>();

  const end = (member: Member, error?: unknown): void => {
    if (member.ended) return;
    member.ended = true;
    member.finish(error);
  };

  const send = (member: Member, frame: string): void => {
    if (member.ended || member.socket.readyState !== member.socket.OPEN) return;
    if (member.unwritten - member.replayLeft >= options.queueLimit) {
      // Cut off: no more frames; its last result says why, then `complete`.
      const payload = JSON.stringify({ data: null, errors: [options.formatErrors(options.tooSlow(options.queueLimit))] });
      member.socket.send(`${member.prefix}${payload}}`);
      member.leave();
      return;
    }
    member.unwritten += 1;
    member.socket.send(member.prefix + frame, member.written);
  };

  const close = (key: string, group: Group, error?: unknown): void => {
    if (groups.get(key) === group) groups.delete(key);
    group.ended = true;
    wakeGroup(group);
    for (const member of group.members) end(member, error);
    group.members.clear();
  };

  const leave = (key: string, group: Group, member: Member): void => {
    end(member);
    group.members.delete(member);
    if (group.members.size === 0 && !group.ended) {
      close(key, group);
      void group.source?.return?.();
    }
  };

  const pump = async (key: string, group: Group, source: Source): Promise<void> => {
    try {
      for (;;) {
        const next = await source.next();
        if (next.done || group.ended) break;
        const result = next.value;
        const frame = `${JSON.stringify(result.errors ? { ...result, errors: result.errors.map(options.formatErrors) } : result)}}`;
        if (group.sent) {
          if (group.sent.length < options.replayLimit) group.sent.push(frame);
          else group.sent = null;
        }
        for (const member of group.members) send(member, frame);
        // The group reads on at the pace of its fastest member, as one operation
        // reads at its own: the stream's queue, not the sockets, holds what waits.
        if (!someCaughtUp(group)) await new Promise<void>((resolve) => (group.wake = resolve));
      }
      close(key, group);
    } catch (error) {
      // As for an operation of its own: graphql-ws sends the error message, no `complete`.
      close(key, group, error);
    }
  };

  const wakeGroup = (group: Group): void => {
    const wake = group.wake;
    group.wake = null;
    wake?.();
  };

  const someCaughtUp = (group: Group): boolean => {
    if (group.members.size === 0) return true;
    for (const member of group.members) if (member.unwritten === 0) return true;
    return false;
  };

  const join = (key: string, group: Group, socket: WebSocket, id: string): { member: Member; iterator: AsyncIterableIterator<never> } => {
    let outcome: { error?: unknown } | null = null;
    let waiting: { resolve: (r: IteratorResult<never>) => void; reject: (e: unknown) => void } | null = null;
    const done: IteratorResult<never> = { done: true, value: undefined };
    const member: Member = {
      socket,
      prefix: `{"id":${JSON.stringify(id)},"type":"next","payload":`,
      unwritten: 0,
      replayLeft: 0,
      written: () => {
        // Frames are written in order: the backlog first.
        member.unwritten -= 1;
        if (member.replayLeft > 0) member.replayLeft -= 1;
        if (member.unwritten === 0) wakeGroup(group);
      },
      finish: (error) => {
        outcome = { error };
        if (!waiting) return;
        if (error === undefined) waiting.resolve(done);
        else waiting.reject(error);
        waiting = null;
      },
      leave: () => leave(key, group, member),
      ended: false,
    };
    const iterator: AsyncIterableIterator<never> = {
      next() {
        if (!outcome) return new Promise((resolve, reject) => (waiting = { resolve, reject }));
        const { error } = outcome as { error?: unknown };
        return error === undefined ? Promise.resolve(done) : Promise.reject(error);
      },
      async return() {
        member.leave();
        return done;
      },
      async throw() {
        member.leave();
        return done;
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    group.members.add(member);
    return { member, iterator };
  };

  return {
    join(key, mode, { socket, id }, start) {
      const running = groups.get(key);
      if (running?.source) {
        if (mode === "replay" && running.sent === null) return undefined;
        const backlog = running.sent ?? [];
        const { member, iterator } = join(key, running, socket, id);
        // What the group sent before this member joined, then live with the others.
        member.replayLeft = backlog.length;
        for (const frame of backlog) send(member, frame);
        // A member with nothing to catch up on is as fast as any: the group need not wait.
        if (member.unwritten === 0) wakeGroup(running);
        return Promise.resolve(iterator);
      }
      if (running) {
        // Starting: nothing is sent yet, so joining now misses nothing.
        const { iterator } = join(key, running, socket, id);
        return running.started.then((single) => single ?? iterator);
      }
      const group: Group = { members: new Set(), wake: null, sent: mode === "replay" ? [] : null, started: Promise.resolve(null), source: null, ended: false };
      groups.set(key, group);
      const { iterator } = join(key, group, socket, id);
      group.started = (async () => {
        let stream: AsyncIterable<ExecutionResult> | ExecutionResult;
        try {
          stream = await start();
        } catch (error) {
          close(key, group);
          throw error;
        }
        if (!isAsyncIterable(stream)) {
          close(key, group);
          return stream;
        }
        group.source = stream[Symbol.asyncIterator]();
        // Everyone who left while it started: nobody is left to send to.
        if (group.ended || group.members.size === 0) {
          close(key, group);
          void group.source.return?.();
        } else void pump(key, group, group.source);
        return null;
      })();
      return group.started.then((single) => single ?? iterator);
    },
    stats() {
      let members = 0;
      for (const group of groups.values()) members += group.members.size;
      return { groups: groups.size, members };
    },
  };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<ExecutionResult> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === "function";
}
