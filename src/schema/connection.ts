// Relay connections over storage pages: first/after/last/before become a
// PageQuery (src/storage/page.ts) and the rows come back as edges. Cursors are
// the row's id in the encoding earlier versions used (Pothos's cursor chunk
// under a "GPC:" tag), so a cursor a client kept still works.
import { decodeBase64, decodeCursorChunk, encodeBase64, encodeCursorChunk, PothosValidationError } from "@pothos/core";
import type { PageQuery } from "../storage/page.ts";

export const PAGE_SIZE_MAX = 100;
export const PAGE_SIZE_DEFAULT = 20;

export interface ConnectionArgs {
  first?: number | null;
  last?: number | null;
  after?: string | null;
  before?: string | null;
}

export function encodeCursor(id: string): string {
  return encodeBase64(`GPC:${encodeCursorChunk(id)}`);
}

function decodeCursor(cursor: string): string {
  try {
    const decoded = decodeBase64(cursor);
    if (!decoded.startsWith("GPC:")) throw new Error("not a cursor");
    const id = decodeCursorChunk(decoded.slice(4));
    if (typeof id !== "string") throw new Error("not an id cursor");
    return id;
  } catch {
    throw new PothosValidationError(`Invalid cursor: ${cursor}`);
  }
}

/** The page to read for Relay arguments; one more row than asked is read, to tell whether another page exists. */
export function pageQuery(args: ConnectionArgs): PageQuery {
  const { before, after, first, last } = args;
  if (first != null && first < 0) throw new PothosValidationError('Argument "first" must be a non-negative integer');
  if (last != null && last < 0) throw new PothosValidationError('Argument "last" must be a non-negative integer');
  if (before && after) throw new PothosValidationError('Arguments "before" and "after" are not supported at the same time');
  if (before != null && first != null) throw new PothosValidationError('Arguments "before" and "first" are not supported at the same time');
  if (after != null && last != null) throw new PothosValidationError('Arguments "after" and "last" are not supported at the same time');
  const cursor = before ?? after;
  const size = Math.min(first ?? last ?? PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX) + 1;
  const take = before != null || last != null ? -size : size;
  return cursor == null ? { take, skip: 0 } : { cursor: decodeCursor(cursor), take, skip: 1 };
}

export interface Connection<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: { startCursor: string | null; endCursor: string | null; hasPreviousPage: boolean; hasNextPage: boolean };
}

/** The rows of a pageQuery() read, as a connection. */
export function toConnection<T extends { id: string }>(rows: T[], args: ConnectionArgs, query: PageQuery): Connection<T> {
  const full = rows.length === Math.abs(query.take);
  const backward = args.before != null || args.last != null;
  const nodes = full ? rows.slice(query.take < 0 ? 1 : 0, query.take < 0 ? rows.length : -1) : rows;
  const edges = nodes.map((node) => ({ cursor: encodeCursor(node.id), node }));
  return {
    edges,
    pageInfo: {
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
      hasPreviousPage: args.after != null ? true : backward ? full : false,
      hasNextPage: args.before != null ? true : args.last != null ? false : full,
    },
  };
}
