// API keys from the command line, on the database DATABASE_URL names (migrated
// first, as the server does):
//   npm run keys -- create --user NAME [--admin] [--label TEXT]   prints the new key, once
//   npm run keys -- list                                          every key, never a key or its hash
//   npm run keys -- revoke ID                                     refused at once on every instance
// Bad arguments print the usage on stderr and exit 2; a bad setting exits 2 with one line.
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../src/config.ts";
import { NotFoundError } from "../src/domain/errors.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";
import type { ApiKeyRecord, ApiKeyStore } from "../src/storage/api-keys/types.ts";
import { openStorage } from "../src/storage/index.ts";

const USAGE = "usage: npm run keys -- create --user NAME [--admin] [--label TEXT] | list | revoke ID";

type Command = { name: "create"; user: string; admin: boolean; label: string | null } | { name: "list" } | { name: "revoke"; id: string };

class UsageError extends Error {}

function parseCommand(args: string[]): Command {
  const [name, ...rest] = args;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: name === "create" ? { user: { type: "string" }, admin: { type: "boolean" }, label: { type: "string" } } : {},
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed as { values: Record<string, string | boolean | undefined>; positionals: string[] };
  switch (name) {
    case "create": {
      if (positionals.length > 0) throw new UsageError(`unexpected ${positionals[0]}`);
      const user = typeof values.user === "string" ? values.user.trim() : "";
      if (!user) throw new UsageError("create needs --user NAME");
      if (!printable(user) || user.length > 200) throw new UsageError("--user must be 1 to 200 printable characters");
      const label = typeof values.label === "string" ? values.label.trim() : "";
      if (!printable(label) || label.length > 200) throw new UsageError("--label must be at most 200 printable characters");
      return { name, user, admin: values.admin === true, label: label || null };
    }
    case "list":
      if (positionals.length > 0) throw new UsageError(`unexpected ${positionals[0]}`);
      return { name };
    case "revoke":
      if (positionals.length !== 1) throw new UsageError("revoke needs one key ID (see list)");
      return { name, id: positionals[0]! };
    default:
      throw new UsageError(name === undefined ? "no command" : `unknown command ${name}`);
  }
}

/** No control characters: what is stored is printed back by list. */
function printable(text: string): boolean {
  return !/\p{Cc}/u.test(text);
}

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

let command: Command;
try {
  command = parseCommand(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
  process.exit(2);
}

try {
  const storage = await openStorage(loadConfig());
  try {
    await run(command, storage.apiKeys);
  } finally {
    await storage.close();
  }
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`runledger keys: ${error.message.replace(/\s*\n\s*/g, " ")}\n`);
    process.exit(2);
  }
  if (error instanceof NotFoundError) {
    process.stderr.write(`runledger keys: no API key has the id ${JSON.stringify(error.id)} (see list)\n`);
    process.exit(1);
  }
  throw error;
}
