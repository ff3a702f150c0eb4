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
//   api-keys/            the API keys callers authenticate with, stored as hashes
//   tool-journal/        every attempt at a tool call, recorded before and after it runs
//   run-events/          what runs streamed that checkpoints do not keep: custom events, each message's node
//   schedules/           cron schedules that start runs, and their firings
//   retention/           what the retention sweeper finds and prunes, and its lease
//   open-sqlite.ts       assembles the embedded backend: one file, its writer and reader, every seam on them
//   open-postgres.ts     assembles the shared backend: one pool, every seam on it
//   sqlite/              plumbing of the embedded backend: the connection, migrations, LangGraph's saver, the write gate
//   postgres/            plumbing of the shared backend: the pool, migrations under an advisory lock, LangGraph's PostgresSaver
//   rows.ts              the row codec every seam's backends share (dates and JSON decoded per engine)
//
// Each seam has an interface (types.ts), one file per backend, and a
// conformance suite in test/conformance/ that every backend passes.
import type { Config } from "../config.ts";
import type { Storage } from "./types.ts";
import { openSqliteStorage } from "./open-sqlite.ts";
import { openPostgresStorage } from "./open-postgres.ts";

export type { Storage };

/** Opens (and migrates) the database the configuration names. */
/** `onWriteWait`: told how long each SQLite write waited for its turn, in ms (metrics). */
export async function openStorage(
  config: Pick<Config, "databaseKind" | "databasePath" | "databaseUrl">,
  options: { onWriteWait?: (ms: number) => void } = {},
): Promise<Storage & { migrated: string[] }> {
  return config.databaseKind === "postgres" ? openPostgresStorage(config.databaseUrl) : openSqliteStorage(config.databasePath, options);
}
