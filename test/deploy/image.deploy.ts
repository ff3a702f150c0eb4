// The image, built from the repository's Dockerfile and run (npm run
// test:deploy, not part of npm test): buildah builds it with chroot isolation
// on a Debian bookworm base with Node 22 made here (test/deploy/buildah.ts),
// then runs the image's own entrypoint and command on the host's network, as
// the non-root user node, against the fake model: on the SQLite default in
// /data, and on a real PostgreSQL and Redis after `runledger migrate`. Each
// serves /ready and a run, and stops on SIGTERM to its first process (tini,
// as `docker stop` would), recording the active run INTERRUPTED, exit 0.
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ROOT } from "../../testkit/app.ts";
import { NODE22_VERSION } from "../../testkit/built.ts";
import { RUN, START_RUN } from "../../testkit/documents.ts";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { gql } from "../../testkit/graphql.ts";
import { postgresDatabase, redisDatabase, SERVICES_TIMEOUT_MS } from "../../testkit/services.ts";
import {
  BASE_IMAGE,
  buildImage,
  descendants,
  commandLine,
  ensureBase,
  ensureTools,
  exec,
  IMAGE,
  imageConfig,
  imageSize,
  log,
  newContainer,
  removeContainer,
  startServer,
  uidOf,
  type ImageConfig,
  type Started,
} from "./buildah.ts";

const PACKAGE = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
const TOKEN = "deploy-test-token-0123";
const auth = { authorization: `Bearer ${TOKEN}` };

let fake: FakeOllama;
let config: ImageConfig;
const containers: string[] = [];
const started: Started[] = [];
const timings: Record<string, number | string> = {};

beforeAll(async () => {
  const began = Date.now();
  await ensureTools();
  timings.baseSeconds = await ensureBase();
  timings.buildSeconds = await buildImage();
  timings.imageSize = await imageSize(IMAGE);
  timings.baseSize = await imageSize(BASE_IMAGE);
  timings.setupSeconds = (Date.now() - began) / 1000;
  config = await imageConfig(IMAGE);
  fake = await startFakeOllama();
  // "slow ..." streams one token and then stalls, like a model still thinking.
  fake.setResponder((request) =>
    request.messages.findLast((m) => m.role === "user")?.content.startsWith("slow") ? { kind: "silence", tokens: ["Partial "] } : defaultResponder(request),
  );
});

afterAll(async () => {
  for (const server of started) if (server.child.exitCode === null) server.child.kill("SIGKILL");
  for (const container of containers) await removeContainer(container);
  await fake?.close();
  const summary = `base ${timings.baseSeconds} s (0: reused), image build ${timings.buildSeconds} s, image ${timings.imageSize} (base ${timings.baseSize})`;
  log(summary);
  fs.mkdirSync(path.join(ROOT, "test-results"), { recursive: true });
  fs.writeFileSync(path.join(ROOT, "test-results", "deploy-image.json"), `${JSON.stringify(timings, null, 2)}\n`);
});

interface LockEntry {
  dev?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/**
 * The lockfile's packages (by install path) that the root's dependencies reach, as Node resolves them (the nearest
 * node_modules up from the requiring package): `reached` through dependencies, optional dependencies and required
 * peers, `required` without optional dependencies (which may not install on every platform).
 */
function productionTree(packages: Record<string, LockEntry>): { reached: Set<string>; required: Set<string> } {
  const walk = (withOptional: boolean) => {
    const found = new Set<string>();
    const visit = (from: string) => {
      const entry = packages[from]!;
      const names = [
        ...Object.keys(entry.dependencies ?? {}),
        ...(withOptional ? Object.keys(entry.optionalDependencies ?? {}) : []),
        ...Object.keys(entry.peerDependencies ?? {}).filter((peer) => !entry.peerDependenciesMeta?.[peer]?.optional),
      ];
      // "node_modules/a/node_modules/@s/b" is a, then @s/b.
      const chain = from.split(/(?:^|\/)node_modules\//).filter(Boolean);
      for (const name of names) {
        const candidates = chain.map((_, i) => `node_modules/${[...chain.slice(0, chain.length - i), name].join("/node_modules/")}`);
        const key = [...candidates, `node_modules/${name}`].find((candidate) => packages[candidate]);
        if (key === undefined) {
          if (withOptional && entry.optionalDependencies?.[name]) continue;
          throw new Error(`${from || "the root"}: ${name} is not in package-lock.json`);
        }
        if (!found.has(key)) {
          found.add(key);
          visit(key);
        }
      }
    };
    visit("");
    return found;
  };
  return { reached: walk(true), required: walk(false) };
}

async function container(): Promise<string> {
  const name = await newContainer(IMAGE);
  containers.push(name);
  return name;
}

/** The environment every run gets: the fake model and the token. tini is not PID 1 under buildah run: a subreaper is the nearest. */
const baseEnv = () => ({
  OLLAMA_HOST: fake.url,
  API_TOKEN: TOKEN,
  PORT: "0",
  MODEL_IDLE_TIMEOUT_MS: "600000",
  SHUTDOWN_TIMEOUT_MS: "5000",
  TINI_SUBREAPER: "1",
});

async function serve(name: string, env: Record<string, string>): Promise<Started> {
  const server = await startServer(name, [...config.Entrypoint, ...config.Cmd], { ...baseEnv(), ...env });
  started.push(server);
  return server;
}

async function startRun(url: string, message: string): Promise<string> {
  const { data, errors } = await gql(url, START_RUN, { message }, auth);
  expect(errors).toBeUndefined();
  expect(data.startRun.__typename).toBe("StartRunSuccess");
  return data.startRun.run.id;
}

async function runOf(url: string, id: string): Promise<{ status: string; partialOutput: string | null }> {
  const { data, errors } = await gql(url, RUN, { id }, auth);
  expect(errors).toBeUndefined();
  return data.run;
}

/** /ready, a completed run, a stalled one, SIGTERM to the container's first process: exit 0. Returns the stalled run's id. */
async function serveAndStop(server: Started, tag: string): Promise<{ done: string; active: string }> {
  const ready = await fetch(`${server.url}/ready`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ ready: true, database: "ok", model: "ok", events: "ok" });
  // Unauthenticated calls are refused: the image listens on every interface.
  expect((await gql(server.url, "{ __typename }")).errors?.[0]?.extensions?.code).toBe("UNAUTHENTICATED");

  const done = await startRun(server.url, `answered on ${tag}`);
  await vi.waitFor(async () => expect((await runOf(server.url, done)).status).toBe("COMPLETED"), { timeout: 20_000, interval: 50 });
  const active = await startRun(server.url, `slow on ${tag}`);
  await vi.waitFor(() => expect(fake.requests.some((r) => r.messages.at(-1)?.content === `slow on ${tag}`)).toBe(true), { timeout: 20_000 });

  // The server runs as node (uid 1000), below tini.
  const first = server.firstPid();
  expect(commandLine(first)).toEqual(config.Entrypoint.concat(config.Cmd));
  const nodes = descendants(first).filter((pid) => commandLine(pid).some((arg) => arg.endsWith("dist/cli.js")));
  expect(nodes.length).toBeGreaterThan(0);
  for (const pid of [first, ...nodes]) expect(uidOf(pid), String(pid)).toBe(1000);

  process.kill(first, "SIGTERM");
  expect(await server.exited, server.output()).toBe(0);
  expect(server.output()).toContain('"signal":"SIGTERM"');
  return { done, active };
}

describe("the image", () => {
  it("is configured as the Dockerfile says: user node, tini, node dist/cli.js serve, /ready healthcheck, /data, port 4000", () => {
    expect(config.User).toBe("node");
    expect(config.Entrypoint).toEqual(["/usr/bin/tini", "--"]);
    expect(config.Cmd).toEqual(["node", "dist/cli.js", "serve"]);
    expect(config.WorkingDir).toBe("/app");
    expect(Object.keys(config.ExposedPorts)).toEqual(["4000/tcp"]);
    expect(Object.keys(config.Volumes)).toEqual(["/data"]);
    expect(config.Env).toEqual(expect.arrayContaining(["NODE_ENV=production", "HOST=0.0.0.0", "PORT=4000", "DATABASE_URL=file:/data/runledger.db"]));
    expect(config.Healthcheck.Test.slice(0, 2)).toEqual(["CMD", "node"]);
    expect(config.StopSignal).toBe("SIGTERM");
    expect(config.Labels["org.opencontainers.image.version"]).toBe(PACKAGE.version);
    expect(config.Labels["org.opencontainers.image.base.name"]).toBe(BASE_IMAGE);
    log(`${IMAGE}: ${timings.imageSize} (base ${timings.baseSize}); built in ${timings.buildSeconds} s`);
  });

  it("holds Node 22, the package and its production dependencies only, for the user node", async () => {
    const name = await container();
    const id = await exec(name, ["id"]);
    expect(id.stdout.trim()).toMatch(/^uid=1000\(node\) gid=1000\(node\)/);
    expect((await exec(name, ["node", "--version"])).stdout.trim()).toBe(`v${NODE22_VERSION}`);
    expect((await exec(name, ["runledger", "--version"])).stdout.trim()).toBe(PACKAGE.version);
    // Exactly the packages runledger's own dependencies reach in the lockfile: none that only development or a workspace
    // (the SDK packages, the examples) needs.
    const list =
      "const fs = require('fs'); console.log(JSON.stringify(fs.readdirSync('node_modules').flatMap((n) => n.startsWith('@') ? fs.readdirSync('node_modules/' + n).map((m) => n + '/' + m) : n.startsWith('.') ? [] : [n])))";
    const installed = new Set(JSON.parse((await exec(name, ["node", "-e", list])).stdout) as string[]);
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
    const { reached, required } = productionTree(lock.packages);
    const topLevel = (keys: Set<string>) => [...keys].filter((key) => !key.slice(13).includes("node_modules/")).map((key) => key.slice(13));
    expect([...installed].filter((name) => !topLevel(reached).includes(name))).toEqual([]);
    expect(topLevel(required).filter((name) => !installed.has(name))).toEqual([]);
    const devOnly = Object.entries(lock.packages)
      .filter(([key, entry]) => key.startsWith("node_modules/") && !key.slice(13).includes("node_modules/") && entry.dev)
      .map(([key]) => key.slice(13));
    expect(devOnly.length).toBeGreaterThan(100);
    expect(devOnly.filter((name) => installed.has(name))).toEqual([]);
    for (const tool of ["tsx", "typescript", "esbuild", "vitest", "prisma"]) expect(installed.has(tool), tool).toBe(false);
    expect(installed.has("better-sqlite3")).toBe(true);
    // The code and the volume: /app is root's (read-only to node), /data is node's.
    const owners = await exec(name, ["stat", "-c", "%U %a %n", "/app", "/app/dist/cli.js", "/data"]);
    expect(owners.stdout.trim().split("\n")).toEqual(["root 755 /app", "root 755 /app/dist/cli.js", "node 755 /data"]);
    expect((await exec(name, ["sh", "-c", "touch /app/x"])).code).not.toBe(0);
  });

  it("serves on the SQLite default in /data: /ready, its healthcheck, a run, and SIGTERM records the active run INTERRUPTED, exit 0", async () => {
    const name = await container();
    const server = await serve(name, {});
    expect(server.output()).toContain('"database":"/data/runledger.db"');
    // The image's HEALTHCHECK, run in the container beside the server.
    const port = new URL(server.url).port;
    expect((await exec(name, config.Healthcheck.Test.slice(1), { PORT: port })).code).toBe(0);
    const { done, active } = await serveAndStop(server, "sqlite");
    // The database stayed in the container's /data, the active run recorded INTERRUPTED.
    const rows = await exec(name, [
      "node",
      "-e",
      "const db = new (require('better-sqlite3'))('/data/runledger.db', { readonly: true }); console.log(JSON.stringify(db.prepare('SELECT id, status, error_code FROM runs').all()))",
    ]);
    const statuses = Object.fromEntries(
      (JSON.parse(rows.stdout) as { id: string; status: string; error_code: string | null }[]).map((r) => [r.id, [r.status, r.error_code]]),
    );
    expect(statuses[done]).toEqual(["completed", null]);
    expect(statuses[active]).toEqual(["interrupted", "INTERRUPTED"]);
    // No server: the healthcheck fails.
    expect((await exec(name, config.Healthcheck.Test.slice(1), { PORT: port })).code).toBe(1);
  });

  it(
    "migrates a PostgreSQL with `runledger migrate`, then serves on it and Redis: /ready, a run, SIGTERM, exit 0",
    async () => {
      const db = await postgresDatabase();
      const redis = await redisDatabase();
      try {
        const name = await container();
        // One process, as compose and the chart run it (the SQLite run above has the default: a primary and a worker per core).
        const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, WORKERS: "1" };
        const migrate = (args: string[]) => exec(name, [...config.Entrypoint, "runledger", "migrate", ...args], env);
        const pending = await migrate(["--check"]);
        expect(pending.code, pending.stderr).toBe(1);
        const applied = await migrate([]);
        expect(applied.code, applied.stderr).toBe(0);
        expect(applied.stdout).toMatch(/: applied \d+\n/);
        expect(await migrate(["--check"])).toMatchObject({ code: 0, stdout: expect.stringMatching(/: up to date\n$/) });

        const server = await serve(name, env);
        // Migrated already: the server applied nothing at start.
        expect(server.output()).not.toContain('"msg":"database migrated"');
        const { done, active } = await serveAndStop(server, "postgres");
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        try {
          const { rows } = await client.query<{ id: string; status: string; error_code: string | null }>("SELECT id, status, error_code FROM runs");
          const statuses = Object.fromEntries(rows.map((r) => [r.id, [r.status, r.error_code]]));
          expect(statuses[done]).toEqual(["completed", null]);
          expect(statuses[active]).toEqual(["interrupted", "INTERRUPTED"]);
        } finally {
          await client.end();
        }
      } finally {
        await db.drop();
        await redis.flush();
      }
    },
    SERVICES_TIMEOUT_MS,
  );
});
