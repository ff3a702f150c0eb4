// The conversation list seam: the `conversations` page and its total, the API's
// most frequent read, ordered newest updatedAt first (then id, descending).
// Backends: sqlite.ts and postgres.ts; test/conformance/conversation-list.ts
// holds every backend to the same pages, cursors and edge cases.
import type { ConversationRecord } from "../../domain/records.ts";
import type { PageQuery } from "../page.ts";

/** Whose conversations: with `owner`, only that principal's (a cursor of another's matches nothing); without, everyone's. */
export interface ListFilter {
  owner?: string;
}

export interface ConversationList {
  page(query: PageQuery, filter?: ListFilter): Promise<ConversationRecord[]>;
  count(filter?: ListFilter): Promise<number>;
}
