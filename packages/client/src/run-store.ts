// One run by its id, kept current: what useRun(runId) shows. When an attached
// conversation store of the same client follows the run, this store shows the
// run as that one holds it (nothing more is sent); otherwise it reads the run
// (the run query) and follows its events itself, from its last seq, until it
// ends. A conversation store that lets the run go (it opens another
// conversation, or detaches) hands over: this store follows on from the last
// seq it showed.
import type { RunledgerClient } from "./client.js";
import { coreOf, type ActionError, type ClientCore, type HeldStore } from "./core.js";
import { RUN_EVENTS, RUN_RECORD } from "./documents.js";
import type { PendingInterrupt } from "./interrupts.js";
import { Value, type Readable } from "./observable.js";
import { applyEvent, emptyRun, isTerminal, liveRun, refill, withRecord, type ChatMessage, type LiveRun, type RunState } from "./run-log.js";
import { followRun } from "./run-events.js";

export interface RunSnapshot {
  runId: string;
  /** `loading` until the run is known; `ready`; `missing`: no such run (or not the caller's). */
  phase: "loading" | "ready" | "missing";
  /** The run's state as the server reports it: status, error, queue place, lastSeq, gaps. Null until known. */
  run: RunState | null;
  /** Its conversation, once known. */
  conversationId: string | null;
  /**
   * What it streamed (its events' messages, as a conversation store shows
   * them); once it ended, when this store reads it itself (`source: "own"`),
   * the messages it stored, its user message included.
   */
  messages: readonly ChatMessage[];
  /** What it asks, when it is WAITING. */
  interrupts: readonly PendingInterrupt[];
  /** `conversation`: shown as an attached conversation store of this client follows it; `own`: read and followed by this store. */
  source: "conversation" | "own" | null;
  /** Listening; false after detach(). */
  attached: boolean;
  /** Why reading or following it failed, if it did. */
  error: ActionError | null;
}

export interface RunStoreOptions {
  /** Start listening at once (the default); false: nothing is sent until attach(). */
  attach?: boolean;
}

/** A store following one run by its id. close() it when done. */
export function createRunStore(client: RunledgerClient, runId: string, options: RunStoreOptions = {}): RunStore {
  return new RunStore(coreOf(client), runId, options);
}

const EMPTY: readonly never[] = Object.freeze([]);

export class RunStore implements Readable<RunSnapshot> {
  readonly #core: ClientCore;
  readonly #runId: string;
  readonly #value: Value<RunSnapshot>;
  #live: LiveRun | null = null;
  #conversationId: string | null = null;
  #phase: RunSnapshot["phase"] = "loading";
  #source: RunSnapshot["source"] = null;
  #error: ActionError | null = null;
  #attached = false;
  #closed = false;
  /** Bumped on every detach: a callback of an earlier attachment changes nothing. */
  #gen = 0;
  #stop: (() => void) | null = null;
  #scheduled = false;

  /** Use createRunStore(client, runId, options). */
  constructor(core: ClientCore, runId: string, options: RunStoreOptions = {}) {
    this.#core = core;
    this.#runId = runId;
    this.#value = new Value(this.#derive());
    if (options.attach ?? true) this.attach();
  }

  getSnapshot = (): RunSnapshot => this.#value.getSnapshot();
  subscribe = (listener: () => void): (() => void) => this.#value.subscribe(listener);

  attach(): void {
    if (this.#closed || this.#attached) return;
    this.#attached = true;
    this.#core.adopt(this);
    if (!this.#mirror()) this.#followOwn();
    this.#publish();
  }

  detach(): void {
    if (!this.#attached) return;
    this.#gen++;
    this.#attached = false;
    this.#core.forget(this);
    this.#stop?.();
    this.#stop = null;
    this.#publish();
  }

  close(): void {
    this.detach();
    this.#closed = true;
  }

  /** Nothing to write: a run store keeps no resume point. */
  flush(): void {}

  /** Shows the run as an attached conversation store of the client holds it, for as long as it does; whether one does. */
  #mirror(): boolean {
    const store = this.#core.storeOf(this.#runId) as (HeldStore & Readable<unknown>) | null;
    if (!store || typeof store.subscribe !== "function") return false;
    const gen = this.#gen;
    let off: (() => void) | null = null;
    const update = () => {
      if (gen !== this.#gen) return;
      const known = store.knownRun?.(this.#runId) ?? null;
      const attached = (store.getSnapshot() as { attached?: boolean }).attached !== false;
      if (!known || !attached) {
        // Let go: followed on from the last seq shown.
        off?.();
        this.#stop = null;
        this.#followOwn();
        this.#publish();
        return;
      }
      this.#live = known.live;
      this.#conversationId = known.conversationId;
      this.#phase = "ready";
      this.#source = "conversation";
      this.#publish();
    };
    off = store.subscribe(update);
    this.#stop = () => off?.();
    update();
    return true;
  }

  #followOwn(): void {
    this.#source = "own";
    const gen = this.#gen;
    void this.#read(gen).then(() => {
      if (gen !== this.#gen || this.#phase === "missing" || (this.#live && isTerminal(this.#live.run.status))) return;
      this.#follow(gen);
    });
  }

  /** Reads the run's record: its status, conversation and (once it ended) the messages it stored. */
  async #read(gen: number): Promise<void> {
    try {
      const data = await this.#core.query(RUN_RECORD, { id: this.#runId });
      if (gen !== this.#gen) return;
      if (!data.run) {
        this.#phase = "missing";
      } else {
        const live = this.#live ?? liveRun(emptyRun(this.#runId, data.run.status));
        // Once it ended, what it stored stands in for what streamed; before, its events tell.
        this.#live = isTerminal(data.run.status) ? refill(live, data.run) : { ...live, run: withRecord(live.run, data.run) };
        this.#conversationId = data.run.conversation.id;
        this.#phase = "ready";
      }
      this.#error = null;
    } catch (error) {
      if (gen !== this.#gen) return;
      this.#error = { code: "READ_FAILED", message: `could not read run ${this.#runId}: ${(error as Error).message}` };
    }
    this.#publish();
  }

  /** Follows its events after the last seq shown, until its terminal one; the record is read again then. */
  #follow(gen: number): void {
    this.#stop = followRun(this.#core.transport, this.#runId, {
      document: RUN_EVENTS,
      lastSeq: () => this.#live?.run.lastSeq ?? 0,
      wanted: () => gen === this.#gen && !(this.#live && isTerminal(this.#live.run.status)),
      event: (event) => {
        if (gen !== this.#gen) return;
        const before = this.#live ?? liveRun(emptyRun(this.#runId));
        const after = applyEvent(before, event);
        if (after === before) return;
        this.#live = after;
        this.#phase = "ready";
        if (event.__typename === "RunStatusEvent" && isTerminal(after.run.status)) {
          this.#stop?.();
          this.#stop = null;
          void this.#read(gen);
        }
        this.#publishSoon();
      },
      end: (end) => {
        if (gen !== this.#gen || end.reason !== "refused") return;
        this.#error = end.error;
        void this.#read(gen);
      },
    });
  }

  #publishSoon(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#core.schedule(() => {
      this.#scheduled = false;
      this.#publish();
    });
  }

  #derive(): RunSnapshot {
    const live = this.#live;
    return {
      runId: this.#runId,
      phase: this.#phase,
      run: live?.run ?? null,
      conversationId: this.#conversationId,
      messages: live?.messages ?? EMPTY,
      interrupts: live?.interrupts ?? EMPTY,
      source: this.#source,
      attached: this.#attached,
      error: this.#error,
    };
  }

  #publish(): void {
    const previous = this.#value.getSnapshot();
    const next = this.#derive();
    if ((Object.keys(next) as (keyof RunSnapshot)[]).every((key) => Object.is(next[key], previous[key]))) return;
    this.#value.set(next);
  }
}
