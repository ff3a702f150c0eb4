// The conversation list: pages from the conversations query merged with
// conversationsChanged notices. Newest updatedAt first; a notice upserts its
// row and re-sorts, a deletion drops it for good. A list of one owner's
// conversations (an admin's filter) leaves other owners' notices out.
import type { ConversationRow } from "../api/types.ts";

export interface ListState {
  /** Only this owner's conversations (conversations(owner:)); null: every one the caller may see. */
  owner: string | null;
  /** Newest updatedAt first, then id (the server's order). */
  rows: ConversationRow[];
  /** Deleted ids: a page read before the deletion must not bring one back. */
  deleted: ReadonlySet<string>;
  hasMore: boolean;
  endCursor: string | null;
}

export function emptyListOf(owner: string | null): ListState {
  return { owner, rows: [], deleted: new Set(), hasMore: false, endCursor: null };
}

export const emptyList: ListState = emptyListOf(null);

function byRecency(a: ConversationRow, b: ConversationRow): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt < b.updatedAt ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The row to keep of two versions of one conversation: the later updatedAt; on a tie, the one that arrived last. */
function newer(existing: ConversationRow | undefined, incoming: ConversationRow): ConversationRow {
  return existing && existing.updatedAt > incoming.updatedAt ? existing : incoming;
}

/** Applies a conversationsChanged notice. */
export function applyNotice(state: ListState, row: ConversationRow): ListState {
  if (state.owner !== null && row.owner !== state.owner) return state;
  if (row.deleted) {
    const deleted = new Set(state.deleted).add(row.id);
    return { ...state, rows: state.rows.filter((r) => r.id !== row.id), deleted };
  }
  if (state.deleted.has(row.id)) return state;
  const existing = state.rows.find((r) => r.id === row.id);
  const kept = newer(existing, row);
  if (kept === existing) return state;
  const rows = state.rows.filter((r) => r.id !== row.id);
  rows.push(kept);
  rows.sort(byRecency);
  return { ...state, rows };
}

export interface Page {
  rows: ConversationRow[];
  hasNextPage: boolean;
  endCursor: string | null;
}

/**
 * Replaces the list with a fresh first page (on load, and after a reconnection,
 * when notices may have been missed). Rows noticed while the page was being
 * read are kept, the newer version of each.
 */
export function replaceWithFirstPage(state: ListState, page: Page, noticedMeanwhile: ReadonlySet<string>): ListState {
  const byId = new Map<string, ConversationRow>();
  for (const row of page.rows) if (!state.deleted.has(row.id)) byId.set(row.id, row);
  for (const row of state.rows) {
    if (!noticedMeanwhile.has(row.id)) continue;
    const fromPage = byId.get(row.id);
    // The page may have been read before the notice: the later updatedAt wins, the notice on a tie.
    byId.set(row.id, fromPage && fromPage.updatedAt > row.updatedAt ? fromPage : row);
  }
  return { ...state, rows: [...byId.values()].sort(byRecency), hasMore: page.hasNextPage, endCursor: page.endCursor };
}

/** Adds the next page (Load more); rows already listed keep their newer version. */
export function appendPage(state: ListState, page: Page): ListState {
  let next: ListState = state;
  for (const row of page.rows) next = applyNotice(next, { ...row, deleted: false });
  return { ...next, hasMore: page.hasNextPage, endCursor: page.endCursor };
}
