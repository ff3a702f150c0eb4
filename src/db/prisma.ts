// The Prisma client on the better-sqlite3 driver adapter (Prisma's JavaScript
// engine: no native query engine).
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaClient } from "./generated/client.ts";
import { BUSY_TIMEOUT_MS } from "./sqlite.ts";

export type { PrismaClient };

export function createPrismaClient(databasePath: string): PrismaClient {
  const adapter = new PrismaBetterSQLite3({ url: `file:${databasePath}`, timeout: BUSY_TIMEOUT_MS });
  return new PrismaClient({ adapter });
}
