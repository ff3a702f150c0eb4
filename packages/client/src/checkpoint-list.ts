// A conversation's checkpoints, kept current: the newest page first, older
// pages on loadOlder(), through the API's own pagination of
// Conversation.checkpoints (oldest first, cursors that are checkpoint ids, at
// most 100 a page). The list is read again whenever conversationsChanged
// tells of the conversation (a run started or ended, an edit, a fork made
// from it): the newest page, joined to what is listed by the checkpoints
// between them, so a run that ends adds its checkpoints, and ones a ROLLBACK
// dropped leave the list.
import type { RunledgerClient } from "./client.js";
import { coreOf } from "./core.js";
import type { ActionError, ClientCore } from "./core.js";
import { CHECKPOINTS } from "./extra-documents.js";
import type { RunledgerCheckpointFragment, RunledgerConversationsChangedSubscription } from "./generated.js";
import { Value, type Readable } from "./observable.js";

/** One checkpoint as a list shows it: where it is in the thread, the message it ends on, the run that wrote it. */
export type CheckpointRow = RunledgerCheckpointFragment;

type Notice = RunledgerConversationsChangedSubscription["conversationsChanged"];

export interface CheckpointListSnapshot {
  /** The conversation listed; null lists nothing (phase `idle`). */
  conversationId: string | null;
  /**
   * - `idle`: no conversation;
   * - `loading`: the newest page is being read;
   * - `ready`;
   * - `missing`: no such conversation (deleted, or not the caller's);
   * - `error`: the first page could not be read (`error` says why; refresh() tries again).
   */
  phase: "idle" | "loading" | "ready" | "missing" | "error";
  /** Oldest first, as the API lists them: the newest page, and the older pages loadOlder() read. */
  checkpoints: readonly CheckpointRow[];
  /** Older checkpoints wait: loadOlder() reads the previous page. */
  hasOlder: boolean;
  /** loadOlder() is reading. */
  loadingOlder: boolean;
  /** Listening for changes; false after detach(). */
  attached: boolean;
  /** The last read that failed (null once one succeeds). */
  error: ActionError | null;
}

export interface CheckpointListOptions {
  /** Checkpoints per page (default 20, at most 100, the API's limit). */
  pageSize?: number;
  /** Start listening at once (the default); false: nothing is sent until attach(). */
  attach?: boolean;
}

/** The API's largest page. */
const MOST = 100;

/**
 * A conversation's checkpoints (to fork from, or to edit at), newest page
 * first, kept current as its runs end. close() it when done.
 */
export function createCheckpointList(client: RunledgerClient, conversationId: string | null, options: CheckpointListOptions = {}): CheckpointListStore {
  return new CheckpointListStore(coreOf(client), conversationId, options);
}

export class CheckpointListStore implements Readable<CheckpointListSnapshot> {
  readonly #core: ClientCore;
  readonly #id: string | null;
  readonly #pageSize: number;
  readonly #value: Value<CheckpointListSnapshot>;
  #rows: CheckpointRow[] = [];
  #phase: CheckpointListSnapshot["phase"];
  #hasOlder = false;
  #loadingOlder = false;
  #error: ActionError | null = null;
  #attached = false;
  #closed = false;
  /** Bumped on every detach: an answer to an earlier attachment changes nothing. */
  #gen = 0;
  /** Bumped when the list's oldest row changes under a read of older ones: that page no longer joins the list. */
  #epoch = 0;
  #unnotice: (() => void) | null = null;
  /** The reads of the newest page under way (one at a time, and one more if asked meanwhile). */
  #reading: { gen: number; again: boolean; done: Promise<void> } | null = null;

  /** Use createCheckpointList(client, conversationId, options). */
  constructor(core: ClientCore, conversationId: string | null, options: CheckpointListOptions = {}) {
    this.#core = core;
    this.#id = conversationId;
    this.#pageSize = Math.min(MOST, Math.max(1, options.pageSize ?? 20));
    this.#phase = conversationId ? "loading" : "idle";
    this.#value = new Value(this.#derive());
    if (options.attach ?? true) this.attach();
  }

  getSnapshot = (): CheckpointListSnapshot => this.#value.getSnapshot();
  subscribe = (listener: () => void): (() => void) => this.#value.subscribe(listener);

  /** Listens to the conversation's notices and reads the newest page. */
  attach(): void {
    if (this.#closed || this.#attached) return;
    this.#attached = true;
    this.#publish();
    if (!this.#id) return;
    this.#core.adopt(this);
    const gen = this.#gen;
    this.#unnotice = this.#core.notices({
      notice: (row) => gen === this.#gen && this.#notice(row),
      // Notices sent while the subscription was down are lost: read again.
      restarted: () => gen === this.#gen && void this.refresh(),
    });
    void this.refresh();
  }

  /** Stops listening; the rows stay as they are. */
  detach(): void {
    if (!this.#attached) return;
    this.#gen++;
    this.#attached = false;
    this.#core.forget(this);
    this.#unnotice?.();
    this.#unnotice = null;
    this.#reading = null;
    this.#loadingOlder = false;
    this.#publish();
  }

  close(): void {
    this.detach();
    this.#closed = true;
  }

  /** Nothing to write: a list keeps no resume point. */
  flush(): void {}

  /**
   * Reads the newest page again and joins it to what is listed (the
   * checkpoints between them are read too, or, when more than a page of them
   * came, the list starts again from the newest page). Resolves once a read
   * that started after the call is applied.
   */
  refresh(): Promise<void> {
    if (!this.#attached || !this.#id) return Promise.resolve();
    const reading = this.#reading;
    if (reading && reading.gen === this.#gen) {
      reading.again = true;
      return reading.done;
    }
    const gen = this.#gen;
    const next = { gen, again: true, done: Promise.resolve() };
    next.done = (async () => {
      try {
        while (next.again && gen === this.#gen) {
          next.again = false;
          await this.#readNewest(gen);
        }
      } finally {
        if (this.#reading === next) this.#reading = null;
      }
    })();
    this.#reading = next;
    return next.done;
  }

  /** Reads the page before the oldest listed; resolves with how many checkpoints it added. */
  async loadOlder(): Promise<number> {
    const first = this.#rows[0];
    if (!this.#attached || !this.#id || !first || !this.#hasOlder || this.#loadingOlder || this.#phase !== "ready") return 0;
    const gen = this.#gen;
    const epoch = this.#epoch;
    this.#loadingOlder = true;
    this.#publish();
    let added = 0;
    try {
      const data = await this.#core.query(CHECKPOINTS, { id: this.#id, last: this.#pageSize, before: first.id });
      if (gen !== this.#gen || epoch !== this.#epoch) return 0;
      if (!data.conversation) {
        this.#missing();
        return 0;
      }
      const oldest = this.#rows[0]?.id;
      const older = data.conversation.checkpoints.edges.map((e) => e.node).filter((c) => oldest === undefined || c.id < oldest);
      this.#rows = [...older, ...this.#rows];
      this.#hasOlder = data.conversation.checkpoints.pageInfo.hasPreviousPage;
      this.#error = null;
      added = older.length;
    } catch (error) {
      if (gen !== this.#gen) return 0;
      this.#error = { code: "READ_FAILED", message: `could not read older checkpoints: ${(error as Error).message}` };
    } finally {
      if (gen === this.#gen) {
        this.#loadingOlder = false;
        this.#publish();
      }
    }
    return added;
  }

  #notice(notice: Notice): void {
    if (notice.id !== this.#id) return;
    if (notice.deleted) {
      this.#missing();
      this.#publish();
      return;
    }
    void this.refresh();
  }

  #missing(): void {
    this.#phase = "missing";
    this.#rows = [];
    this.#hasOlder = false;
    this.#epoch++;
  }

  async #readNewest(gen: number): Promise<void> {
    const id = this.#id!;
    try {
      const data = await this.#core.query(CHECKPOINTS, { id, last: this.#pageSize });
      if (gen !== this.#gen) return;
      if (!data.conversation) {
        this.#missing();
        this.#error = null;
        this.#publish();
        return;
      }
      const page = data.conversation.checkpoints;
      const newest = page.edges.map((e) => e.node);
      const start = newest[0]?.id;
      let rows: CheckpointRow[];
      let hasOlder = this.#hasOlder;
      // Listed and older than the newest page: kept if the checkpoints between still join them to it.
      const kept = start === undefined ? [] : this.#rows.filter((r) => r.id < start);
      if (start === undefined || !page.pageInfo.hasPreviousPage || kept.length === 0 || this.#phase !== "ready") {
        // The page holds the whole thread (what else was listed is gone), or nothing older was listed.
        rows = newest;
        hasOlder = page.pageInfo.hasPreviousPage;
      } else {
        const between = await this.#core.query(CHECKPOINTS, { id, first: MOST, after: kept.at(-1)!.id, before: start });
        if (gen !== this.#gen) return;
        const joined = between.conversation && !between.conversation.checkpoints.pageInfo.hasNextPage;
        if (joined) {
          // As listed now: a loadOlder() may have added older ones meanwhile.
          const older = this.#rows.filter((r) => r.id < start);
          hasOlder = this.#hasOlder;
          rows = [...older, ...between.conversation!.checkpoints.edges.map((e) => e.node), ...newest];
        } else {
          // More than a page came since: the list starts again from the newest page.
          rows = newest;
          hasOlder = true;
        }
      }
      if (rows[0]?.id !== this.#rows[0]?.id) this.#epoch++;
      this.#rows = this.#shared(rows);
      this.#hasOlder = hasOlder;
      this.#phase = "ready";
      this.#error = null;
    } catch (error) {
      if (gen !== this.#gen) return;
      this.#error = { code: "READ_FAILED", message: `could not read the checkpoints: ${(error as Error).message}` };
      if (this.#phase === "loading") this.#phase = "error";
    }
    this.#publish();
  }

  /** The rows, each checkpoint that shows the same as listed keeping its object (a row memoized on it renders once). */
  #shared(rows: CheckpointRow[]): CheckpointRow[] {
    const listed = new Map(this.#rows.map((r) => [r.id, r]));
    const shared = rows.map((row) => {
      const known = listed.get(row.id);
      return known && JSON.stringify(known) === JSON.stringify(row) ? known : row;
    });
    return shared.length === this.#rows.length && shared.every((r, i) => r === this.#rows[i]) ? this.#rows : shared;
  }

  #derive(): CheckpointListSnapshot {
    return {
      conversationId: this.#id,
      phase: this.#phase,
      checkpoints: this.#rows,
      hasOlder: this.#hasOlder,
      loadingOlder: this.#loadingOlder,
      attached: this.#attached,
      error: this.#error,
    };
  }

  #publish(): void {
    const previous = this.#value.getSnapshot();
    const next = this.#derive();
    if ((Object.keys(next) as (keyof CheckpointListSnapshot)[]).every((key) => Object.is(next[key], previous[key]))) return;
    this.#value.set(next);
  }
}
