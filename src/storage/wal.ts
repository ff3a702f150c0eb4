// SQLite's write-ahead log, folded back once every process using the file has
// stopped: a cluster's primary does so after its last worker (src/cluster/primary.ts).
import type { Config } from "../config.ts";
import { openSqlite } from "./sqlite/database.ts";

/**
 * Folds a SQLite file's write-ahead log back into it: the last connection to
 * close does so, but two closing at the same instant can both leave it. After
 * every process using the file has stopped; PostgreSQL has nothing to fold.
 */
export function foldWriteAheadLog(config: Pick<Config, "databaseKind" | "databasePath">): void {
  if (config.databaseKind === "sqlite") openSqlite(config.databasePath).close();
}
