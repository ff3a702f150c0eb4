// The storage backends every conformance suite runs against, and the
// deployments (storage with an event bus) the API suites run on: one small
// initializer each. A new backend adds itself here and must pass every suite.
import { tempDatabaseUrl } from "../../testkit/app.ts";
import type { Storage } from "../../src/storage/types.ts";
import { openSqliteStorage } from "../../src/storage/open-sqlite.ts";
import { openSqlite } from "../../src/storage/sqlite/database.ts";
import { openPostgresStorage } from "../../src/storage/open-postgres.ts";
import { postgresDatabase, redisServer, uniqueName } from "../../testkit/services.ts";
import type { Deployment } from "./api.ts";
import pg from "pg";

export interface TestStorage {
  storage: Storage;
  /** Evaluates one SQL expression on the backend's own engine; parameter n is `@pn` in SQLite and `$n` in Postgres. */
  evaluate(expression: string, params: (string | null)[]): Promise<unknown>;
  /** The dialect of `evaluate`'s SQL. */
  dialect: "sqlite" | "postgres";
  close(): Promise<void>;
}

export interface StorageBackend {
  name: string;
  /** A fresh, empty, migrated database. */
  open(): Promise<TestStorage>;
}

export const sqliteBackend: StorageBackend = {
  name: "sqlite",
  async open() {
    const { file } = tempDatabaseUrl("runledger-conformance-");
    const storage = await openSqliteStorage(file);
    const scratch = openSqlite(file, { readonly: true });
    return {
      storage,
      dialect: "sqlite",
      async evaluate(expression, params) {
        const named = Object.fromEntries(params.map((value, i) => [`p${i + 1}`, value]));
        return Object.values(scratch.prepare(`SELECT ${expression} AS value`).get(named) as Record<string, unknown>)[0];
      },
      async close() {
        scratch.close();
        await storage.close();
      },
    };
  },
};

export const postgresBackend: StorageBackend = {
  name: "postgres",
  async open() {
    const database = await postgresDatabase();
    const storage = await openPostgresStorage(database.url);
    const scratch = new pg.Client({ connectionString: database.url });
    await scratch.connect();
    return {
      storage,
      dialect: "postgres",
      async evaluate(expression, params) {
        return (await scratch.query(`SELECT ${expression} AS value`, params)).rows[0]?.value;
      },
      async close() {
        await scratch.end();
        await storage.close();
        await database.drop();
      },
    };
  },
};

export const storageBackends: StorageBackend[] = [sqliteBackend, postgresBackend];

/** Whole servers: the environment that selects each stack. REDIS_URL shares events between instances. */
export const deployments: Deployment[] = [
  { name: "SQLite, events in memory", env: async () => ({ env: {}, cleanup: async () => {} }) },
  {
    name: "PostgreSQL, events in memory",
    env: async () => {
      const database = await postgresDatabase();
      return { env: { DATABASE_URL: database.url }, cleanup: () => database.drop() };
    },
  },
  {
    name: "PostgreSQL, events through Redis",
    env: async () => {
      const [database, redis] = await Promise.all([postgresDatabase(), redisServer()]);
      return { env: { DATABASE_URL: database.url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: `${uniqueName("api")}:` }, cleanup: () => database.drop() };
    },
  },
];
