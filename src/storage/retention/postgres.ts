// Retention on PostgreSQL: each prune is one short transaction. A checkpoint
// batch locks its conversation's row first (a start updates that row, so a run
// cannot start on the thread mid-batch) and looks again under the lock. The
// channel values PostgresSaver keeps apart (checkpoint_blobs, shared between
// checkpoints by version) go once no remaining checkpoint of the thread uses them.
import { NotFoundError } from "../../domain/errors.ts";
import type { ConversationRecord } from "../../domain/records.ts";
import { inTransaction, type PostgresClient, type PostgresPool } from "../postgres/database.ts";
import { CONVERSATION_COLUMNS, toConversationRecord, type ConversationRow } from "../postgres/rows.ts";
import { countAgedSql, expiredSql, prunableSql, pruneAgedSql, threadsOverKeepSql, type Statement } from "./sql.ts";
import type { AgedTable, ExpiryPolicy, RetentionStore } from "./types.ts";

/**
 * The channel values ($2 channels, $3 versions) the deleted checkpoints used that
 * no remaining root checkpoint of the thread uses: the remaining ones' versions
 * are read once per batch (a hash set), never once per value.
 */
const UNUSED_BLOBS = `DELETE FROM checkpoint_blobs b USING (
    SELECT DISTINCT g.channel, g.version FROM unnest($2::text[], $3::text[]) AS g(channel, version)
    EXCEPT SELECT v.key, v.value FROM checkpoints c, jsonb_each_text(c.checkpoint -> 'channel_versions') v WHERE c.thread_id = $1 AND c.checkpoint_ns = ''
  ) u
  WHERE b.thread_id = $1 AND b.checkpoint_ns = '' AND b.channel = u.channel AND b.version = u.version`;

export class PostgresRetentionStore implements RetentionStore {
  constructor(private readonly pool: PostgresPool) {}

  async #rows<R>(client: PostgresPool | PostgresClient, { text, values }: Statement): Promise<R[]> {
    return (await client.query(text, values)).rows as R[];
  }

  async setExpiry(conversationId: string, expiresAt: Date | null): Promise<ConversationRecord> {
    const [row] = await this.#rows<ConversationRow>(this.pool, {
      text: `UPDATE conversations SET expires_at = $1 WHERE id = $2 RETURNING ${CONVERSATION_COLUMNS}`,
      values: [expiresAt, conversationId],
    });
    if (!row) throw new NotFoundError("Conversation", conversationId);
    return toConversationRecord(row);
  }

  async expiredConversations(policy: ExpiryPolicy, now: Date, limit: number): Promise<string[]> {
    return (
      await this.#rows<{ id: string }>(
        this.pool,
        expiredSql("postgres", policy, now, limit, (d) => d),
      )
    ).map((r) => r.id);
  }

  async threadsOverKeep(keep: number, after: string | null, limit: number): Promise<string[]> {
    return (await this.#rows<{ thread_id: string }>(this.pool, threadsOverKeepSql("postgres", keep, after, limit))).map((r) => r.thread_id);
  }

  async prunableCheckpoints(threadId: string, keep: number, limit: number): Promise<string[]> {
    return (await this.#rows<{ id: string }>(this.pool, prunableSql("postgres", threadId, keep, limit))).map((r) => r.id);
  }

  pruneCheckpoints(threadId: string, keep: number, limit: number): Promise<Record<string, number>> {
    return inTransaction(this.pool, async (client) => {
      await client.query(`SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, [threadId]);
      const ids = (await this.#rows<{ id: string }>(client, prunableSql("postgres", threadId, keep, limit))).map((r) => r.id);
      if (ids.length === 0) return { checkpoints: 0, checkpoint_writes: 0, checkpoint_blobs: 0 };
      const inList = `thread_id = $1 AND checkpoint_ns = '' AND checkpoint_id = ANY($2)`;
      const writes = await client.query(`DELETE FROM checkpoint_writes WHERE ${inList}`, [threadId, ids]);
      const checkpoints = await client.query<{ versions: Record<string, unknown> | null }>(
        `DELETE FROM checkpoints WHERE ${inList} RETURNING checkpoint -> 'channel_versions' AS versions`,
        [threadId, ids],
      );
      const channels: string[] = [];
      const versions: string[] = [];
      for (const row of checkpoints.rows) {
        for (const [channel, version] of Object.entries(row.versions ?? {})) {
          channels.push(channel);
          versions.push(String(version));
        }
      }
      const blobs = await client.query(UNUSED_BLOBS, [threadId, channels, versions]);
      return { checkpoints: checkpoints.rowCount ?? 0, checkpoint_writes: writes.rowCount ?? 0, checkpoint_blobs: blobs.rowCount ?? 0 };
    });
  }

  async countAged(table: AgedTable, before: Date): Promise<number> {
    return Number((await this.#rows<{ n: string }>(this.pool, countAgedSql("postgres", table, before)))[0]!.n);
  }

  async pruneAged(table: AgedTable, before: Date, limit: number): Promise<number> {
    const { text, values } = pruneAgedSql("postgres", table, before, limit);
    return (await this.pool.query(text, values)).rowCount ?? 0;
  }

  async acquireLease(name: string, holder: string, now: Date, ttlMs: number): Promise<boolean> {
    const taken = await this.pool.query(
      `INSERT INTO retention_leases (name, holder, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE retention_leases.holder = excluded.holder OR retention_leases.expires_at <= $4 RETURNING holder`,
      [name, holder, new Date(now.getTime() + ttlMs), now],
    );
    return (taken.rowCount ?? 0) > 0;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.pool.query(`DELETE FROM retention_leases WHERE name = $1 AND holder = $2`, [name, holder]);
  }

  async reclaimSpace(): Promise<number> {
    return 0;
  }
}
