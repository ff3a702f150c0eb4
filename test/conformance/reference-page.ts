// What a PageQuery means (src/storage/page.ts), computed over a whole list held
// in memory: the reference every backend's pages are compared with.
import type { PageQuery } from "../../src/storage/page.ts";

export function referencePage<T extends { id: string }>(list: readonly T[], { cursor, skip, take }: PageQuery): T[] {
  if (take === 0) return [];
  let at: number | undefined;
  if (cursor !== undefined) {
    at = list.findIndex((row) => row.id === cursor);
    if (at < 0) return [];
  }
  if (take > 0) {
    const start = (at ?? 0) + skip;
    return list.slice(start, start + take);
  }
  const end = (at === undefined ? list.length : at + 1) - skip;
  return end <= 0 ? [] : list.slice(Math.max(0, end + take), end);
}
