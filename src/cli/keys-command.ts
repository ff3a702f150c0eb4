// The arguments of `runledger keys` (and `npm run keys --`): parsed and checked before anything is opened.
import { parseArgs } from "node:util";
import { reservedUserId } from "../server/identity/api-keys.ts";

/** The usage line, for the way the command was called. */
export function keysUsage(program = "npm run keys --"): string {
  return `usage: ${program} create --user NAME [--admin] [--label TEXT] | list | revoke ID`;
}

export const USAGE = keysUsage();

export type Command = { name: "create"; user: string; admin: boolean; label: string | null } | { name: "list" } | { name: "revoke"; id: string };

/** Arguments that make no command: the usage is printed, exit code 2. */
export class UsageError extends Error {}

export function parseCommand(args: string[]): Command {
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
      const reserved = reservedUserId(user);
      if (reserved) throw new UsageError(`--user: ${reserved}`);
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
