// Prisma CLI configuration: the JavaScript engines only (no native binaries), so
// `generate` and `migrate status|diff` work offline. DATABASE_URL picks the
// engine as the server does: postgres:// (or postgresql://) reads the Postgres
// schema and migrations in prisma/postgres/, anything else the SQLite ones.
import fs from "node:fs";
import path from "node:path";
import { defineConfig } from "prisma/config";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";

const url = process.env.DATABASE_URL ?? "file:./data/runledger.db";
const postgres = /^postgres(ql)?:\/\//.test(url);
const folder = postgres ? path.join("prisma", "postgres") : "prisma";

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: path.join(folder, "schema.prisma"),
  migrations: { path: path.join(folder, "migrations") },
  async adapter() {
    if (postgres) return new PrismaPg({ connectionString: url });
    const file = url.replace(/^file:/, "");
    if (file !== ":memory:") fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    return new PrismaBetterSQLite3({ url });
  },
});
