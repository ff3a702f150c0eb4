// One subscriber's bounded queue, exposed as an async iterator. Publishers push
// without waiting; a subscriber that falls `limit` events behind is ended with
// SubscriberOverflowError, so it can neither slow the run nor grow without bound.
// Both transports pull from this queue only as fast as their socket drains
// (graphql-ws awaits each send, graphql-yoga's SSE waits for 'drain'), so this
// limit is what bounds a stalled client.

export class SubscriberOverflowError extends Error {
  override name = "SubscriberOverflowError";
  readonly code = "SUBSCRIBER_TOO_SLOW";
  constructor(limit: number) {
    super(`subscriber fell more than ${limit} events behind and was disconnected; resubscribe with after: <last seq received>`);
  }
}

export interface Subscriber<T> extends AsyncIterableIterator<T> {
  /** Queues an item; false when the subscriber is closed or has just overflowed. */
  push(item: T): boolean;
  /** Ends the iteration after what is queued. */
  end(): void;
  /** Ends the iteration with an error, dropping what is queued. */
  fail(error: Error): void;
  readonly closed: boolean;
  /** Items queued and not yet read. */
  readonly pending: number;
}

/**
 * `initial` items are queued first and do not count against `limit`: they are a
 * replay of events the bus retains anyway. The array is taken over, not copied.
 */
export function createSubscriber<T>(limit: number, onClose: () => void, initial: T[] = []): Subscriber<T> {
  const queue: T[] = initial;
  let head = 0;
  let replayLeft = initial.length;
  let ended = false;
  let failure: Error | null = null;
  let released = false;
  let waiting: { resolve: (r: IteratorResult<T>) => void; reject: (e: Error) => void } | null = null;

  const release = () => {
    if (released) return;
    released = true;
    onClose();
  };
  const settle = () => {
    if (!waiting) return;
    const w = waiting;
    if (failure) {
      waiting = null;
      w.reject(failure);
      release();
    } else if (head < queue.length) {
      waiting = null;
      w.resolve({ value: take(), done: false });
    } else if (ended) {
      waiting = null;
      w.resolve({ value: undefined, done: true });
      release();
    }
  };
  const take = (): T => {
    const item = queue[head]!;
    queue[head] = undefined as T;
    head += 1;
    if (replayLeft > 0) replayLeft -= 1;
    if (head > 1024 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
    return item;
  };

  const subscriber: Subscriber<T> = {
    get closed() {
      return ended || failure !== null;
    },
    get pending() {
      return queue.length - head;
    },
    push(item) {
      if (ended || failure) return false;
      if (queue.length - head >= limit + replayLeft) {
        subscriber.fail(new SubscriberOverflowError(limit));
        return false;
      }
      queue.push(item);
      settle();
      return true;
    },
    end() {
      if (ended || failure) return;
      ended = true;
      settle();
      if (!waiting && head >= queue.length) release();
    },
    fail(error) {
      if (ended || failure) return;
      failure = error;
      queue.length = 0;
      head = 0;
      replayLeft = 0;
      settle();
      release();
    },
    next() {
      if (failure) {
        release();
        return Promise.reject(failure);
      }
      if (head < queue.length) return Promise.resolve({ value: take(), done: false });
      if (ended) {
        release();
        return Promise.resolve({ value: undefined, done: true });
      }
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    return() {
      ended = true;
      queue.length = 0;
      head = 0;
      replayLeft = 0;
      if (waiting) {
        waiting.resolve({ value: undefined, done: true });
        waiting = null;
      }
      release();
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error?: unknown) {
      return subscriber.return!().then(() => Promise.reject(error));
    },
    [Symbol.asyncIterator]() {
      return subscriber;
    },
  };
  return subscriber;
}
