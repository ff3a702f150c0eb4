// The `fetch` each run's ChatOllama uses. It carries the run's AbortSignal, so a
// cancel stops the HTTP request at once, even before the first token (the Ollama
// client itself only checks for aborts when a chunk arrives). It also watches the
// byte stream: an idle timer fails the request when the model goes silent, and it
// notes what Ollama said (HTTP status, an {"error": ...} line) for classification.
// An Ollama whose own queue is full answers 503 at once: the request is sent
// again after a backoff (and, under admission, after the run waited its turn
// in runledger's queue again), until it is taken or the run is stopped, so a
// busy model makes a run wait, never fail. Each line the model streams is
// handed on in its own turn on the event loop (src/turns.ts), so a backlog of
// buffered tokens never holds the loop in one piece; the bytes are read as they
// arrive, so a connection that drops takes none of them with it.
import { turns } from "../turns.ts";

export class ModelIdleTimeoutError extends Error {
  override name = "ModelIdleTimeoutError";
  constructor(readonly idleMs: number) {
    super(`the model sent nothing for ${idleMs} ms`);
  }
}

/** What the transport saw; read after a failure to name its cause. */
export interface ModelTransportReport {
  httpStatus?: number;
  /** The text of an {"error": ...} line or error body from Ollama. */
  modelError?: string;
  timedOut: boolean;
}

/** The first wait after a 503 from Ollama; each next one doubles, up to BUSY_BACKOFF_MAX_MS. */
export const BUSY_BACKOFF_MS = 200;
export const BUSY_BACKOFF_MAX_MS = 5_000;

export function createModelFetch(options: {
  signal: AbortSignal;
  idleTimeoutMs: number;
  report: ModelTransportReport;
  baseFetch?: typeof fetch;
  /**
   * Told each time Ollama answers 503 (its queue is full), with the backoff the
   * answer earned; the request is sent again once the promise resolves (the run
   * waited the backoff and its turn in the queue). Without it, the request is
   * sent again after the backoff.
   */
  whenBusy?: (backoffMs: number) => Promise<void>;
}): typeof fetch {
  const baseFetch = options.baseFetch ?? fetch;
  const watched = watchedFetch({ ...options, baseFetch });
  return async (input, init) => {
    // The body is sent again as it was (a string: the Ollama client serializes its request).
    for (let wait = BUSY_BACKOFF_MS; ; wait = Math.min(wait * 2, BUSY_BACKOFF_MAX_MS)) {
      const response = await watched(input, init);
      if (response.status !== 503) return response;
      await response.body?.cancel().catch(() => {});
      await (options.whenBusy ? settledUnlessAborted(options.whenBusy(wait), options.signal) : sleepUnlessAborted(wait, options.signal));
    }
  };
}

function settledUnlessAborted(wait: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    wait.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function watchedFetch(options: { signal: AbortSignal; idleTimeoutMs: number; report: ModelTransportReport; baseFetch: typeof fetch }): typeof fetch {
  const { report, idleTimeoutMs, baseFetch } = options;

  return async (input, init) => {
    const controller = new AbortController();
    const signals = [options.signal, controller.signal];
    if (init?.signal) signals.push(init.signal);
    const signal = AbortSignal.any(signals);
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        report.timedOut = true;
        controller.abort(new ModelIdleTimeoutError(idleTimeoutMs));
      }, idleTimeoutMs);
    };
    const disarm = () => clearTimeout(timer);
    arm();
    let response: Response;
    try {
      response = await baseFetch(input, { ...init, signal });
    } catch (error) {
      disarm();
      throw signal.aborted && signal.reason instanceof Error ? signal.reason : error;
    }
    report.httpStatus = response.status;
    if (!response.body) {
      disarm();
      return response;
    }
    const noteErrorLine = (line: string) => {
      if (!line.includes('"error"')) return;
      try {
        const parsed = JSON.parse(line) as { error?: unknown };
        if (typeof parsed.error === "string") report.modelError = parsed.error;
      } catch {
        // Not JSON: the Ollama client reports it itself.
      }
    };
    // Node's fetch empties the body's queue when the connection fails: bytes that
    // arrived but were not read yet go with it. So the body is read as it comes,
    // whatever the turns; its lines wait here for theirs, and the end, or the
    // failure, is handed on after the last of them.
    const reader = response.body.getReader();
    const lines: Uint8Array[] = [];
    /** Set once the model's stream ended: `failed` with its error when the connection failed. */
    let ended: { failed: false } | { failed: true; error: unknown } | undefined;
    /** Wakes the pull waiting for the model's next bytes. */
    let wake = () => {};
    let cancelled = false;
    void (async () => {
      const decoder = new TextDecoder();
      let pending = "";
      try {
        for (;;) {
          const { value, done } = await readUnlessAborted(reader, signal);
          if (done) break;
          pending += decoder.decode(value, { stream: true });
          const texts = pending.split("\n");
          pending = texts.pop() ?? "";
          for (const line of texts) noteErrorLine(line);
          for (let from = 0; from < value.length;) {
            const end = value.indexOf(10, from);
            const to = end < 0 ? value.length : end + 1;
            lines.push(value.subarray(from, to));
            from = to;
          }
          wake();
        }
        noteErrorLine(pending);
        ended = { failed: false };
      } catch (error) {
        ended = { failed: true, error };
      }
      wake();
    })();
    disarm();
    const body = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        try {
          // The timer runs only while a reader waits for bytes the model has not sent,
          // so time this process spends on its lines never counts as the model's silence.
          while (lines.length === 0 && !ended) {
            arm();
            await new Promise<void>((resolve) => (wake = resolve));
          }
          disarm();
          const line = lines.shift();
          if (line) {
            // A turn per line, ahead of requests: the time a line waits is this process's, never the model's silence.
            await turns.turn("stream");
            if (cancelled) return;
            if (signal.aborted) throw signal.reason;
            ctrl.enqueue(line);
          } else if (!cancelled) {
            if (ended?.failed) throw ended.error;
            ctrl.close();
          }
        } catch (error) {
          disarm();
          if (!cancelled) ctrl.error(signal.aborted && signal.reason instanceof Error ? signal.reason : error);
        }
      },
      cancel(reason) {
        cancelled = true;
        disarm();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/**
 * reader.read(), settled by the abort signal as well. Node's fetch leaves a read
 * pending forever when the request is aborted after the whole body has arrived
 * but before it was read; a stopped run must never wait on such a read.
 */
function readUnlessAborted(reader: ReadableStreamDefaultReader<Uint8Array>, signal: AbortSignal): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      reject(signal.reason);
      reader.cancel(signal.reason).catch(() => {});
    };
    signal.addEventListener("abort", onAbort, { once: true });
    reader.read().then(
      (result) => {
        signal.removeEventListener("abort", onAbort);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
