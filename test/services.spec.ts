// The real servers behind testkit/services.ts: this run's PostgreSQL and
// Redis, Chromium driven by playwright-core, and scripts/services.mjs as people
// run it.
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { Redis } from "ioredis";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, SERVICES_TIMEOUT_MS, chromiumPath, postgresDatabase, redisDatabase, redisServer, uniqueName } from "../testkit/services.ts";
import { ROOT } from "../testkit/app.ts";

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

const serverDatabaseUrl = (url: string) => Object.assign(new URL(url), { pathname: "/postgres" }).toString();

describe("PostgreSQL", () => {
  let first: Awaited<ReturnType<typeof postgresDatabase>>;
  let second: Awaited<ReturnType<typeof postgresDatabase>>;
  beforeAll(async () => {
    [first, second] = await Promise.all([postgresDatabase(), postgresDatabase()]);
  }, SERVICES_TIMEOUT_MS);
  afterAll(async () => {
    await first?.drop();
    await second?.drop();
  });

  it("answers SELECT 1 on loopback", async () => {
    expect(first.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/test_/);
    expect(await query(first.url, "SELECT 1 AS one")).toEqual([{ one: 1 }]);
  });

  it("gives fresh, empty databases that do not see each other's tables", async () => {
    expect(first.url).not.toBe(second.url);
    const tables = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name";
    expect(await query(first.url, tables)).toEqual([]);
    await query(first.url, "CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL); INSERT INTO notes (body) VALUES ('kept')");
    await query(second.url, "CREATE TABLE other (id int)");
    expect(await query(first.url, "SELECT body FROM notes")).toEqual([{ body: "kept" }]);
    expect(await query(first.url, tables)).toEqual([{ table_name: "notes" }]);
    expect(await query(second.url, tables)).toEqual([{ table_name: "other" }]);
    await expect(query(second.url, "SELECT * FROM notes")).rejects.toThrow(/relation "notes" does not exist/);
  });

  it("drop() removes the database, also while a client is still connected", async () => {
    const database = await postgresDatabase();
    const name = new URL(database.url).pathname.slice(1);
    const lingering = new pg.Client({ connectionString: database.url });
    lingering.on("error", () => {}); // the drop ends its connection
    await lingering.connect();
    const exists = () => query(serverDatabaseUrl(database.url), `SELECT datname FROM pg_database WHERE datname = '${name}'`);
    expect(await exists()).toHaveLength(1);
    await database.drop();
    expect(await exists()).toEqual([]);
    await lingering.end().catch(() => {});
  });
});

describe("Redis", () => {
  let url: string;
  let redis: Redis;
  beforeAll(async () => {
    ({ url } = await redisServer());
    redis = new Redis(url);
  }, SERVICES_TIMEOUT_MS);
  afterAll(() => redis?.disconnect());

  it("SETs and GETs a key on loopback", async () => {
    expect(url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    const key = uniqueName("services-spec");
    expect(await redis.set(key, "value", "EX", 60)).toBe("OK");
    expect(await redis.get(key)).toBe("value");
  });

  it("delivers a stream entry to a blocked XREAD", async () => {
    const stream = uniqueName("services-spec:stream");
    const reader = new Redis(url);
    try {
      const read = reader.xread("BLOCK", 5000, "STREAMS", stream, "$");
      await new Promise((resolve) => setTimeout(resolve, 50)); // let the XREAD block first
      const id = await redis.xadd(stream, "MAXLEN", "~", "100", "*", "kind", "token", "text", "hello");
      expect(await read).toEqual([[stream, [[id, ["kind", "token", "text", "hello"]]]]]);
      expect(await redis.xread("STREAMS", stream, "0")).toEqual([[stream, [[id, ["kind", "token", "text", "hello"]]]]]);
    } finally {
      reader.disconnect();
    }
  });

  it("hands out separate databases; flush() empties only its own", async () => {
    const [a, b] = await Promise.all([redisDatabase(), redisDatabase()]);
    expect(a.db).not.toBe(b.db);
    const ra = new Redis(a.url);
    const rb = new Redis(b.url);
    try {
      await ra.set("shared-name", "a");
      await rb.set("shared-name", "b");
      expect(await ra.get("shared-name")).toBe("a");
      await a.flush();
      expect(await ra.get("shared-name")).toBeNull();
      expect(await rb.get("shared-name")).toBe("b");
    } finally {
      await b.flush();
      ra.disconnect();
      rb.disconnect();
    }
  });
});

describe("Chromium", () => {
  let server: http.Server;
  let pageUrl: string;
  beforeAll(async () => {
    server = http.createServer((_request, response) => {
      response.setHeader("content-type", "text/html; charset=utf-8");
      response.end(`<!doctype html><title>runledger</title><h1>Served on loopback</h1>
        <p id="script"></p><script>document.getElementById("script").textContent = "script ran: " + (6 * 7);</script>`);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it(
    "renders a localhost page that playwright-core reads",
    async () => {
      const executablePath = await chromiumPath();
      expect(fs.existsSync(executablePath)).toBe(true);
      const browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
      try {
        const page = await browser.newPage();
        await page.goto(pageUrl);
        expect(await page.title()).toBe("runledger");
        expect(await page.textContent("h1")).toBe("Served on loopback");
        expect(await page.textContent("#script")).toBe("script ran: 42");
      } finally {
        await browser.close();
      }
    },
    SERVICES_TIMEOUT_MS,
  );
});

describe("scripts/services.mjs", () => {
  const script = path.join(ROOT, "scripts", "services.mjs");
  const run = promisify(execFile);
  // Running, that is: the servers are daemons, so init reaps them and a zombie may linger a moment.
  const alive = (pid: number) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
    } catch {
      return false;
    }
  };

  it(
    "start prints one JSON line of working servers; stop ends them and removes the folder",
    async () => {
      const { stdout } = await run(process.execPath, [script, "start"]);
      expect(stdout.trim().split("\n")).toHaveLength(1);
      const started = JSON.parse(stdout) as { dir: string; postgresUrl: string; redisUrl: string };
      expect(Object.keys(started)).toEqual(["dir", "postgresUrl", "redisUrl"]);
      expect(started.postgresUrl).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
      expect(started.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
      const postgresPid = Number(fs.readFileSync(path.join(started.dir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
      const redisPid = Number(fs.readFileSync(path.join(started.dir, "redis.pid"), "utf8"));
      try {
        expect(await query(started.postgresUrl, "SELECT 2 AS two")).toEqual([{ two: 2 }]);
        const redis = new Redis(started.redisUrl);
        try {
          expect(await redis.ping()).toBe("PONG");
        } finally {
          redis.disconnect();
        }
      } finally {
        await run(process.execPath, [script, "stop", "--dir", started.dir]);
      }
      expect(fs.existsSync(started.dir)).toBe(false);
      expect(alive(postgresPid)).toBe(false);
      expect(alive(redisPid)).toBe(false);
    },
    SERVICES_TIMEOUT_MS,
  );

  it("fails with one line and a non-zero exit code", async () => {
    const outcomes = await Promise.all(
      [["stop", "--dir", path.join(ROOT, "no-such-folder")], ["stop", "--dir", ROOT], ["install", "mysql"], ["launch"]].map((args) =>
        run(process.execPath, [script, ...args]).then(
          () => ({ code: 0, stderr: "" }),
          (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
        ),
      ),
    );
    for (const { code, stderr } of outcomes) {
      expect(code).toBe(1);
      expect(stderr).toMatch(/^services: [^\n]+\n$/);
    }
    expect(outcomes.map((o) => o.stderr)).toEqual([
      expect.stringContaining("does not exist"),
      expect.stringContaining("is not a services folder"),
      expect.stringContaining('unknown service "mysql"'),
      expect.stringContaining('unknown command "launch"'),
    ]);
  });
});
