// The `runledger` command, as the installed package runs it (`npx runledger`,
// or `runledger` after `npm install -g`): the built JavaScript and production
// dependencies only.
//   runledger serve               the server (migrating the SQLite default on first start, as npm start does)
//   runledger migrate [--check]   applies pending migrations; --check lists them and exits 1 when there are any
//   runledger keys ...            API keys (create, list, revoke), as npm run keys
//   runledger check-config        validates the environment and the agent file without starting
//   runledger retention [--dry-run]   one retention sweep now (docs/retention.md); --dry-run prints what would go
//   runledger --help | --version
// A bad setting stops every command with one line naming the variable, exit code 2.
import fs from "node:fs";
import { ConfigError, describeDatabase, loadConfig } from "../config.ts";
import { agentDefaultsFrom } from "../agent/definitions.ts";
import { loadAgentDefinitions } from "../agent/agent-file.ts";
import { loadAgentGraphs } from "../agent/kinds/index.ts";
import { loadTrustedManifest } from "../server/trusted-manifest.ts";
import { openStorage } from "../storage/index.ts";
import { pendingMigrations } from "../storage/migration-status.ts";
import { runKeys } from "./keys.ts";
import { runRetention } from "./retention.ts";

// Defined by scripts/build.mjs: the server to serve is then dist/main.js beside this file's bundle.
declare const RUNLEDGER_BUILT: boolean | undefined;
const BUILT = typeof RUNLEDGER_BUILT !== "undefined" && RUNLEDGER_BUILT;

export const HELP = `runledger: a GraphQL API that runs LLM agents durably

usage: runledger <command> [options]

commands:
  serve               start the server (PORT, HOST, DATABASE_URL, ...; see the README's Configuration)
  migrate [--check]   apply pending database migrations; with --check, list them and exit 1 if any
  keys <create|list|revoke> ...
                      manage API keys: create --user NAME [--admin] [--label TEXT] | list | revoke ID
  check-config        check the environment and the agent file (RUNLEDGER_CONFIG) without starting
  retention [--dry-run]
                      one retention sweep now; with --dry-run, print what it would delete and delete nothing
  --help, --version

Settings come from the environment; a bad one stops with one line naming it (exit code 2).`;

function refuse(error: unknown): number {
  if (error instanceof ConfigError) {
    process.stderr.write(`runledger: ${error.message.replace(/\s*\n\s*/g, " ")}\n`);
    return 2;
  }
  throw error;
}

function version(): string {
  // The package's own package.json: two levels up from this file in src/ and, by the build's rewriting, from dist/ too.
  const manifest = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

async function migrate(args: string[]): Promise<number> {
  const unknown = args.filter((a) => a !== "--check");
  if (unknown.length > 0) {
    process.stderr.write(`runledger migrate: unexpected ${unknown[0]}\nusage: runledger migrate [--check]\n`);
    return 2;
  }
  try {
    const config = loadConfig();
    if (args.includes("--check")) {
      const pending = await pendingMigrations(config);
      process.stdout.write(
        pending.length === 0
          ? `${describeDatabase(config)}: up to date\n`
          : `${describeDatabase(config)}: ${pending.length} pending\n${pending.map((name) => `  ${name}\n`).join("")}`,
      );
      return pending.length === 0 ? 0 : 1;
    }
    const storage = await openStorage(config);
    await storage.close();
    process.stdout.write(
      storage.migrated.length === 0
        ? `${describeDatabase(config)}: up to date\n`
        : `${describeDatabase(config)}: applied ${storage.migrated.length}\n${storage.migrated.map((name) => `  ${name}\n`).join("")}`,
    );
    return 0;
  } catch (error) {
    return refuse(error);
  }
}

async function checkConfig(args: string[]): Promise<number> {
  if (args.length > 0) {
    process.stderr.write(`runledger check-config: unexpected ${args[0]}\nusage: runledger check-config\n`);
    return 2;
  }
  try {
    const config = loadConfig();
    const definitions = loadAgentDefinitions(config.agentsFile, agentDefaultsFrom(config));
    // Graph modules are imported and checked as at start-up; nothing connects to a model, a database or an MCP server.
    await loadAgentGraphs(definitions);
    if (config.trustedOperationsFile !== undefined) loadTrustedManifest(config.trustedOperationsFile);
    process.stdout.write(
      `configuration OK: ${definitions.length} agent${definitions.length === 1 ? "" : "s"} (${definitions.map((d) => d.name).join(", ")}), ${describeDatabase(config)}, Ollama at ${config.ollamaHost}\n`,
    );
    return 0;
  } catch (error) {
    return refuse(error);
  }
}

async function main(argv: string[]): Promise<number | undefined> {
  const [command, ...args] = argv;
  switch (command) {
    case "serve":
      if (args.length > 0) {
        process.stderr.write(`runledger serve: unexpected ${args[0]} (settings come from the environment)\n`);
        return 2;
      }
      // The server's own module: it starts on import and handles its signals.
      await import(BUILT ? new URL("../../dist/main.js", import.meta.url).href : new URL("../main.ts", import.meta.url).href);
      return undefined;
    case "migrate":
      return migrate(args);
    case "keys":
      return runKeys(args, "runledger keys");
    case "check-config":
      return checkConfig(args);
    case "retention":
      return runRetention(args).catch(refuse);
    case "--version":
    case "-v":
      process.stdout.write(`${version()}\n`);
      return 0;
    case "--help":
    case "-h":
    case "help":
      process.stdout.write(`${HELP}\n`);
      return 0;
    case undefined:
      process.stderr.write(`${HELP}\n`);
      return 2;
    default:
      process.stderr.write(`runledger: unknown command ${command}\n\n${HELP}\n`);
      return 2;
  }
}

const code = await main(process.argv.slice(2));
if (code !== undefined) process.exit(code);
