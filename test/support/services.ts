// Stand-ins until the shared services module lands: chromiumPath() installs
// Debian's Chromium when missing; postgresDatabase() uses a local server.
import { execFile } from "node:child_process";
import fs from "node:fs";
import { promisify } from "node:util";

const run = promisify(execFile);
const CHROMIUM = "/usr/bin/chromium";

let installing: Promise<string> | undefined;

/** Debian's Chromium, installed with apt-get when missing (the specs run as root in CI). */
export function chromiumPath(): Promise<string> {
  if (fs.existsSync(CHROMIUM)) return Promise.resolve(CHROMIUM);
  installing ??= (async () => {
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    await run("apt-get", ["update"], { env });
    await run("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], { env });
    if (!fs.existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} is missing`);
    return CHROMIUM;
  })();
  return installing;
}

import { randomUUID } from "node:crypto";
import pg from "pg";

export async function postgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = process.env.RUNLEDGER_TEST_POSTGRES ?? "postgres://postgres@127.0.0.1:55432/postgres";
  const name = `t_${randomUUID().replace(/-/g, "")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
