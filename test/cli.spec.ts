// The `runledger` command: the built CLI (dist/cli.js) for each subcommand, and
// the packed tarball installed into a fresh prefix with production dependencies
// only, serving a run against the fake model on Node 20 and Node 22, then
// stopping on SIGTERM with exit code 0.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { buildServer, isAlive, node22, startListening, type ProcessServer } from "../testkit/built.ts";
import { postgresDatabase, SERVICES_TIMEOUT_MS } from "../testkit/services.ts";

const exec = promisify(execFile);
const CLI = path.join(ROOT, "dist", "cli.js");
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command with only the given settings on top of a clean environment (no settings of this process's own). */
async function runCli(command: string[], env: Record<string, string> = {}, cwd?: string): Promise<Result> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => ["PATH", "HOME", "TMPDIR"].includes(key)));
  try {
    const { stdout, stderr } = await exec(command[0]!, command.slice(1), { env: { ...base, ...env }, cwd: cwd ?? os.tmpdir(), timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== "number") throw error;
    return { code: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

let fake: FakeOllama;
const started: ProcessServer[] = [];

beforeAll(async () => {
  await buildServer();
  fake = await startFakeOllama();
}, 120_000);
afterAll(async () => {
  for (const server of started) if (isAlive(server.pid)) process.kill(server.pid, "SIGKILL");
  await fake?.close();
});

describe("runledger (dist/cli.js)", () => {
  const cli = (args: string[], env?: Record<string, string>) => runCli([process.execPath, CLI, ...args], env);

  it("says its version and its commands; an unknown command or none is refused with the help (exit 2)", async () => {
    expect(await cli(["--version"])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    for (const command of ["serve", "migrate [--check]", "keys", "check-config"]) expect(help.stdout).toContain(command);
    expect(await cli([])).toMatchObject({ code: 2, stdout: "", stderr: help.stdout });
    const unknown = await cli(["deploy"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.split("\n")[0]).toBe("runledger: unknown command deploy");
    expect((await cli(["serve", "--port", "3000"])).stderr).toBe("runledger serve: unexpected --port (settings come from the environment)\n");
  });

  it("checks the configuration without starting: OK, or the server's own one-line refusal with exit code 2", async () => {
    const db = tempDatabaseUrl("runledger-cli-");
    const ok = await cli(["check-config"], { DATABASE_URL: db.url, OLLAMA_HOST: fake.url });
    expect(ok).toMatchObject({ code: 0, stderr: "" });
    expect(ok.stdout).toMatch(/^configuration OK: 1 agent \(default\), /);
    // Checking opened nothing: the database file was not created.
    expect(fs.existsSync(db.file)).toBe(false);

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-cli-agents-"));
    const agents = path.join(dir, "agents.json");
    fs.writeFileSync(agents, JSON.stringify({ agents: { default: { type: "chat", tools: ["no_such_tool"] } } }));
    const refused: Record<string, string>[] = [
      { PORT: "eighty" },
      { RUNLEDGER_CONFIG: agents },
      { RUNLEDGER_CONFIG: path.join(dir, "missing.json") },
      { API_TOKEN: "short" },
    ];
    for (const env of refused) {
      const checked = await cli(["check-config"], { DATABASE_URL: db.url, ...env });
      // The server, started with the same settings, stops with the same line.
      const served = await runCli([process.execPath, path.join(ROOT, "dist", "main.js")], { DATABASE_URL: db.url, PORT: "0", ...env });
      expect(checked.code, JSON.stringify(env)).toBe(2);
      expect(served.code, JSON.stringify(env)).toBe(2);
      expect(checked.stderr.trim().split("\n"), JSON.stringify(env)).toHaveLength(1);
      expect(checked.stderr, JSON.stringify(env)).toBe(served.stderr);
    }
  });

  it("migrates on its own, and --check lists what is pending (exit 1) until then, on SQLite and PostgreSQL", { timeout: SERVICES_TIMEOUT_MS }, async () => {
    const sqlite = tempDatabaseUrl("runledger-cli-");
    const postgres = await postgresDatabase();
    try {
      for (const url of [sqlite.url, postgres.url]) {
        const before = await cli(["migrate", "--check"], { DATABASE_URL: url });
        expect(before.code, url).toBe(1);
        const pending = before.stdout
          .split("\n")
          .slice(1)
          .filter(Boolean)
          .map((line) => line.trim());
        expect(pending.length).toBeGreaterThan(5);
        expect(pending).toEqual([...pending].sort());
        const applied = await cli(["migrate"], { DATABASE_URL: url });
        expect(applied.code).toBe(0);
        expect(
          applied.stdout
            .split("\n")
            .slice(1)
            .filter(Boolean)
            .map((line) => line.trim()),
        ).toEqual(pending);
        expect(await cli(["migrate", "--check"], { DATABASE_URL: url })).toMatchObject({ code: 0, stdout: expect.stringMatching(/: up to date\n$/) });
        expect(await cli(["migrate"], { DATABASE_URL: url })).toMatchObject({ code: 0, stdout: expect.stringMatching(/: up to date\n$/) });
      }
      expect(await cli(["migrate", "--dry-run"], { DATABASE_URL: sqlite.url })).toMatchObject({ code: 2 });
      const unreachable = await cli(["migrate", "--check"], { DATABASE_URL: "postgres://runledger@127.0.0.1:1/nothing" });
      expect(unreachable.code).toBe(2);
      expect(unreachable.stderr).toMatch(/^runledger: DATABASE_URL: PostgreSQL at 127\.0\.0\.1:1\/nothing cannot be reached: .+\n$/);
    } finally {
      await postgres.drop();
    }
  });

  it("manages API keys as npm run keys does", async () => {
    const db = tempDatabaseUrl("runledger-cli-");
    const made = await cli(["keys", "create", "--user", "ada", "--label", "ci"], { DATABASE_URL: db.url });
    expect(made.code).toBe(0);
    const id = /^id: (\S+)$/m.exec(made.stdout)?.[1];
    expect(made.stdout).toMatch(/^key: rlk_[A-Za-z0-9_-]{43}$/m);
    expect((await cli(["keys", "list"], { DATABASE_URL: db.url })).stdout).toContain(id);
    expect((await cli(["keys", "revoke", id!], { DATABASE_URL: db.url })).stdout).toMatch(new RegExp(`^revoked ${id} \\(ada, user\\) at `));
    const bad = await cli(["keys", "create"], { DATABASE_URL: db.url });
    expect(bad).toEqual({
      code: 2,
      stdout: "",
      stderr: "create needs --user NAME\nusage: runledger keys create --user NAME [--admin] [--label TEXT] | list | revoke ID\n",
    });
  });
});

describe("the packed package, installed with production dependencies only", () => {
  let prefix: string;
  let installed: string;

  beforeAll(async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-pack-"));
    // The build is this run's (test/setup/server-build.ts): packed as it is, without building again.
    const { stdout } = await exec("npm", ["pack", "--ignore-scripts", "--pack-destination", work, "--silent"], { cwd: ROOT });
    const tarball = path.join(work, stdout.trim().split("\n").at(-1)!);
    prefix = path.join(work, "prefix");
    // From the npm cache where it has the packages (the registry otherwise), as `npm install -g` does.
    await exec("npm", ["install", "--global", "--prefix", prefix, "--omit=dev", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], {
      cwd: work,
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    installed = path.join(prefix, "lib", "node_modules", "runledger");
  }, 600_000);

  it("holds the build and the migrations, and none of the development tools", () => {
    expect(fs.existsSync(path.join(installed, "dist", "cli.js"))).toBe(true);
    expect(fs.existsSync(path.join(installed, "dist", "console", "index.html"))).toBe(true);
    expect(fs.readdirSync(path.join(installed, "prisma", "migrations")).length).toBeGreaterThan(5);
    expect(fs.existsSync(path.join(installed, "src"))).toBe(false);
    for (const tool of ["tsx", "typescript", "esbuild", "vitest", "prettier"])
      expect(fs.existsSync(path.join(installed, "node_modules", tool)), tool).toBe(false);
    expect(fs.realpathSync(path.join(prefix, "bin", "runledger"))).toBe(path.join(installed, "dist", "cli.js"));
  });

  /** `runledger serve` on `node`: one run against the fake model, then SIGTERM. */
  async function serveOnce(node: string, bin: string, label: string): Promise<void> {
    const db = tempDatabaseUrl("runledger-pack-");
    const server = await startListening(
      node,
      [bin, "serve"],
      { DATABASE_URL: db.url, OLLAMA_HOST: fake.url, SHUTDOWN_TIMEOUT_MS: "5000" },
      { cwd: os.tmpdir() },
    );
    started.push(server);
    const { startRun } = await gqlOk(server.url, START_RUN, { message: `Hello from ${label}` });
    expect((await waitForRun(server.url, startRun.run.id)).status).toBe("COMPLETED");
    expect((await fetch(`${server.url}/console`)).status).toBe(200);
    process.kill(server.pid, "SIGTERM");
    expect(await server.exited).toBe(0);
    // The SQLite default was created and migrated on first start, beside nothing of the repository's.
    expect(fs.existsSync(db.file)).toBe(true);
  }

  it("serves a run on Node 20 and stops on SIGTERM with exit code 0", { timeout: 120_000 }, async () => {
    expect((await runCli([path.join(prefix, "bin", "runledger"), "--version"])).stdout).toBe(`${VERSION}\n`);
    await serveOnce(process.execPath, path.join(installed, "dist", "cli.js"), "node 20");
  });

  it("serves a run on Node 22, with better-sqlite3 built for it", { timeout: SERVICES_TIMEOUT_MS }, async () => {
    const { node, app } = await node22();
    // The installed package as `npm rebuild` on Node 22 would leave it: the one native module compiled for Node 22's ABI.
    const copy = path.join(path.dirname(installed), "runledger-node22");
    fs.cpSync(installed, copy, { recursive: true, dereference: false });
    fs.rmSync(path.join(copy, "node_modules", "better-sqlite3"), { recursive: true, force: true });
    fs.cpSync(path.join(app, "node_modules", "better-sqlite3"), path.join(copy, "node_modules", "better-sqlite3"), { recursive: true });
    await serveOnce(node, path.join(copy, "dist", "cli.js"), "node 22");
  });
});
