#!/usr/bin/env node
// Runs the Prisma CLI with its JavaScript engines only. The CLI checks for native
// engine files before some commands and would try to download them; pointing the
// variables at an existing file stops that (the files are never executed).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const self = fileURLToPath(import.meta.url);
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? "file:./data/runledger.db",
  PRISMA_QUERY_ENGINE_LIBRARY: process.env.PRISMA_QUERY_ENGINE_LIBRARY ?? self,
  PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? self,
  PRISMA_HIDE_UPDATE_MESSAGE: "1",
  CHECKPOINT_DISABLE: "1",
};
const result = spawnSync("prisma", process.argv.slice(2), { stdio: "inherit", env, shell: false });
process.exit(result.status ?? 1);
