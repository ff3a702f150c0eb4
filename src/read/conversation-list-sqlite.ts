// The conversation list on the embedded SQLite file, with statements prepared
// once on a read-only connection of its own. Prisma's engine compiles every
// query anew (about 1.5 ms of CPU for a findMany); these take a tenth of that.
import { openSqlite, type SqliteDatabase } from "../db/sqlite.ts";
import type { ConversationRecord } from "../runs/store.ts";
import { toConversationRecord, type ConversationRow as Row } from "../db/rows.ts";
import type { ConversationListReadModel, ConversationPageQuery } from "./conversation-list.ts";

const COLUMNS = "c.id, c.title, c.created_at, c.updated_at, c.message_count";
// The cursor row's sort key; a cursor that names no row matches nothing. Compared as
// a row value, so the (updated_at, id) index seeks to the cursor rather than scanning up to it.
const FROM_CURSOR = "FROM conversations c, (SELECT updated_at AS u, id AS i FROM conversations WHERE id = ?) k";

export class SqliteConversationListReadModel implements ConversationListReadModel {
  static open(databasePath: string): SqliteConversationListReadModel {
    return new SqliteConversationListReadModel(openSqlite(databasePath, { readonly: true }));
  }

  readonly #db: SqliteDatabase;
  readonly #statements;

  /** The statements' SQL, for query plan checks. */
  get statementSql(): Record<"forward" | "backward" | "forwardFrom" | "backwardFrom", string> {
    const s = this.#statements;
    return { forward: s.forward.source, backward: s.backward.source, forwardFrom: s.forwardFrom.source, backwardFrom: s.backwardFrom.source };
  }

  constructor(db: SqliteDatabase) {
    this.#db = db;
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
    };
  }

  async page({ cursor, skip, take }: ConversationPageQuery): Promise<ConversationRecord[]> {
    if (take === 0) return [];
    const s = this.#statements;
    const limit = Math.abs(take);
    const rows =
      take > 0
        ? cursor
          ? s.forwardFrom.all(cursor.id, limit, skip)
          : s.forward.all(limit, skip)
        : cursor
          ? s.backwardFrom.all(cursor.id, limit, skip)
          : s.backward.all(limit, skip);
    // Read backwards from the end; the page itself is in list order.
    if (take < 0) rows.reverse();
    return rows.map(toConversationRecord);
  }

  async count(): Promise<number> {
    return this.#statements.count.get()!.n;
  }

  close(): void {
    this.#db.close();
  }
}
