// The conversation list on PostgreSQL: named statements, and a row-value
// comparison from the cursor row so the (updated_at, id) index seeks to it.
import type { ConversationRecord } from "../../domain/records.ts";
import type { PostgresPool } from "../postgres/database.ts";
import { toConversationRecord, type ConversationRow } from "../postgres/rows.ts";
import type { PageQuery } from "../page.ts";
import type { ConversationList } from "./types.ts";

const COLUMNS = "c.id, c.title, c.created_at, c.updated_at, c.message_count, c.agent, c.forked_from_conversation_id, c.forked_from_checkpoint_id";
const FROM_CURSOR = "FROM conversations c, (SELECT updated_at AS u, id AS i FROM conversations WHERE id = $3) k";

const SQL = {
  forward: `SELECT ${COLUMNS} FROM conversations c ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 OFFSET $2`,
  backward: `SELECT ${COLUMNS} FROM conversations c ORDER BY c.updated_at ASC, c.id ASC LIMIT $1 OFFSET $2`,
  forwardFrom: `SELECT ${COLUMNS} ${FROM_CURSOR} WHERE (c.updated_at, c.id) <= (k.u, k.i) ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 OFFSET $2`,
  backwardFrom: `SELECT ${COLUMNS} ${FROM_CURSOR} WHERE (c.updated_at, c.id) >= (k.u, k.i) ORDER BY c.updated_at ASC, c.id ASC LIMIT $1 OFFSET $2`,
  count: `SELECT count(*)::int AS n FROM conversations`,
} as const;

export class PostgresConversationList implements ConversationList {
  constructor(private readonly pool: PostgresPool) {}

  async page({ cursor, skip, take }: PageQuery): Promise<ConversationRecord[]> {
    if (take === 0) return [];
    const name = take > 0 ? (cursor !== undefined ? "forwardFrom" : "forward") : cursor !== undefined ? "backwardFrom" : "backward";
    const values: unknown[] = [Math.abs(take), skip];
    if (cursor !== undefined) values.push(cursor);
    const { rows } = await this.pool.query<ConversationRow>({ name: `runledger_list_${name}`, text: SQL[name], values });
    // Read backwards from the end; the page itself is in list order.
    if (take < 0) rows.reverse();
    return rows.map(toConversationRecord);
  }

  async count(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>({ name: "runledger_list_count", text: SQL.count });
    return rows[0]!.n;
  }
}
