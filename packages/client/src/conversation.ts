// One conversation, followed, not one run: its thread as last read from the
// server, overlaid with what its live runs stream, wherever they were started
// (here, another tab, a plain GraphQL call, the queue). Runs are learned of
// from conversationsChanged and from reads, and each is followed with
// runEvents(runId, after: lastSeq), so a rejoin after a dropped socket, a
// server restart or a refresh continues exactly where it stopped.
//
// The store is a subscribe/getSnapshot pair: every change makes a new
// immutable snapshot, ready for React's useSyncExternalStore.
import { newKey, sendMessage, type ActionHost, type SubmitOptions } from "./conversation-actions.js";
import { ConversationActions } from "./conversation-api.js";
import { CONVERSATION, RUN_EVENTS } from "./documents.js";
import type { RunledgerConversationsChangedSubscription, RunledgerRunFragment } from "./generated.js";
import { MessageWindow } from "./message-window.js";
import { pollQueue, readRunRecord, type RecordHost } from "./run-records.js";
import { Value, type Readable } from "./observable.js";
import { clearResume, readResume, writeResume } from "./resume.js";
import { applyEvent, emptyRun, isTerminal, liveRun, withRecord, type LiveRun, type RunEvent, type RunState } from "./run-log.js";
import {
  SnapshotBuilder,
  sortedRuns,
  stateOf,
  type ConversationData,
  type ConversationOptions,
  type ConversationSnapshot,
  type ConversationState,
  type Outgoing,
  type Tracked,
} from "./snapshot.js";
import { followRun } from "./run-events.js";

export type { ConversationInfo, ConversationOptions, ConversationSnapshot, ConversationState } from "./snapshot.js";
export type { EditInput, ForkOptions, RespondOptions, SubmitOptions } from "./conversation-actions.js";
import type { ActionError, ClientCore, Result } from "./core.js";

type Notice = RunledgerConversationsChangedSubscription["conversationsChanged"];

export class ConversationStore extends ConversationActions implements Readable<ConversationSnapshot> {
  readonly #core: ClientCore;
  readonly #value: Value<ConversationSnapshot>;
  readonly #eventListeners = new Set<(event: RunEvent) => void>();
  /** Bumped on every open and detach: a callback of an earlier one changes nothing. */
  #gen = 0;
  #id: string | null = null;
  #phase: ConversationSnapshot["phase"] = "idle";
  #base: { data: ConversationData; tick: number } | null = null;
  #runs = new Map<string, Tracked>();
  /** Runs let go once a read showed their outcome: their final state, for `runs`. */
  #past = new Map<string, { run: RunState; order: number }>();
  #unconnection: (() => void) | null = null;
  #outgoing: Outgoing[] = [];
  #error: ActionError | null = null;
  #tick = 0;
  #order = 0;
  #attached = false;
  #closed = false;
  #unnotice: (() => void) | null = null;
  #reads = { busy: false, again: false };
  #dirty: Tracked | null = null;
  #persistTimer: ReturnType<typeof setTimeout> | null = null;
  readonly #persistResume: boolean;
  /** Which stored messages are shown (the `pageSize` option). */
  readonly #window: MessageWindow;
  readonly #builder = new SnapshotBuilder();
  /** Changes made since listeners were last told, and whether a turn to tell them is scheduled. */
  #pending = false;
  #scheduled = false;

  /** What the actions (conversation-actions.ts) see of this store. */
  readonly #host: ActionHost;
  /** What the reads of a run's record (run-records.ts) see of it. */
  readonly #records: RecordHost;

  constructor(core: ClientCore, conversationId: string | null, options: ConversationOptions = {}) {
    super();
    this.#core = core;
    this.#records = {
      core,
      generation: () => this.#gen,
      attached: () => this.#attached,
      track: (record) => void this.#track(record.id, record),
      changed: () => this.#publishSoon(),
      failed: (error) => {
        this.#error = error;
        this.#publishSoon();
      },
    };
    this.#host = {
      core,
      conversationId: () => this.#id,
      generation: () => this.#gen,
      runState: (runId) => this.#runs.get(runId)?.live.run ?? null,
      newestRunId: () => this.#sorted().at(-1)?.live.run.id ?? null,
      follow: (record) => {
        const tracked = this.#track(record.id, record);
        this.#follow(tracked);
        return tracked.live.run;
      },
      record: (record, follow) => {
        const tracked = this.#record(record);
        if (follow) this.#follow(tracked);
        return tracked.live.run;
      },
      created: (conversationId) => {
        this.#id = conversationId;
        this.#phase = "loading";
        this.#attach();
      },
      sent: (outgoing, patch) => this.#replaceOutgoing(outgoing, patch),
      followSent: (record) => {
        const tracked = this.#track(record.id, record);
        this.#follow(tracked);
        this.#persist(tracked);
      },
      pendingInterrupts: () => {
        if (this.#pending) this.#publish();
        return this.getSnapshot().interrupts;
      },
      read: () => this.#read(),
      open: (conversationId) => this.open(conversationId),
      publish: () => this.#publish(),
    };
    this.#persistResume = options.persist ?? true;
    this.#window = new MessageWindow(options.pageSize);
    const initial = options.initial;
    if (initial && (initial.v !== 1 || (conversationId !== null && initial.conversationId !== conversationId))) {
      throw new Error("this state is not of the conversation opened (or of another version of the client)");
    }
    this.#value = new Value(this.#derive());
    if (initial) this.#restore(initial);
    else this.#reset(conversationId);
    if (options.attach ?? true) this.attach();
    else this.#publish();
  }

  getSnapshot = (): ConversationSnapshot => this.#value.getSnapshot();
  subscribe = (listener: () => void): (() => void) => this.#value.subscribe(listener);

  /**
   * Calls `listener` with each run event as it is applied: in seq order, each
   * at most once, duplicates from a replay left out. Returns its unsubscribe.
   */
  onEvent(listener: (event: RunEvent) => void): () => void {
    this.#eventListeners.add(listener);
    return () => {
      this.#eventListeners.delete(listener);
    };
  }

  /**
   * Shows another conversation (null: a new one): everything followed for the
   * previous one is unsubscribed first, and nothing it still sends lands here.
   * A run of the new one left live in storage is rejoined after its last seq.
   */
  open(conversationId: string | null): void {
    if (this.#closed) throw new Error("this conversation store is closed");
    if (conversationId === this.#id && this.#attached) return;
    this.#teardown();
    this.#reset(conversationId);
    if (conversationId) this.#attach();
    else this.#attachEmpty();
    this.#publish();
  }

  #reset(conversationId: string | null): void {
    this.#id = conversationId;
    this.#phase = conversationId ? "loading" : "idle";
    this.#base = null;
    this.#window.reset();
    this.#runs = new Map();
    this.#past = new Map();
    this.#outgoing = [];
    this.#error = null;
    this.#loadResume();
  }

  /** A live run left in storage (a refreshed page): shown at once with what it had streamed, and rejoined after its last seq. */
  #loadResume(): void {
    if (!this.#id || !this.#persistResume) return;
    const point = readResume(this.#core.storage, this.#id);
    if (point && !this.#runs.has(point.runId)) this.#runs.set(point.runId, this.#newTracked(point.live));
  }

  /** Starts from a state a server render handed over (loadConversation). */
  #restore(state: ConversationState): void {
    this.#id = state.conversationId;
    this.#phase = state.phase;
    this.#tick = 1;
    this.#base = state.read ? { data: state.read, tick: 1 } : null;
    this.#window.reset();
    if (state.read) this.#window.fit(state.read.messages.length);
    this.#runs = new Map();
    this.#past = new Map();
    for (const { live, ended } of state.runs) {
      const tracked = this.#newTracked(live);
      tracked.endTick = ended === "reflected" ? 0 : ended === "after-read" ? 1 : null;
      this.#runs.set(live.run.id, tracked);
    }
    this.#outgoing = [];
    this.#error = null;
  }

  /**
   * The store's state as plain JSON (what a server render hands the page; see
   * loadConversation): the conversation as read, and each run followed with
   * what it streamed up to its lastSeq.
   */
  serialize(): ConversationState {
    if (!this.#id) throw new Error("no conversation to serialize yet");
    return stateOf(this.#id, this.#phase, this.#base, this.#sorted());
  }

  /** Stops listening (every subscription ends) and keeps what is shown; the server's runs go on. attach() listens again. */
  detach(): void {
    if (!this.#attached) return;
    this.#teardown();
    this.#publish();
  }

  /** Listens again after detach(): reads the conversation and rejoins its live runs after their last seq. */
  attach(): void {
    if (this.#closed || this.#attached) return;
    if (this.#id) this.#attach();
    else this.#attachEmpty();
    this.#publish();
  }

  /**
   * Shows `count` more of the thread's older stored messages (default: a
   * page, `pageSize`), before those shown; resolves with how many it added
   * (0 when none is left: `hasOlder` is false). Called before the thread's
   * first read, it waits for that read (`loadingOlder`).
   */
  loadOlder(count: number = this.#window.pageSize ?? Number.POSITIVE_INFINITY): Promise<number> {
    if (this.#closed || !this.#id || !(count > 0)) return Promise.resolve(0);
    return this.#window.older(count, () => this.#publish());
  }

  /** Detaches for good. */
  close(): void {
    this.#teardown();
    this.#closed = true;
    this.#publish();
  }

  /**
   * Sends a user message: a run of this conversation (a new conversation if
   * there is none yet). The message shows at once and is replaced by the
   * thread's own once stored. An attempt that gets no answer is sent again
   * with the same idempotency key, so at most one run starts.
   */
  async submit(message: string, options: SubmitOptions = {}): Promise<Result<{ conversationId: string; runId: string }>> {
    const outgoing: Outgoing = {
      key: options.idempotencyKey ?? newKey(),
      content: message,
      options,
      runId: null,
      state: "sending",
      error: null,
      storedAfter: this.#storedCount(),
    };
    this.#outgoing = [...this.#outgoing, outgoing];
    this.#publish();
    return this.#send(outgoing);
  }

  /** Sends an `unsent` message again, with the idempotency key of its first attempt. */
  async retry(messageId: string): Promise<Result<{ conversationId: string; runId: string }>> {
    const outgoing = this.#outgoing.find((o) => `pending:${o.key}` === messageId && o.state === "unsent");
    if (!outgoing) return { ok: false, error: { code: "NOT_FOUND", message: `no unsent message ${messageId}` } };
    this.#replaceOutgoing(outgoing, { state: "sending", error: null, storedAfter: this.#storedCount() });
    return this.#send(this.#outgoing.find((o) => o.key === outgoing.key)!);
  }

  /** How many messages the thread has as last read: a message sent now is stored after them (null: not read yet). */
  #storedCount(): number | null {
    if (this.#id === null) return 0;
    return this.#base ? this.#base.data.messages.length : null;
  }

  /** Removes an `unsent` message from the snapshot. */
  discard(messageId: string): void {
    this.#outgoing = this.#outgoing.filter((o) => !(`pending:${o.key}` === messageId && o.state === "unsent"));
    this.#publish();
  }

  #send(outgoing: Outgoing): Promise<Result<{ conversationId: string; runId: string }>> {
    return sendMessage(this.#host, outgoing);
  }

  protected override actions(): ActionHost {
    return this.#host;
  }

  /** The run as this store follows it (what it streamed so far, its state), with the conversation; null when it does not hold it. */
  knownRun(runId: string): { live: LiveRun; conversationId: string | null } | null {
    const tracked = this.#runs.get(runId);
    return tracked ? { live: tracked.live, conversationId: this.#id } : null;
  }

  /** Writes the resume point now rather than at the next pause (a page about to unload). */
  flush(): void {
    if (this.#persistTimer) clearTimeout(this.#persistTimer);
    this.#persistTimer = null;
    const tracked = this.#dirty;
    this.#dirty = null;
    if (!tracked || !this.#id || !this.#persistResume || isTerminal(tracked.live.run.status)) return;
    const { live } = tracked;
    writeResume(this.#core.storage, { conversationId: this.#id, runId: live.run.id, lastSeq: live.run.lastSeq, live });
  }

  // ---- following ----

  /** Attached with no conversation yet: only the connection is followed (the first submit attaches the rest). */
  #attachEmpty(): void {
    this.#attached = true;
    this.#followConnection();
  }

  /** A change of the client's connection makes a new snapshot (told at the next scheduled turn). */
  #followConnection(): void {
    if (this.#unconnection) return;
    const gen = this.#gen;
    this.#unconnection = this.#core.transport.connection.subscribe(() => gen === this.#gen && this.#publishSoon());
  }

  #attach(): void {
    const gen = this.#gen;
    this.#attached = true;
    this.#followConnection();
    this.#core.adopt(this);
    this.#unnotice = this.#core.notices({
      notice: (row) => gen === this.#gen && this.#notice(row),
      restarted: () => gen === this.#gen && this.#read(),
    });
    this.#loadResume();
    for (const tracked of this.#runs.values()) if (!isTerminal(tracked.live.run.status)) this.#follow(tracked);
    this.#read();
  }

  #teardown(): void {
    this.flush();
    this.#window.dropWaiting();
    this.#gen++;
    this.#attached = false;
    this.#core.forget(this);
    this.#unnotice?.();
    this.#unnotice = null;
    this.#unconnection?.();
    this.#unconnection = null;
    this.#reads = { busy: false, again: false };
    for (const tracked of this.#runs.values()) {
      tracked.stop?.();
      tracked.stop = null;
      if (tracked.poll) clearTimeout(tracked.poll);
      tracked.poll = null;
      tracked.refilling = false;
    }
  }

  #newTracked(live: LiveRun): Tracked {
    return { live, order: ++this.#order, endTick: null, stop: null, poll: null, refilling: false, refillAgain: false, recorded: live.run.kind !== null };
  }

  /** The run's entry, made if new; a record (a read, a mutation's answer) updates what its events have not said. */
  #track(runId: string, record?: RunledgerRunFragment): Tracked {
    let tracked = this.#runs.get(runId);
    if (!tracked) {
      tracked = this.#newTracked(liveRun(emptyRun(runId, record?.status)));
      this.#runs.set(runId, tracked);
    }
    if (record) {
      tracked.live = { ...tracked.live, run: withRecord(tracked.live.run, record) };
      tracked.recorded = true;
      this.#pollQueue(tracked);
    }
    return tracked;
  }

  /** A mutation's answer: a run it says ended is shown from the next read, whether or not its terminal event comes. */
  #record(record: RunledgerRunFragment): Tracked {
    const tracked = this.#track(record.id, record);
    if (isTerminal(record.status) && tracked.endTick === null) {
      tracked.endTick = ++this.#tick;
      this.#read();
    }
    this.#publish();
    return tracked;
  }

  /** Follows the run's events from its last seq, until its terminal event. */
  #follow(tracked: Tracked): void {
    const runId = tracked.live.run.id;
    if (tracked.stop || !this.#attached || (isTerminal(tracked.live.run.status) && tracked.endTick !== null)) return;
    const gen = this.#gen;
    if (!tracked.recorded) void this.#readRecord(tracked);
    tracked.stop = followRun(this.#core.transport, runId, {
      document: RUN_EVENTS,
      lastSeq: () => tracked.live.run.lastSeq,
      wanted: () => gen === this.#gen && tracked.endTick === null,
      event: (event) => {
        if (gen === this.#gen) this.#apply(tracked, event);
      },
      end: (end) => {
        // The run is gone (its conversation deleted), or the server keeps refusing: say so, read what is stored.
        if (gen !== this.#gen || end.reason !== "refused" || tracked.endTick !== null) return;
        tracked.stop = null;
        this.#error = end.error;
        this.#read();
        this.#publishSoon();
      },
    });
  }

  #apply(tracked: Tracked, event: RunEvent): void {
    const before = tracked.live;
    const after = applyEvent(before, event);
    if (after === before) return;
    tracked.live = after;
    for (const listener of [...this.#eventListeners]) listener(event);
    const run = after.run;
    if (event.__typename === "RunStatusEvent" && isTerminal(run.status)) {
      tracked.endTick = ++this.#tick;
      tracked.stop?.();
      tracked.stop = null;
      if (tracked.poll) clearTimeout(tracked.poll);
      tracked.poll = null;
      if (this.#dirty === tracked) this.#dirty = null;
      if (this.#id) clearResume(this.#core.storage, this.#id, run.id);
      // What a gap cut into is read back from what the run stored, now that it is final.
      if (run.gaps.length > 0) void this.#refill(tracked);
      this.#read();
    } else {
      this.#persist(tracked);
      if (run.gaps.length > before.run.gaps.length) void this.#refill(tracked);
      if (event.__typename === "RunStatusEvent") this.#pollQueue(tracked);
      // Its first checkpoint holds its input: the read gives the user message its stored id.
      if (event.__typename === "CheckpointEvent" && after.checkpoints === 1) this.#read();
    }
    this.#publishSoon();
  }

  #persist(tracked: Tracked): void {
    if (!this.#id) return;
    this.#dirty = tracked;
    if (this.#persistTimer === null) this.#persistTimer = setTimeout(() => this.flush(), this.#core.persistMs);
  }

  /** Reads the run's stored record in place of events it missed (a gap); run-refill.ts is loaded on the first. */
  #refill(tracked: Tracked): Promise<void> {
    const gen = this.#gen;
    return import("./run-refill.js").then(
      (loaded) => loaded.refillRun(this.#records, tracked, gen),
      (error: Error) => {
        if (gen === this.#gen) this.#records.failed({ code: "READ_FAILED", message: `could not load the refill of a gap: ${error.message}` });
      },
    );
  }

  #readRecord(tracked: Tracked): Promise<void> {
    return readRunRecord(this.#records, tracked);
  }

  #pollQueue(tracked: Tracked): void {
    pollQueue(this.#records, tracked);
  }

  #notice(row: Notice): void {
    if (row.id !== this.#id) return;
    if (row.deleted) {
      this.#phase = "missing";
      this.#publishSoon();
      return;
    }
    for (const run of [row.activeRun, row.latestRun]) {
      // A run started anywhere else: followed from its first event, even one that ended before
      // the notice was read (its events are replayed); before the first read, one already ended is history,
      // and so is one the store let go once a read showed its outcome (a notice read before that arrives late).
      if (!run || this.#runs.has(run.id) || this.#past.has(run.id) || (isTerminal(run.status) && this.#phase !== "ready")) continue;
      this.#follow(this.#track(run.id));
    }
    this.#read();
  }

  /** Reads the conversation; one read at a time, and one more if asked meanwhile (so the last read started after the last change). */
  #read(): void {
    const id = this.#id;
    if (!id || !this.#attached) return;
    const reads = this.#reads;
    if (reads.busy) {
      reads.again = true;
      return;
    }
    reads.busy = true;
    const gen = this.#gen;
    void (async () => {
      try {
        do {
          reads.again = false;
          const tick = ++this.#tick;
          try {
            const data = await this.#core.query(CONVERSATION, { id });
            if (gen !== this.#gen) return;
            // A loadOlder() that waited for this read: its caller reads the outcome next.
            if (this.#applyRead(data.conversation, tick)) this.#publish();
          } catch (error) {
            if (gen !== this.#gen) return;
            this.#error = { code: "READ_FAILED", message: `could not read the conversation: ${(error as Error).message}` };
          }
          this.#publishSoon();
        } while (reads.again && gen === this.#gen);
      } finally {
        reads.busy = false;
      }
    })();
  }

  /** Applies a read; whether a loadOlder() waited for it. */
  #applyRead(data: ConversationData | null, tick: number): boolean {
    this.#error = null;
    if (!data) {
      this.#phase = "missing";
      this.#base = null;
      return this.#window.fit(0);
    }
    this.#phase = "ready";
    this.#base = { data, tick };
    const waited = this.#window.fit(data.messages.length);
    for (const record of [data.activeRun, data.latestRun]) {
      if (!record) continue;
      const known = this.#runs.has(record.id);
      const tracked = this.#track(record.id, record);
      if (!known && isTerminal(record.status)) tracked.endTick = tick - 1;
      if (!isTerminal(tracked.live.run.status)) this.#follow(tracked);
    }
    // Runs this read shows the outcome of: their messages are in it now. The newest stays, for `run`.
    const reflected = [...this.#runs.values()].filter((t) => t.endTick !== null && t.endTick < tick);
    const newest = this.#sorted().at(-1);
    for (const t of reflected) {
      this.#outgoing = this.#outgoing.filter((o) => o.runId !== t.live.run.id);
      if (t !== newest && t.live.run.id !== data.latestRun?.id) {
        this.#runs.delete(t.live.run.id);
        this.#past.set(t.live.run.id, { run: t.live.run, order: t.order });
      }
    }
    return waited;
  }

  // ---- the snapshot ----

  #sorted(): Tracked[] {
    return sortedRuns(this.#runs);
  }

  /** Tells the listeners now, with every change made so far (an action's outcome, which its caller reads next). */
  #publish(): void {
    this.#pending = false;
    this.#value.set(this.#derive());
  }

  /** Tells the listeners at the client's next scheduled turn (an animation frame by default), with every change made by then. */
  #publishSoon(): void {
    this.#pending = true;
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#core.schedule(() => {
      this.#scheduled = false;
      if (this.#pending) this.#publish();
    });
  }

  #derive(): ConversationSnapshot {
    return this.#builder.build({
      conversationId: this.#id,
      phase: this.#phase,
      base: this.#base,
      runs: this.#runs,
      past: this.#past,
      outgoing: this.#outgoing,
      connection: this.#core.transport.connection.getSnapshot(),
      attached: this.#attached,
      error: this.#error,
      hidden: this.#window.hidden,
      loadingOlder: this.#window.loading,
    });
  }

  #replaceOutgoing(outgoing: Outgoing, patch: Partial<Outgoing>): void {
    this.#outgoing = this.#outgoing.map((o) => (o.key === outgoing.key ? { ...o, ...patch } : o));
  }
}
