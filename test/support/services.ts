// Stand-in until the shared test services land: a fresh database on a local
// PostgreSQL named by RUNLEDGER_TEST_POSTGRES.
import { randomUUID } from "node:crypto";
import pg from "pg";

export async function postgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = process.env.RUNLEDGER_TEST_POSTGRES ?? "postgres://postgres@127.0.0.1:55432/postgres";
  const name = `t_${randomUUID().replace(/-/g, "")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
