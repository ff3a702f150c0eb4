// Async iterators built over bus subscribers. They are hand-written rather than
// async generators on purpose: an async generator parked in `await` cannot be
// returned until that await settles, so a client that unsubscribes from a quiet
// stream would keep its bus listener until the next event. Here return() reaches
// the source at once.
import type { RunEvent } from "../domain/events.ts";
import { TERMINAL_STATUSES, type RunErrorCodeValue, type RunStatusValue } from "../domain/records.ts";
import { RunLogLostError, type EventBus } from "../storage/event-bus/types.ts";

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/**
 * Maps each item of `source` with `map`; an undefined result skips the item.
 * When the source fails, `onError` may turn the error into one last item (then
 * the stream ends) or return undefined to let the error through.
 */
export function mapStream<T, U>(
  source: AsyncIterator<T>,
  map: (item: T) => U | undefined | Promise<U | undefined>,
  onError: (error: unknown) => U | undefined = () => undefined,
): AsyncIterableIterator<U> {
  let finished = false;
  const stream: AsyncIterableIterator<U> = {
    async next() {
      while (!finished) {
        let result: IteratorResult<T>;
        try {
          result = await source.next();
        } catch (error) {
          finished = true;
          const last = onError(error);
          if (last === undefined) throw error;
          return { value: last, done: false };
        }
        if (result.done || finished) break;
        const value = await map(result.value);
        if (finished) break;
        if (value !== undefined) return { value, done: false };
      }
      finished = true;
      return DONE;
    },
    async return() {
      if (!finished) {
        finished = true;
        await source.return?.();
      }
      return DONE;
    },
    [Symbol.asyncIterator]() {
      return stream;
    },
  };
  return stream;
}

/** What the run store knows about a run, for runs this bus holds no log of. */
export interface StoredRun {
  conversationId: string;
  status: RunStatusValue;
  errorCode: RunErrorCodeValue | null;
  errorMessage: string | null;
  finishedAt: Date | null;
  /** seq of the terminal event (0 while running). */
  lastEventSeq: number;
}

export interface FollowRunOptions {
  /** Reads the run's row; null when it no longer exists. */
  lookup: (runId: string) => Promise<StoredRun | null>;
  /** How often to look again while the database says running and no log is here (a run of another process). */
  pollMs: number;
}

/**
 * Every event of one run with seq > after, then live, until the terminal event.
 * The bus answers while it holds the run's log; after the grace period (or for a
 * run of another process) the database answers with the terminal event alone.
 */
export function followRun(bus: EventBus, runId: string, after: number, options: FollowRunOptions): AsyncIterableIterator<RunEvent> {
  let live: AsyncIterator<RunEvent> | null = null;
  let asked = false;
  let finished = false;
  let wake: (() => void) | null = null;

  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = null;
        resolve();
      }, options.pollMs);
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });

  /** The terminal event from the store, DONE, or null once a live log has been found. */
  const fromStore = async (): Promise<IteratorResult<RunEvent> | null> => {
    for (;;) {
      const run = await options.lookup(runId);
      if (finished || !run) break;
      if (TERMINAL_STATUSES.has(run.status)) {
        finished = true;
        // Recovery records a dead instance's run without knowing its last seq (0): the
        // terminal event then follows whatever this subscriber already has.
        const seq = run.lastEventSeq === 0 ? after + 1 : run.lastEventSeq;
        if (seq <= after) return DONE;
        return {
          done: false,
          value: {
            type: "status",
            status: run.status,
            errorCode: run.errorCode,
            errorMessage: run.errorMessage,
            seq,
            runId,
            conversationId: run.conversationId,
            at: run.finishedAt ?? new Date(),
          },
        };
      }
      // Running: its log may have opened since the last look.
      live = await bus.subscribeRun(runId, after);
      if (finished) {
        await live?.return?.();
        break;
      }
      if (live) return null;
      await pause();
      if (finished) break;
    }
    finished = true;
    return DONE;
  };

  const stream: AsyncIterableIterator<RunEvent> = {
    async next() {
      if (finished) return DONE;
      if (!asked) {
        asked = true;
        live = await bus.subscribeRun(runId, after);
        if (finished) {
          await live?.return?.();
          return DONE;
        }
      }
      if (!live) {
        const answer = await fromStore();
        if (answer) return answer;
      }
      let result: IteratorResult<RunEvent>;
      try {
        result = await live!.next();
      } catch (error) {
        // The instance executing the run died with its log: the store will tell the outcome once it is recovered.
        if (!(error instanceof RunLogLostError)) throw error;
        live = null;
        const answer = await fromStore();
        return answer ?? stream.next();
      }
      if (result.done) finished = true;
      else if (result.value.seq > after) after = result.value.seq;
      return result;
    },
    async return() {
      finished = true;
      wake?.();
      await live?.return?.();
      return DONE;
    },
    [Symbol.asyncIterator]() {
      return stream;
    },
  };
  return stream;
}
