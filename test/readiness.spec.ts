// /ready says why: the database, the event bus (Redis, here behind a TCP proxy
// the test cuts and restores) and the model take the instance out of rotation
// (503); an MCP server that is down only degrades it (200, degraded), and the
// same metrics show it down.
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp } from "../testkit/app.ts";
import { postgresDatabase, redisServer, uniqueName } from "../testkit/services.ts";
import { until } from "../testkit/streaming.ts";
import { parsePrometheus, sampleValue } from "../testkit/prometheus.ts";
import type { App } from "../src/app.ts";

/** A TCP proxy to `target` on a fixed port that can be cut (listener closed, connections destroyed) and restored. */
async function tcpProxy(target: URL): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const listen = async () => {
    if (server?.listening) return;
    server = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("close", () => sockets.delete(s));
        s.on("error", () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server!.once("error", reject);
      server!.listen(port, "127.0.0.1", resolve);
    });
    port = (server!.address() as net.AddressInfo).port;
  };
  const cut = async () => {
    if (!server?.listening) return;
    const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  await listen();
  return { port, cut, restore: listen, close: cut };
}

let fake: FakeOllama;
beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

const ready = async (app: App) => {
  const response = await fetch(`${app.url}/ready`, { signal: AbortSignal.timeout(5000) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe("/ready", () => {
  it("names the event bus: Redis out of reach takes the instance out of rotation until it is back", async () => {
    const [redis, database] = await Promise.all([redisServer(), postgresDatabase()]);
    const proxy = await tcpProxy(new URL(redis.url));
    const app = await startTestApp({
      ollamaUrl: fake.url,
      env: { DATABASE_URL: database.url, REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_KEY_PREFIX: `${uniqueName("ready")}:` },
    });
    try {
      expect(await ready(app)).toEqual({
        status: 200,
        body: { ready: true, database: "ok", model: "ok", events: "ok", retention: { state: "standby", lastSweepAt: null, lastError: null } },
      });
      await proxy.cut();
      const down = await until(async () => {
        const r = await ready(app);
        return r.status === 503 ? r : undefined;
      }, "a 503 once Redis is cut off");
      expect(down.body).toMatchObject({ ready: false, database: "ok", model: "ok" });
      expect(down.body.events).toMatch(/^error: Redis (command|subscriber) connection is \w+|^error: Redis did not answer PING/);
      await proxy.restore();
      await new Promise((x) => setTimeout(x, 3000));
      await until(async () => (await ready(app)).status === 200, "ready again once Redis is back");
    } finally {
      await proxy.restore();
      await app.close();
      await proxy.close();
      await database.drop();
    }
  });

  it("an MCP server that is down degrades the instance but keeps it in rotation; /metrics shows it down", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-ready-"));
    const file = path.join(dir, "agents.json");
    const server = (env: Record<string, string>) => ({
      command: process.execPath,
      args: [path.join(ROOT, "test", "fixtures", "mcp", "stdio-server.mjs")],
      env,
    });
    fs.writeFileSync(
      file,
      JSON.stringify({
        agents: {
          default: { type: "chat" },
          tooled: {
            type: "chat",
            mcpServers: { files: server({ MCP_FIXTURE_NAME: "files" }), broken: server({ MCP_FIXTURE_FAIL_START: "FILES_ROOT is not set" }) },
          },
        },
      }),
    );
    const app = await startTestApp({ ollamaUrl: fake.url, env: { RUNLEDGER_CONFIG: file } });
    try {
      const { status, body } = await ready(app);
      expect(status).toBe(200);
      expect(body).toEqual({
        ready: true,
        database: "ok",
        model: "ok",
        events: "ok",
        mcpServers: { "tooled/files": "ok", "tooled/broken": "down: the process exited with code 2 before it was ready" },
        degraded: true,
        retention: { state: "standby", lastSweepAt: null, lastError: null },
      });
      const metrics = parsePrometheus(await (await fetch(`${app.url}/metrics`)).text());
      expect(sampleValue(metrics, "runledger_mcp_server_up", { agent: "tooled", server: "files" })).toBe(1);
      expect(sampleValue(metrics, "runledger_mcp_server_up", { agent: "tooled", server: "broken" })).toBe(0);
    } finally {
      await app.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
