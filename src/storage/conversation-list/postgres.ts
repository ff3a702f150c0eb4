// The conversation list on PostgreSQL: named statements, and a row-value
// comparison from the cursor row so the (updated_at, id) index seeks to it.
import type { ConversationRecord } from "../../domain/records.ts";
import type { PostgresPool } from "../postgres/database.ts";
import { toConversationRecord, type ConversationRow } from "../postgres/rows.ts";
import type { PageQuery } from "../page.ts";
import type { ConversationList, ListFilter } from "./types.ts";

const COLUMNS =
  "c.id, c.title, c.created_at, c.updated_at, c.message_count, c.agent, c.forked_from_conversation_id, c.forked_from_checkpoint_id, c.owner, c.expires_at";
const FROM_CURSOR = "FROM conversations c, (SELECT updated_at AS u, id AS i FROM conversations WHERE id = $3) k";
// One owner's list: $4 (or $3 without a cursor) is the owner; the (owner, updated_at, id) index serves it.
const FROM_OWNED_CURSOR = "FROM conversations c, (SELECT updated_at AS u, id AS i FROM conversations WHERE id = $3 AND owner = $4) k";

const SQL = {
  forward: `SELECT ${COLUMNS} FROM conversations c ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 OFFSET $2`,
  backward: `SELECT ${COLUMNS} FROM conversations c ORDER BY c.updated_at ASC, c.id ASC LIMIT $1 OFFSET $2`,
  forwardFrom: `SELECT ${COLUMNS} ${FROM_CURSOR} WHERE (c.updated_at, c.id) <= (k.u, k.i) ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 OFFSET $2`,
  backwardFrom: `SELECT ${COLUMNS} ${FROM_CURSOR} WHERE (c.updated_at, c.id) >= (k.u, k.i) ORDER BY c.updated_at ASC, c.id ASC LIMIT $1 OFFSET $2`,
  count: `SELECT count(*)::int AS n FROM conversations`,
  ownedForward: `SELECT ${COLUMNS} FROM conversations c WHERE c.owner = $3 ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 OFFSET $2`,
  ownedBackward: `SELECT ${COLUMNS} FROM conversations c WHERE c.owner = $3 ORDER BY c.updated_at ASC, c.id ASC LIMIT $1 OFFSET $2`,
  ownedForwardFrom: `SELECT ${COLUMNS} ${FROM_OWNED_CURSOR} WHERE c.owner = $4 AND (c.updated_at, c.id) <= (k.u, k.i) ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 OFFSET $2`,
  ownedBackwardFrom: `SELECT ${COLUMNS} ${FROM_OWNED_CURSOR} WHERE c.owner = $4 AND (c.updated_at, c.id) >= (k.u, k.i) ORDER BY c.updated_at ASC, c.id ASC LIMIT $1 OFFSET $2`,
  ownedCount: `SELECT count(*)::int AS n FROM conversations WHERE owner = $1`,
} as const;

export class PostgresConversationList implements ConversationList {
  constructor(private readonly pool: PostgresPool) {}

  async page({ cursor, skip, take }: PageQuery, filter: ListFilter = {}): Promise<ConversationRecord[]> {
    if (take === 0) return [];
    const plain = take > 0 ? (cursor !== undefined ? "forwardFrom" : "forward") : cursor !== undefined ? "backwardFrom" : "backward";
    const owned = filter.owner !== undefined;
    const name = owned ? (`owned${plain[0]!.toUpperCase()}${plain.slice(1)}` as keyof typeof SQL) : plain;
    const values: unknown[] = [Math.abs(take), skip];
    if (cursor !== undefined) values.push(cursor);
    if (owned) values.push(filter.owner);
    const { rows } = await this.pool.query<ConversationRow>({ name: `runledger_list_${name}`, text: SQL[name], values });
    // Read backwards from the end; the page itself is in list order.
    if (take < 0) rows.reverse();
    return rows.map(toConversationRecord);
  }

  async count(filter: ListFilter = {}): Promise<number> {
    const { rows } =
      filter.owner === undefined
        ? await this.pool.query<{ n: number }>({ name: "runledger_list_count", text: SQL.count })
        : await this.pool.query<{ n: number }>({ name: "runledger_list_ownedCount", text: SQL.ownedCount, values: [filter.owner] });
    return rows[0]!.n;
  }
}
