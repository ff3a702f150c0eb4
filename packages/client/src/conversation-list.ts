// The caller's conversations, kept live: pages of the conversations query,
// merged with conversationsChanged notices (the client's one subscription,
// shared with its conversation stores). Newest updatedAt first; a notice
// upserts its row and sorts it into place; a deletion drops it for good. The
// server scopes both to the caller: a user lists and hears of their own
// conversations only, an admin of everyone's (or of one owner's, with `owner`).
import type { RunledgerClient } from "./client.js";
import { coreOf } from "./core.js";
import type { ActionError, ClientCore } from "./core.js";
import { CONVERSATIONS } from "./extra-documents.js";
import type { RunledgerConversationRowFragment, RunledgerConversationsChangedSubscription } from "./generated.js";
import { Value, type Readable } from "./observable.js";

/** One conversation as a list shows it. */
export type ConversationRow = RunledgerConversationRowFragment;

type Notice = RunledgerConversationsChangedSubscription["conversationsChanged"];

export interface ConversationListSnapshot {
  /** `loading` until the first page is read; `error` when it could not be (`error` says why; refresh() tries again). */
  phase: "loading" | "ready" | "error";
  /** Newest updatedAt first, then id (the server's order). */
  rows: readonly ConversationRow[];
  /** More pages wait: loadMore() reads the next. */
  hasMore: boolean;
  loadingMore: boolean;
  /** Listening for changes; false after detach(). */
  attached: boolean;
  /** The last read that failed (null once one succeeds). */
  error: ActionError | null;
  /** Conversations deleted while the list listened, listed or not: a view showing one can say it is gone. */
  deleted: ReadonlySet<string>;
}

/** A live list of the caller's conversations: what createConversationList and client.conversations return. */
export interface ConversationList extends Readable<ConversationListSnapshot> {
  /** Listens to notices and reads the first page (what a view does once mounted, unless made attached). */
  attach(): void;
  /** Stops listening; the rows stay as they are. */
  detach(): void;
  /** Stops listening for good. */
  close(): void;
  /** Reads the first page again. */
  refresh(): Promise<void>;
  /** Reads the next page. */
  loadMore(): Promise<void>;
}

export interface ConversationListOptions {
  /** Rows per page (default 30, at most 100). */
  pageSize?: number;
  /** An admin's list of one owner's conversations. A user's list is always their own. */
  owner?: string | null;
  /** Start listening at once (the default); false: nothing is sent until attach(). */
  attach?: boolean;
}

function byRecency(a: ConversationRow, b: ConversationRow): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt < b.updatedAt ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

function rowOf(notice: Notice): ConversationRow {
  const { deleted: _deleted, ...row } = notice;
  return row;
}

/**
 * The caller's conversations, newest first, kept live by conversationsChanged
 * (a user's own; an admin's, everyone's or one `owner`'s). close() it when done.
 */
export function createConversationList(client: RunledgerClient, options: ConversationListOptions = {}): ConversationListStore {
  return new ConversationListStore(coreOf(client), options);
}

export class ConversationListStore implements ConversationList {
  readonly #core: ClientCore;
  readonly #pageSize: number;
  readonly #owner: string | null;
  readonly #value: Value<ConversationListSnapshot>;
  #rows: ConversationRow[] = [];
  /** Deleted ids: a page read before the deletion must not bring one back. A new set on each change (it is in the snapshot). */
  #deleted: ReadonlySet<string> = new Set<string>();
  /** Ids noticed while the first page was being read: their noticed version may be the newer. */
  #noticedDuringRead: Set<string> | null = null;
  #phase: ConversationListSnapshot["phase"] = "loading";
  #hasMore = false;
  #endCursor: string | null = null;
  #loadingMore = false;
  #error: ActionError | null = null;
  #attached = false;
  #closed = false;
  #gen = 0;
  #unnotice: (() => void) | null = null;

  /** Use createConversationList(client, options). */
  constructor(core: ClientCore, options: ConversationListOptions = {}) {
    this.#core = core;
    this.#pageSize = Math.min(100, Math.max(1, options.pageSize ?? 30));
    this.#owner = options.owner ?? null;
    this.#value = new Value(this.#derive());
    if (options.attach ?? true) this.attach();
  }

  getSnapshot = (): ConversationListSnapshot => this.#value.getSnapshot();
  subscribe = (listener: () => void): (() => void) => this.#value.subscribe(listener);

  /** Listens to notices and reads the first page. */
  attach(): void {
    if (this.#closed || this.#attached) return;
    this.#attached = true;
    // The client's dispose() closes it.
    this.#core.adopt(this);
    const gen = this.#gen;
    this.#unnotice = this.#core.notices({
      notice: (row) => gen === this.#gen && this.#notice(row),
      // Notices sent while the subscription was down are lost: the first page is read again.
      restarted: () => gen === this.#gen && void this.refresh(),
    });
    this.#publish();
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
    this.#loadingMore = false;
    this.#publish();
  }

  close(): void {
    this.detach();
    this.#closed = true;
  }

  /** Nothing to write: a list keeps no resume point. */
  flush(): void {}

  /** Reads the first page again, keeping rows noticed meanwhile in their newer version. */
  async refresh(): Promise<void> {
    if (!this.#attached) return;
    const gen = this.#gen;
    const noticed = new Set<string>();
    this.#noticedDuringRead = noticed;
    try {
      const data = await this.#core.query(CONVERSATIONS, { first: this.#pageSize, owner: this.#owner });
      if (gen !== this.#gen) return;
      const byId = new Map<string, ConversationRow>();
      for (const { node } of data.conversations.edges) if (!this.#deleted.has(node.id)) byId.set(node.id, node);
      for (const row of this.#rows) {
        if (!noticed.has(row.id)) continue;
        const fromPage = byId.get(row.id);
        byId.set(row.id, fromPage && fromPage.updatedAt > row.updatedAt ? fromPage : row);
      }
      this.#rows = [...byId.values()].sort(byRecency);
      this.#hasMore = data.conversations.pageInfo.hasNextPage;
      this.#endCursor = data.conversations.pageInfo.endCursor ?? null;
      this.#phase = "ready";
      this.#error = null;
    } catch (error) {
      if (gen !== this.#gen) return;
      this.#error = { code: "READ_FAILED", message: `could not read the conversations: ${(error as Error).message}` };
      if (this.#phase === "loading") this.#phase = "error";
    } finally {
      if (this.#noticedDuringRead === noticed) this.#noticedDuringRead = null;
    }
    this.#publish();
  }

  /** Reads the next page; rows already listed keep their newer version. */
  async loadMore(): Promise<void> {
    if (!this.#attached || !this.#hasMore || this.#loadingMore) return;
    const gen = this.#gen;
    this.#loadingMore = true;
    this.#publish();
    try {
      const data = await this.#core.query(CONVERSATIONS, { first: this.#pageSize, after: this.#endCursor, owner: this.#owner });
      if (gen !== this.#gen) return;
      for (const { node } of data.conversations.edges) this.#upsert(node);
      this.#hasMore = data.conversations.pageInfo.hasNextPage;
      this.#endCursor = data.conversations.pageInfo.endCursor ?? null;
      this.#error = null;
    } catch (error) {
      if (gen !== this.#gen) return;
      this.#error = { code: "READ_FAILED", message: `could not read more conversations: ${(error as Error).message}` };
    } finally {
      if (gen === this.#gen) this.#loadingMore = false;
    }
    this.#publish();
  }

  #notice(notice: Notice): void {
    if (this.#owner !== null && notice.owner !== this.#owner) return;
    this.#noticedDuringRead?.add(notice.id);
    if (notice.deleted) {
      if (this.#deleted.has(notice.id)) return;
      this.#deleted = new Set(this.#deleted).add(notice.id);
      this.#rows = this.#rows.filter((r) => r.id !== notice.id);
    } else if (!this.#upsert(rowOf(notice))) return;
    this.#publish();
  }

  /** Puts the row in its place, unless a newer version of it is listed or it was deleted; whether anything changed. */
  #upsert(row: ConversationRow): boolean {
    if (this.#deleted.has(row.id)) return false;
    const existing = this.#rows.find((r) => r.id === row.id);
    if (existing && existing.updatedAt > row.updatedAt) return false;
    const rows = this.#rows.filter((r) => r.id !== row.id);
    rows.push(row);
    rows.sort(byRecency);
    this.#rows = rows;
    return true;
  }

  #derive(): ConversationListSnapshot {
    return {
      phase: this.#phase,
      rows: this.#rows,
      hasMore: this.#hasMore,
      loadingMore: this.#loadingMore,
      attached: this.#attached,
      error: this.#error,
      deleted: this.#deleted,
    };
  }

  #publish(): void {
    const previous = this.#value.getSnapshot();
    const next = this.#derive();
    if ((Object.keys(next) as (keyof ConversationListSnapshot)[]).every((key) => Object.is(next[key], previous[key]))) return;
    this.#value.set(next);
  }
}
