// The conversation list on the SQLite file: statements prepared once on the
// reader connection. The (updated_at, id) index lets a page seek to its cursor
// and read in order, without a sort.
import type { ConversationRecord } from "../../domain/records.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { toConversationRecord, type ConversationRow as Row } from "../sqlite/rows.ts";
import type { PageQuery } from "../page.ts";
import type { ConversationList, ListFilter } from "./types.ts";

/** Named parameters of one owner's page (`cursor` is used only by the statements from a cursor). */
type OwnedParams = { owner: string; limit: number; skip: number; cursor: string | null };

const COLUMNS =
  "c.id, c.title, c.created_at, c.updated_at, c.message_count, c.agent, c.forked_from_conversation_id, c.forked_from_checkpoint_id, c.owner, c.expires_at";
// The cursor row's sort key; a cursor that names no row matches nothing. Compared as
// a row value, so the (updated_at, id) index seeks to the cursor rather than scanning up to it.
const FROM_CURSOR = "FROM conversations c, (SELECT updated_at AS u, id AS i FROM conversations WHERE id = ?) k";
// One owner's list (the (owner, updated_at, id) index serves it); a cursor of another owner's matches nothing.
const FROM_OWNED_CURSOR = "FROM conversations c, (SELECT updated_at AS u, id AS i FROM conversations WHERE id = @cursor AND owner = @owner) k";

export class SqliteConversationList implements ConversationList {
  readonly #statements;

  /** The statements' SQL, for query plan checks. */
  get statementSql(): Record<"forward" | "backward" | "forwardFrom" | "backwardFrom", string> {
    const s = this.#statements;
    return { forward: s.forward.source, backward: s.backward.source, forwardFrom: s.forwardFrom.source, backwardFrom: s.backwardFrom.source };
  }

  /** `db`: a connection to the migrated file (the reader). */
  constructor(db: SqliteDatabase) {
    this.#statements = {
      forward: db.prepare<[number, number], Row>(`SELECT ${COLUMNS} FROM conversations c ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?`),
      backward: db.prepare<[number, number], Row>(`SELECT ${COLUMNS} FROM conversations c ORDER BY c.updated_at ASC, c.id ASC LIMIT ? OFFSET ?`),
      forwardFrom: db.prepare<[string, number, number], Row>(
        `SELECT ${COLUMNS} ${FROM_CURSOR} WHERE (c.updated_at, c.id) <= (k.u, k.i) ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?`,
      ),
      backwardFrom: db.prepare<[string, number, number], Row>(
        `SELECT ${COLUMNS} ${FROM_CURSOR} WHERE (c.updated_at, c.id) >= (k.u, k.i) ORDER BY c.updated_at ASC, c.id ASC LIMIT ? OFFSET ?`,
      ),
      count: db.prepare<[], { n: number }>("SELECT count(*) AS n FROM conversations"),
      ownedForward: db.prepare<OwnedParams, Row>(
        `SELECT ${COLUMNS} FROM conversations c WHERE c.owner = @owner ORDER BY c.updated_at DESC, c.id DESC LIMIT @limit OFFSET @skip`,
      ),
      ownedBackward: db.prepare<OwnedParams, Row>(
        `SELECT ${COLUMNS} FROM conversations c WHERE c.owner = @owner ORDER BY c.updated_at ASC, c.id ASC LIMIT @limit OFFSET @skip`,
      ),
      ownedForwardFrom: db.prepare<OwnedParams, Row>(
        `SELECT ${COLUMNS} ${FROM_OWNED_CURSOR} WHERE c.owner = @owner AND (c.updated_at, c.id) <= (k.u, k.i) ORDER BY c.updated_at DESC, c.id DESC LIMIT @limit OFFSET @skip`,
      ),
      ownedBackwardFrom: db.prepare<OwnedParams, Row>(
        `SELECT ${COLUMNS} ${FROM_OWNED_CURSOR} WHERE c.owner = @owner AND (c.updated_at, c.id) >= (k.u, k.i) ORDER BY c.updated_at ASC, c.id ASC LIMIT @limit OFFSET @skip`,
      ),
      ownedCount: db.prepare<{ owner: string }, { n: number }>("SELECT count(*) AS n FROM conversations WHERE owner = @owner"),
    };
  }

  async page({ cursor, skip, take }: PageQuery, filter: ListFilter = {}): Promise<ConversationRecord[]> {
    if (take === 0) return [];
    const s = this.#statements;
    const limit = Math.abs(take);
    const owned = filter.owner === undefined ? null : { owner: filter.owner, limit, skip, cursor: cursor ?? null };
    const rows = owned
      ? take > 0
        ? cursor !== undefined
          ? s.ownedForwardFrom.all(owned)
          : s.ownedForward.all(owned)
        : cursor !== undefined
          ? s.ownedBackwardFrom.all(owned)
          : s.ownedBackward.all(owned)
      : take > 0
        ? cursor !== undefined
          ? s.forwardFrom.all(cursor, limit, skip)
          : s.forward.all(limit, skip)
        : cursor !== undefined
          ? s.backwardFrom.all(cursor, limit, skip)
          : s.backward.all(limit, skip);
    // Read backwards from the end; the page itself is in list order.
    if (take < 0) rows.reverse();
    return rows.map(toConversationRecord);
  }

  async count(filter: ListFilter = {}): Promise<number> {
    return filter.owner === undefined ? this.#statements.count.get()!.n : this.#statements.ownedCount.get({ owner: filter.owner })!.n;
  }
}
