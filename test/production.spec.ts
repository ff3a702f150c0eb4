// The production entry point: `npm run build` writes dist/main.js, and
// `node dist/main.js` is the server's own process, so a supervisor's SIGTERM
// reaches it: active runs are recorded INTERRUPTED and it exits 0. `npm start`
// is not that: SIGTERM to npm's pid leaves the server running without it. And
// the same build on Node 22.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { CONVERSATION, RUN, START_AGENT_RUN, START_RUN } from "../testkit/documents.ts";
import { graphModuleLayout } from "../testkit/graph-layout.ts";
import { buildServer, DIST_MAIN, isAlive, node22, NODE22_VERSION, startListening, type ProcessServer } from "../testkit/built.ts";

let fake: FakeOllama;
const started: ProcessServer[] = [];
const groups: number[] = [];

beforeAll(async () => {
  await buildServer();
  fake = await startFakeOllama();
  // "slow ..." streams one token and then stalls, like a model still thinking.
  fake.setResponder((request) =>
    request.messages.findLast((m) => m.role === "user")?.content.startsWith("slow") ? { kind: "silence", tokens: ["Partial "] } : defaultResponder(request),
  );
}, 60_000);
afterAll(async () => {
  for (const group of groups) killGroup(group);
  for (const server of started) if (isAlive(server.pid)) process.kill(server.pid, "SIGKILL");
  await fake?.close();
});

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * Node options under which importing esbuild or tsx fails, as where only the
 * production dependencies are installed (a module resolve hook refuses them).
 */
const REFUSE_DEV_TOOLS = (() => {
  const hooks = `export async function resolve(specifier, context, next) {
    if (/^(esbuild|tsx)(\\/|$)/.test(specifier)) throw new Error(specifier + " is a development dependency");
    return next(specifier, context);
  }`;
  const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
  return ["--import", `data:text/javascript,${encodeURIComponent(register)}`];
})();

const env = (databaseUrl: string) => ({ DATABASE_URL: databaseUrl, OLLAMA_HOST: fake.url, MODEL_IDLE_TIMEOUT_MS: "600000", SHUTDOWN_TIMEOUT_MS: "5000" });

async function start(url: string, message: string): Promise<string> {
  const { startRun } = await gqlOk(url, START_RUN, { message });
  if (startRun.__typename !== "StartRunSuccess") throw new Error(JSON.stringify(startRun));
  return startRun.run.id;
}

/** Starts a run the fake model stalls, and waits until the model has been asked. */
async function startStalledRun(url: string, message: string): Promise<string> {
  const runId = await start(url, message);
  await vi.waitFor(() => expect(fake.requests.some((r) => r.messages.at(-1)?.content === message)).toBe(true));
  return runId;
}

function statuses(file: string): Record<string, { status: string; error_code: string | null }> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare("SELECT id, status, error_code FROM runs").all() as { id: string; status: string; error_code: string | null }[];
    return Object.fromEntries(rows.map((r) => [r.id, { status: r.status, error_code: r.error_code }]));
  } finally {
    db.close();
  }
}

/** One completed run, one active when the signal goes to the server's pid; the exit code and what was recorded. */
async function runThenSignal(server: ProcessServer, file: string, signal: NodeJS.Signals, tag: string) {
  const done = await start(server.url, `answered on ${tag}`);
  expect((await waitForRun(server.url, done)).status).toBe("COMPLETED");
  const active = await startStalledRun(server.url, `slow on ${tag}`);
  process.kill(server.pid, signal);
  const code = await server.exited;
  return { code, runs: statuses(file), done, active };
}

describe("node dist/main.js (npm run build)", () => {
  it("is the server's own process: SIGTERM to it records the active run INTERRUPTED and exits 0", async () => {
    const db = tempDatabaseUrl("runledger-built-");
    const server = await startListening(process.execPath, [DIST_MAIN], env(db.url));
    started.push(server);
    expect(server.pid).toBe(server.child.pid);
    // The build finds its files from dist/: the migrations (the database above is new) and the built console.
    const consolePage = await fetch(`${server.url}/console`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toContain("<script");
    // GraphiQL's page, rendered in a worker thread that loads its package from dist/'s node_modules.
    const graphiql = await fetch(`${server.url}/graphql`, { headers: { accept: "text/html" } });
    expect(graphiql.status).toBe(200);
    expect(await graphiql.text()).toContain("<title>runledger</title>");

    const { code, runs, done, active } = await runThenSignal(server, db.file, "SIGTERM", "node 20");
    expect(code).toBe(0);
    expect(runs[done]).toEqual({ status: "completed", error_code: null });
    expect(runs[active]).toEqual({ status: "interrupted", error_code: "INTERRUPTED" });
    expect(server.output()).toContain('"signal":"SIGTERM"');
  });

  it("serves the console built beside it, with esbuild and tsx (development dependencies) out of reach", async () => {
    const db = tempDatabaseUrl("runledger-built-");
    const server = await startListening(process.execPath, [...REFUSE_DEV_TOOLS, DIST_MAIN], env(db.url));
    started.push(server);
    const built = path.join(path.dirname(DIST_MAIN), "console");
    const page = await fetch(`${server.url}/console`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toBe(fs.readFileSync(path.join(built, "index.html"), "utf8"));
    const script = /<script type="module" src="\/console\/(app-[A-Z0-9]+\.js)">/.exec(html)?.[1];
    expect(script).toBeDefined();
    const served = Buffer.from(await (await fetch(`${server.url}/console/${script}`)).arrayBuffer());
    expect(served.equals(fs.readFileSync(path.join(built, script!)))).toBe(true);
    process.kill(server.pid, "SIGTERM");
    expect(await server.exited).toBe(0);
    expect(server.output()).not.toContain("is a development dependency");
  });

  it("SIGINT likewise", async () => {
    const db = tempDatabaseUrl("runledger-built-");
    const server = await startListening(process.execPath, [DIST_MAIN], env(db.url));
    started.push(server);
    const { code, runs, active } = await runThenSignal(server, db.file, "SIGINT", "sigint");
    expect(code).toBe(0);
    expect(runs[active]).toEqual({ status: "interrupted", error_code: "INTERRUPTED" });
  });

  it("loads a JavaScript graph module from a folder whose package.json says commonjs as an ES module, and runs it", async () => {
    const layout = graphModuleLayout();
    const db = tempDatabaseUrl("runledger-built-");
    try {
      const config = layout.config({ echo: { type: "graph", module: "legacy/graphs/echo.js" } });
      const server = await startListening(process.execPath, [DIST_MAIN], { ...env(db.url), RUNLEDGER_CONFIG: config });
      started.push(server);
      const { startRun } = await gqlOk(server.url, START_AGENT_RUN, { message: "hello", agent: "echo" });
      expect((await waitForRun(server.url, startRun.run.id)).status).toBe("COMPLETED");
      const { conversation } = await gqlOk(server.url, CONVERSATION, { id: startRun.conversation.id });
      expect(conversation.messages.at(-1).content).toBe("echo: hello");
      process.kill(server.pid, "SIGTERM");
      expect(await server.exited).toBe(0);
    } finally {
      db.remove();
      layout.remove();
    }
  });
});

describe("npm start (development)", () => {
  it("is not a supervisor: SIGTERM to npm's pid ends npm and leaves the server running, its run still active", async () => {
    const db = tempDatabaseUrl("runledger-npm-start-");
    // Its own process group, so everything it starts can be cleaned up after.
    const server = await startListening("npm", ["start"], env(db.url), { detached: true });
    groups.push(server.child.pid!);
    started.push(server);
    expect(server.pid).not.toBe(server.child.pid);
    // With no build step: the server bundles the console from its sources.
    const consolePage = await fetch(`${server.url}/console`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toContain("<script");
    const active = await startStalledRun(server.url, "slow under npm");

    process.kill(server.child.pid!, "SIGTERM");
    await server.exited;
    // npm is gone; the server never heard of it.
    expect(isAlive(server.pid)).toBe(true);
    expect((await gqlOk(server.url, RUN, { id: active })).run.status).toBe("RUNNING");
    expect(server.output()).not.toContain("shutting down");
    expect(statuses(db.file)[active]!.status).toBe("running");

    // Signalled at its own pid, it stops as it should.
    process.kill(server.pid, "SIGTERM");
    await vi.waitFor(() => expect(isAlive(server.pid)).toBe(false), { timeout: 20_000 });
    expect(statuses(db.file)[active]).toEqual({ status: "interrupted", error_code: "INTERRUPTED" });
  }, 90_000);
});

describe(`Node ${NODE22_VERSION}`, () => {
  it(
    "runs the built server: a run with the model, SIGTERM, the active run INTERRUPTED, exit 0",
    async () => {
      // Downloaded and prepared once per checkout (.cache/), then reused.
      const { node, app } = await node22();
      expect(execFileSync(node, ["--version"], { encoding: "utf8" }).trim()).toBe(`v${NODE22_VERSION}`);
      const db = tempDatabaseUrl("runledger-node22-");
      const server = await startListening(node, [path.join(app, "dist", "main.js")], env(db.url), { cwd: app });
      started.push(server);
      const { code, runs, done, active } = await runThenSignal(server, db.file, "SIGTERM", "node 22");
      expect(code).toBe(0);
      expect(runs[done]).toEqual({ status: "completed", error_code: null });
      expect(runs[active]).toEqual({ status: "interrupted", error_code: "INTERRUPTED" });
    },
    // The first run downloads Node 22 and compiles better-sqlite3 for it.
    600_000,
  );
});
