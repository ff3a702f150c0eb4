// The conversation list read model: the `conversations` page and its total,
// the API's most frequent read. A backend answers Prisma's cursor-query shape
// (what Pothos's connection helpers produce), so the page, its cursors and its
// edge cases are the same whichever backend serves them; test/conversation-list.spec.ts
// holds every backend to Prisma's own answers.
import type { ConversationRecord } from "../runs/store.ts";

/** One page request in Prisma's cursor terms, ordered newest updatedAt first (then id, descending). */
export interface ConversationPageQuery {
  /** Start at this conversation (included unless skipped); an unknown id gives an empty page. */
  cursor?: { id: string };
  /** Rows skipped from the start (take > 0) or from the end (take < 0). */
  skip: number;
  /** Positive: this many rows from the cursor onward. Negative: this many rows up to the cursor, still in list order. */
  take: number;
}

export interface ConversationListReadModel {
  page(query: ConversationPageQuery): Promise<ConversationRecord[]>;
  count(): Promise<number>;
  close(): void;
}
