// The real servers a spec may need: this run's PostgreSQL and Redis (one of
// each per `vitest run`, see test/setup/services.ts) and a Chromium binary.
//
// Sharing them: spec files run in parallel against the same two servers, so
// - PostgreSQL: take a database of your own with postgresDatabase() (one per
//   spec, or per test) and drop() it afterwards; never use the `postgres`
//   database itself.
// - Redis: take a database number of your own with redisDatabase() (its URL
//   selects it), or put every key under uniqueName(); never FLUSHALL, and
//   FLUSHDB only in a database you took. Pub/sub channels are shared by all
//   database numbers: name them with uniqueName() too.
// - Each of these may install a program from Debian's packages the first time
//   it is needed on a machine, which takes longer than a hook's default
//   timeout: call them in a beforeAll with SERVICES_TIMEOUT_MS, e.g.
//   `beforeAll(async () => { db = await postgresDatabase(); }, SERVICES_TIMEOUT_MS)`.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { Redis } from "ioredis";
import { inject } from "vitest";
import { CHROMIUM_ARGS as chromiumArgs, ensureServer, findChromium, install } from "../scripts/services.mjs";
import type { ProvidedServices } from "../test/setup/services.ts";

/** Time for a hook that may install a server's or Chromium's package first (a few seconds once installed). */
export const SERVICES_TIMEOUT_MS = 5 * 60_000;

/** Arguments Chromium needs here (headless, no sandbox, no calls home); pass them to chromium.launch(). */
export const CHROMIUM_ARGS: string[] = [...chromiumArgs];

function provided(): ProvidedServices {
  const services = inject("testServices");
  if (!services) throw new Error("test services are not set up: run the specs through vitest.config.ts, whose globalSetup is test/setup/services.ts");
  return services;
}

const log = (line: string) => console.warn(line);

const urls = new Map<"postgres" | "redis", Promise<string>>();
/**
 * The URL of this run's server of `kind` once it answers: the global setup may
 * still be starting it (then this waits on its lock), or it may not be
 * installed yet (then this installs and starts it).
 */
function serverUrl(kind: "postgres" | "redis"): Promise<string> {
  let url = urls.get(kind);
  if (!url) {
    url = ensureServer(provided().dir, kind, { log }).then((server) => {
      if (!server) throw new Error(`${kind} did not start`);
      return server.url;
    });
    urls.set(kind, url);
    url.catch(() => urls.delete(kind));
  }
  return url;
}

/** A name no other spec or test of this run uses: a Redis key prefix, a channel, a stream. */
export function uniqueName(label = "test"): string {
  return `${label}:${process.pid}:${randomBytes(6).toString("hex")}`;
}

/** A Redis server for this test run: started once per `vitest run` (the global setup), shared by every spec file. */
export async function redisServer(): Promise<{ url: string }> {
  return { url: await serverUrl("redis") };
}

const DATABASE_COUNTER = "runledger:test:databases";

/**
 * A Redis database number no other spec of this run uses (1 to 1023; 0 holds
 * the counter), its URL, and flush() to empty it.
 */
export async function redisDatabase(): Promise<{ url: string; db: number; flush(): Promise<void> }> {
  const { url } = await redisServer();
  const db = await withRedis(url, (redis) => redis.incr(DATABASE_COUNTER));
  if (db > 1023) throw new Error("this run took all 1023 Redis databases: share one, with uniqueName() keys");
  const dbUrl = `${url}/${db}`;
  return { url: dbUrl, db, flush: () => withRedis(dbUrl, async (redis) => void (await redis.flushdb())) };
}

async function withRedis<T>(url: string, use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

async function withPostgres<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** A fresh, empty PostgreSQL database on this test run's server, for one spec (or one test); drop() removes it. */
export async function postgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrlText = await serverUrl("postgres");
  const name = `test_${process.pid}_${randomBytes(6).toString("hex")}`;
  await withPostgres(serverUrlText, (client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(serverUrlText);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    // WITH (FORCE) ends connections a spec left open, so drop() does not wait on them.
    drop: () => (dropped ??= withPostgres(serverUrlText, async (client) => void (await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)))),
  };
}

/** The path of a Chromium binary, installed from Debian's packages when missing. */
export async function chromiumPath(): Promise<string> {
  const found = findChromium();
  if (found) return found;
  await install(["chromium"], { log });
  const installed = findChromium();
  if (!installed) throw new Error("Chromium is still not found after installing Debian's chromium");
  return installed;
}
