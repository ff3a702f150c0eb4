// `npm run keys`: the API keys CLI, run as a process against a SQLite file and a
// PostgreSQL database, and the table it leaves behind read directly.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { createAuthenticator } from "../src/server/identity/authenticate.ts";
import { openStorage } from "../src/storage/index.ts";
import { ROOT, tempDatabaseUrl } from "../testkit/app.ts";
import { postgresDatabase, SERVICES_TIMEOUT_MS } from "../testkit/services.ts";

import { parseCommand, UsageError, USAGE } from "../src/cli/keys-command.ts";

const exec = promisify(execFile);
const TIMEOUT_MS = 60_000;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Node's arguments for the CLI: its build beside this run's server build
 * (dist/keys.js, test/setup/server-build.ts), else scripts/keys.ts as `npm run
 * keys` runs it (tsx). The same code either way.
 */
function keysCommand(): string[] {
  const built = process.env.RUNLEDGER_TEST_SERVER_BUILD;
  return built ? [path.join(path.dirname(built), "keys.js")] : ["--import", "tsx", "scripts/keys.ts"];
}

/** Runs the CLI with DATABASE_URL set. */
async function keys(databaseUrl: string, ...args: string[]): Promise<Result> {
  const env = { ...process.env, DATABASE_URL: databaseUrl };
  return exec(process.execPath, [...keysCommand(), ...args], { cwd: ROOT, env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

function field(stdout: string, name: string): string {
  return new RegExp(`^${name}: (.+)$`, "m").exec(stdout)?.[1] ?? "";
}

const backends: { name: string; open(): Promise<{ url: string; rows(): Promise<Record<string, unknown>[]>; drop(): Promise<void> }> }[] = [
  {
    name: "a SQLite file",
    async open() {
      const { url, file } = tempDatabaseUrl("runledger-keys-");
      return {
        url,
        async rows() {
          const db = new Database(file, { readonly: true });
          try {
            return db.prepare("SELECT * FROM api_keys").all() as Record<string, unknown>[];
          } finally {
            db.close();
          }
        },
        drop: async () => {},
      };
    },
  },
  {
    name: "PostgreSQL",
    async open() {
      const database = await postgresDatabase();
      return {
        url: database.url,
        async rows() {
          const client = new pg.Client({ connectionString: database.url });
          await client.connect();
          try {
            return (await client.query("SELECT * FROM api_keys")).rows;
          } finally {
            await client.end();
          }
        },
        drop: () => database.drop(),
      };
    },
  },
];

for (const backend of backends) {
  describe(`npm run keys on ${backend.name}`, () => {
    let database: Awaited<ReturnType<(typeof backend)["open"]>>;
    beforeAll(async () => {
      database = await backend.open();
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => database?.drop());

    it(
      "creates keys (printed once), lists them without keys or hashes, and revokes one so the server refuses it",
      async () => {
        const alice = await keys(database.url, "create", "--user", "alice", "--label", "laptop");
        expect(alice.code).toBe(0);
        const aliceKey = field(alice.stdout, "key");
        expect(aliceKey).toMatch(/^rlk_[A-Za-z0-9_-]{43}$/);
        expect(field(alice.stdout, "role")).toBe("user");
        expect(alice.stderr).toMatch(/shown only now/);
        const root = await keys(database.url, "create", "--user", "root", "--admin");
        expect(field(root.stdout, "role")).toBe("admin");
        const rootKey = field(root.stdout, "key");

        // Only hashes are stored: no column of any row holds a key.
        const rows = await database.rows();
        expect(rows).toHaveLength(2);
        for (const key of [aliceKey, rootKey]) {
          expect(JSON.stringify(rows)).not.toContain(key);
          expect(JSON.stringify(rows)).not.toContain(key.slice(4));
          expect(rows.map((r) => r.hash)).toContain(createHash("sha256").update(key).digest("hex"));
        }

        const list = await keys(database.url, "list");
        expect(list.code).toBe(0);
        const lines = list.stdout.trim().split("\n");
        expect(lines[0]).toMatch(/^id\s+user\s+role\s+label\s+created\s+last used\s+revoked$/);
        expect(lines.slice(1).map((line) => line.split(/\s{2,}/).slice(1, 4))).toEqual([
          ["alice", "user", "laptop"],
          ["root", "admin", "-"],
        ]);
        for (const row of rows) expect(list.stdout).not.toContain(String(row.hash));
        expect(list.stdout).not.toContain(aliceKey);

        // The server's authenticator, on the same database, takes the key until it is revoked.
        const config = loadConfig({ DATABASE_URL: database.url, API_TOKEN: "the-admin-token" });
        const storage = await openStorage(config);
        try {
          const authenticator = createAuthenticator({ config, apiKeys: storage.apiKeys });
          expect(await authenticator.authenticate(`Bearer ${aliceKey}`)).toMatchObject({ id: "alice", role: "user", source: "api-key" });
          const id = field(alice.stdout, "id");
          const revoked = await keys(database.url, "revoke", id);
          expect(revoked.code).toBe(0);
          expect(revoked.stdout).toMatch(new RegExp(`^revoked ${id} \\(alice, user\\) at \\d{4}-`));
          await expect(authenticator.authenticate(`Bearer ${aliceKey}`)).rejects.toThrow(/was revoked at/);
          expect(await authenticator.authenticate(`Bearer ${rootKey}`)).toMatchObject({ id: "root", role: "admin" });
        } finally {
          await storage.close();
        }
        const after = await keys(database.url, "list");
        expect(after.stdout.split("\n").find((line) => line.includes("alice"))).toMatch(
          /\d{4}-\d\d-\d\dT[\d:.]+Z\s+\d{4}-\d\d-\d\dT[\d:.]+Z\s+\d{4}-\d\d-\d\dT[\d:.]+Z$/,
        );
      },
      TIMEOUT_MS,
    );

    it(
      "refuses an unknown id with exit code 1 and changes nothing",
      async () => {
        const before = await database.rows();
        const result = await keys(database.url, "revoke", "00000000-0000-0000-0000-000000000000");
        expect(result).toMatchObject({ code: 1, stdout: "" });
        expect(result.stderr.trim()).toBe('runledger keys: no API key has the id "00000000-0000-0000-0000-000000000000" (see list)');
        expect(await database.rows()).toEqual(before);
      },
      TIMEOUT_MS,
    );
  });
}

describe("npm run keys with bad arguments", () => {
  it.each([
    [[], /^no command$/],
    [["frob"], /^unknown command frob$/],
    [["create"], /^create needs --user NAME$/],
    [["create", "--user"], /--user/],
    [["create", "--user", "   "], /^create needs --user NAME$/],
    [["create", "--user", "alice", "--root"], /--root/],
    [["create", "--user", "alice", "extra"], /^unexpected extra$/],
    [["list", "everything"], /^unexpected everything$/],
    [["revoke"], /^revoke needs one key ID \(see list\)$/],
  ])("%j is no command", (args, message) => {
    expect(() => parseCommand(args)).toThrow(UsageError);
    expect(() => parseCommand(args)).toThrow(message);
  });

  it(
    "prints the reason and the usage on stderr, exits 2 and creates nothing",
    async () => {
      const { url, file } = tempDatabaseUrl("runledger-keys-");
      const result = await keys(url, "create", "--user", "alice", "extra");
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr.trim().split("\n")).toEqual(["unexpected extra", USAGE]);
      expect(USAGE).toBe("usage: npm run keys -- create --user NAME [--admin] [--label TEXT] | list | revoke ID");
      // Arguments are checked before the database is opened: no file was made.
      expect(fs.existsSync(file)).toBe(false);
    },
    TIMEOUT_MS,
  );

  it(
    "stops with one line naming a bad setting (exit code 2)",
    async () => {
      const result = await keys("mysql://x/db", "list");
      expect(result.code).toBe(2);
      expect(result.stderr.trim()).toMatch(/^runledger keys: DATABASE_URL must be/);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
    },
    TIMEOUT_MS,
  );

  it(
    "runs as npm run keys",
    async () => {
      const { url } = tempDatabaseUrl("runledger-keys-");
      const { stdout } = await exec("npm", ["run", "-s", "keys", "--", "create", "--user", "nina"], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url } });
      expect(field(stdout, "user")).toBe("nina");
      expect(field(stdout, "key")).toMatch(/^rlk_/);
    },
    TIMEOUT_MS,
  );
});
