// Connecting to PostgreSQL: one pool per instance, a transaction helper, and a
// first query that proves the server answers (a bad DATABASE_URL or an
// unreachable server stops start-up with one line naming the variable).
import pg from "pg";
import { ConfigError } from "../../config.ts";

export type PostgresPool = pg.Pool;
export type PostgresClient = pg.PoolClient;

/** Connections one instance keeps at most; LangGraph's saver shares the pool. */
const POOL_SIZE = 10;
/** How long start-up waits for the server before it gives up. */
const CONNECT_TIMEOUT_MS = 5_000;

/** Start-up stops with this message (one line, exit code 2). */
export class DatabaseUnavailableError extends ConfigError {
  override name = "DatabaseUnavailableError";
}

export async function connectPostgres(url: string): Promise<PostgresPool> {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, allowExitOnIdle: false });
  // An idle client that loses its server emits 'error' on the pool; the next query reconnects.
  pool.on("error", () => {});
  try {
    await pool.query("SELECT 1");
  } catch (error) {
    await pool.end().catch(() => {});
    const where = safeTarget(url);
    throw new DatabaseUnavailableError(`DATABASE_URL: PostgreSQL at ${where} cannot be reached: ${(error as Error).message || String(error)}`);
  }
  return pool;
}

/** host:port/database, without credentials, for messages. */
export function safeTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return "the configured server";
  }
}

/** Runs `work` in one transaction on one client; rolls back on any error. */
export async function inTransaction<T>(pool: PostgresPool, work: (client: PostgresClient) => Promise<T>): Promise<T> {
  // PostgreSQL ends one of two transactions that wait on each other (a start and
  // a recovery sweep, say) with a deadlock error; nothing of it was written, so
  // it is run again, a few times, after a short random pause.
  for (let attempt = 1; ; attempt++) {
    try {
      return await once(pool, work);
    } catch (error) {
      if (attempt >= TRANSACTION_ATTEMPTS || !isRetryable(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 45));
    }
  }
}

const TRANSACTION_ATTEMPTS = 4;

/** deadlock_detected, serialization_failure. */
function isRetryable(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return code === "40P01" || code === "40001";
}

async function once<T>(pool: PostgresPool, work: (client: PostgresClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** The one-running-run-per-conversation index (or a primary key) refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === "23505";
}
