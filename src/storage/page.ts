// A page of a list in cursor terms, the same for every list a backend serves
// (the conversation list, a conversation's runs). src/schema/connection.ts turns
// Relay's first/after/last/before into it and the rows back into a connection.

/**
 * Ordered by the list's own order: start at the row whose id is `cursor` (an id
 * that names no row of the list gives an empty page), skip `skip` rows, then
 * take `take` rows; a negative `take` takes that many rows up to the cursor (or
 * from the end of the list), still returned in list order.
 */
export interface PageQuery {
  cursor?: string;
  skip: number;
  take: number;
}
