// Scenario: what proving who calls costs. `{ me { id } }` under autocannon with
// each credential (API_TOKEN, an API key, a JWT checked with an HS256 secret, a
// JWT checked against a JWKS the harness serves, its keys cached) beside a server
// with no authentication; and opening a graphql-ws connection (connect,
// connection_init, ack) with a JWT beside one without. Server CPU per request is
// counted from /proc, so it holds on a busy machine too.
import http from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { dist, scalar, type Row } from "../lib/report.ts";
import { percentiles } from "../lib/stats.ts";
import { startRunledger } from "../lib/runledger.ts";
import { load, type Load } from "./throughput.ts";
import { repetitions, type Scenario } from "./scenario.ts";
import { loadConfig } from "../../src/config.ts";
import { openStorage } from "../../src/storage/index.ts";
import { createApiKey } from "../../src/server/identity/api-keys.ts";

const SECRET = "a bench secret of at least thirty-two bytes";
const API_TOKEN = "bench-api-token";
const ME = JSON.stringify({ query: "{ me { id } }" });

/** A JWKS endpoint with one RSA key, and tokens it signs (an hour long). */
async function jwksServer(): Promise<{ url: string; sign(sub: string): Promise<string>; close(): Promise<void> }> {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "bench", alg: "RS256", use: "sig" };
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  return {
    url,
    sign: (sub) => new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: "bench" }).setSubject(sub).setIssuedAt().setExpirationTime("1h").sign(privateKey),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const hs256 = (sub: string) =>
  new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));

/** Opens a graphql-ws connection and waits for connection_ack; the milliseconds it took. */
async function connectOnce(url: string, authorization?: string): Promise<number> {
  const started = performance.now();
  const ws = new WebSocket(url.replace(/^http/, "ws") + "/graphql", "graphql-transport-ws");
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => ws.send(JSON.stringify({ type: "connection_init", payload: authorization ? { authorization } : {} })));
    ws.on("message", (data) => (JSON.parse(String(data)).type === "connection_ack" ? resolve() : undefined));
    ws.once("close", (code) => reject(new Error(`closed with ${code} before connection_ack`)));
    ws.once("error", reject);
  });
  const elapsed = performance.now() - started;
  ws.close();
  return elapsed;
}

export const auth: Scenario = {
  name: "auth",
  title: "What authentication costs",
  async run(options) {
    const reps = repetitions(options, 3);
    const seconds = options.quick ? 2 : 4;
    const sockets = options.quick ? 50 : 300;
    const jwks = await jwksServer();
    const open = await startRunledger({ modelUrl: options.modelUrl });
    // Two servers with auth: one verifying JWTs with a secret, one against the JWKS (API_TOKEN and keys work on both).
    const withSecret = await startRunledger({ modelUrl: options.modelUrl, env: { API_TOKEN, AUTH_JWT_SECRET: SECRET } });
    const withJwks = await startRunledger({ modelUrl: options.modelUrl, env: { API_TOKEN, AUTH_JWKS_URL: jwks.url } });
    const results = new Map<string, Load[]>();
    const connects = new Map<string, number[][]>();
    try {
      const key = await createKey(withSecret.databaseFile);
      const cases = [
        { name: "no authentication", server: open, authorization: undefined },
        { name: "API_TOKEN", server: withSecret, authorization: `Bearer ${API_TOKEN}` },
        { name: "an API key (looked up in the database)", server: withSecret, authorization: `Bearer ${key}` },
        { name: "a JWT, HS256 secret", server: withSecret, authorization: `Bearer ${await hs256("alice")}` },
        { name: "a JWT, RS256 from a JWKS (keys cached)", server: withJwks, authorization: `Bearer ${await jwks.sign("alice")}` },
      ];
      for (const c of cases) {
        const headers: Record<string, string> = c.authorization ? { authorization: c.authorization } : {};
        const check = await fetch(`${c.server.url}/graphql`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: ME });
        if (!check.ok) throw new Error(`${c.name}: ${check.status} ${await check.text()}`);
        await load(c.server, `${c.server.url}/graphql`, ME, 1, headers); // warm-up (and the JWKS fetched once)
        results.set(c.name, []);
        connects.set(c.name, []);
        for (let rep = 0; rep < reps; rep++) {
          const measured = await load(c.server, `${c.server.url}/graphql`, ME, seconds, headers);
          results.get(c.name)!.push(measured);
          const times: number[] = [];
          for (let i = 0; i < sockets; i++) times.push(await connectOnce(c.server.url, c.authorization));
          connects.get(c.name)!.push(times);
          options.log(
            `  rep ${rep + 1}/${reps} ${c.name}: ${Math.round(measured.rps)} req/s, ${measured.cpuPerRequest.toFixed(3)} ms CPU/request (${measured.failures} failed)`,
          );
        }
      }
    } finally {
      await Promise.all([open.stop(), withSecret.stop(), withJwks.stop()]);
      await jwks.close();
    }
    const rows: Row[] = [];
    const none = results.get("no authentication")!;
    const noneConnects = connects.get("no authentication")!;
    for (const [name, runs] of results) {
      if (name === "no authentication") continue;
      rows.push({
        scenario: "auth",
        case: `{ me { id } } with ${name}`,
        metric: "requests/s, 50 connections",
        runledger: scalar(
          "req/s",
          runs.map((r) => r.rps),
          true,
        ),
        baseline: {
          label: "no authentication",
          measure: scalar(
            "req/s",
            none.map((r) => r.rps),
            true,
          ),
        },
        notes: runs.some((r) => r.failures) ? [`${runs.reduce((n, r) => n + r.failures, 0)} failed requests`] : undefined,
      });
      rows.push({
        scenario: "auth",
        case: `{ me { id } } with ${name}`,
        metric: "server CPU per request",
        runledger: scalar(
          "ms",
          runs.map((r) => r.cpuPerRequest),
        ),
        baseline: {
          label: "no authentication",
          measure: scalar(
            "ms",
            none.map((r) => r.cpuPerRequest),
          ),
        },
      });
      rows.push({
        scenario: "auth",
        case: `graphql-ws connect to ack with ${name}`,
        metric: "connection time, one at a time",
        runledger: dist(
          "ms",
          connects.get(name)!.map((times) => percentiles(times)),
        ),
        baseline: {
          label: "no authentication",
          measure: dist(
            "ms",
            noneConnects.map((times) => percentiles(times)),
          ),
        },
      });
    }
    return { rows, notes: [`${sockets} WebSocket connections per repetition, opened one after another; HTTP load ${seconds} s per repetition.`] };
  },
};

/** An API key of a user, made on the server's own database file (SQLite serves several processes), as `npm run keys` makes one. */
async function createKey(databaseFile: string): Promise<string> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: `file:${databaseFile}` }));
  try {
    return (await createApiKey(storage.apiKeys, { userId: "alice", role: "user", label: "bench" })).key;
  } finally {
    await storage.close();
  }
}
