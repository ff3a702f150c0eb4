// API keys from the command line, on the database DATABASE_URL names (migrated
// first, as the server does):
//   create --user NAME [--admin] [--label TEXT]   prints the new key, once
//   list                                          every key, never a key or its hash
//   revoke ID                                     refused at once on every instance
// Bad arguments print the usage on stderr (exit 2); a bad setting exits 2 with one line.
import { ConfigError, loadConfig } from "../config.ts";
import { NotFoundError } from "../domain/errors.ts";
import { createApiKey } from "../server/identity/api-keys.ts";
import type { ApiKeyRecord, ApiKeyStore } from "../storage/api-keys/types.ts";
import { openStorage } from "../storage/index.ts";
import { keysUsage, parseCommand, type Command } from "./keys-command.ts";

const date = (value: Date | null) => value?.toISOString() ?? "-";

function table(keys: ApiKeyRecord[]): string {
  const rows = [
    ["id", "user", "role", "label", "created", "last used", "revoked"],
    ...keys.map((k) => [k.id, k.userId, k.role, k.label ?? "-", date(k.createdAt), date(k.lastUsedAt), date(k.revokedAt)]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

async function run(command: Command, store: ApiKeyStore): Promise<void> {
  switch (command.name) {
    case "create": {
      const { key, record } = await createApiKey(store, { userId: command.user, role: command.admin ? "admin" : "user", label: command.label });
      process.stdout.write(`id: ${record.id}\nuser: ${record.userId}\nrole: ${record.role}\nkey: ${key}\n`);
      process.stderr.write("The key is shown only now and is not stored: keep it somewhere safe.\n");
      return;
    }
    case "list": {
      const keys = await store.list();
      process.stdout.write(keys.length === 0 ? "no API keys\n" : `${table(keys)}\n`);
      return;
    }
    case "revoke": {
      const record = await store.revoke(command.id, new Date());
      process.stdout.write(`revoked ${record.id} (${record.userId}, ${record.role}) at ${date(record.revokedAt)}\n`);
      return;
    }
  }
}

/** Runs the keys command; answers the exit code. `program` is how the usage names the command. */
export async function runKeys(args: string[], program: string): Promise<number> {
  let command: Command;
  try {
    command = parseCommand(args);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${keysUsage(program)}\n`);
    return 2;
  }
  try {
    const storage = await openStorage(loadConfig());
    try {
      await run(command, storage.apiKeys);
    } finally {
      await storage.close();
    }
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`runledger keys: ${error.message.replace(/\s*\n\s*/g, " ")}\n`);
      return 2;
    }
    if (error instanceof NotFoundError) {
      process.stderr.write(`runledger keys: no API key has the id ${JSON.stringify(error.id)} (see list)\n`);
      return 1;
    }
    throw error;
  }
}
