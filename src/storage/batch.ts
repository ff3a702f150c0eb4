// How a batch reader answers: every key asked for gets an entry (a list, a count,
// a default), in one pass over the rows one statement returned. Shared by every
// backend, so each differs from the others only in SQL.

/** Each key's rows, in row order; keys without rows get []. Rows of keys not asked for are dropped. */
export function groupRows<R, V>(keys: readonly string[], rows: Iterable<R>, keyOf: (row: R) => string, toValue: (row: R) => V): Map<string, V[]> {
  const result = new Map<string, V[]>(keys.map((key) => [key, []]));
  for (const row of rows) result.get(keyOf(row))?.push(toValue(row));
  return result;
}

/** One value per key that has a row (the last one wins); keys without rows are left out. */
export function keyRows<R, V>(rows: Iterable<R>, keyOf: (row: R) => string, toValue: (row: R) => V): Map<string, V> {
  const result = new Map<string, V>();
  for (const row of rows) result.set(keyOf(row), toValue(row));
  return result;
}

/** One value per key: the row's where there is one, else `fallback()`. */
export function valueRows<R, V>(
  keys: readonly string[],
  rows: Iterable<R>,
  keyOf: (row: R) => string,
  toValue: (row: R) => V,
  fallback: () => V,
): Map<string, V> {
  const result = new Map<string, V>(keys.map((key) => [key, fallback()]));
  for (const row of rows) if (result.has(keyOf(row))) result.set(keyOf(row), toValue(row));
  return result;
}
