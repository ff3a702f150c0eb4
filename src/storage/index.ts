// Storage: every row runledger keeps, behind one interface per seam.
//
// The rule: every read and write of runledger's rows and LangGraph's goes
// through these seams; no code outside src/storage runs SQL. GraphQL reads them
// through the per-operation read scope (src/read/scope.ts), which batches each
// seam's calls (DataLoader); the services write through the run store. Prisma
// keeps the schema and the migrations (prisma/) and is not used at run time:
// each backend runs its own prepared SQL on its own driver.
//
//   run-store/           conversations, runs and run owners
//   conversation-list/   the conversations page and its total
//   checkpoint-reads/    LangGraph's checkpoints and task writes, saver-neutral records
//   event-bus/           a run's events to its subscribers, on any instance
//   sqlite/              the embedded backend: the file, its writer and reader, set-up
//   postgres/            the shared backend: the pool, migrations under an advisory lock, LangGraph's PostgresSaver
//
// Each seam has an interface (types.ts), one file per backend, and a
// conformance suite in test/conformance/ that every backend passes.
import type { Config } from "../config.ts";
import type { Storage } from "./types.ts";
import { openSqliteStorage } from "./sqlite/index.ts";
import { openPostgresStorage } from "./postgres/index.ts";

export type { Storage };

/** Opens (and migrates) the database the configuration names. */
export async function openStorage(config: Pick<Config, "databaseKind" | "databasePath" | "databaseUrl">): Promise<Storage & { migrated: string[] }> {
  return config.databaseKind === "postgres" ? openPostgresStorage(config.databaseUrl) : openSqliteStorage(config.databasePath);
}
