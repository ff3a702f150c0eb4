// A page of another origin sees only "Failed to fetch" when runledger refuses it:
// the server log says what was refused (method, path, origin) so whoever runs it
// knows to list the origin in CORS_ORIGINS, and repeats cannot flood the log.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses } from "../testkit/app.ts";
import type { ServerProcess } from "../testkit/processes.ts";
import { REFUSAL_LOG_LINES_PER_INTERVAL } from "../src/server/cors.ts";

const startServer = trackedServerProcesses();
let fake: FakeOllama;
let server: ServerProcess;

beforeAll(async () => {
  fake = await startFakeOllama();
  server = await startServer({ DATABASE_URL: tempDatabaseUrl("runledger-cors-").url, OLLAMA_HOST: fake.url, CORS_ORIGINS: "https://app.example" });
}, PROCESS_TEST_TIMEOUT_MS);
afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

function refusals(): Record<string, unknown>[] {
  return server
    .output()
    .split("\n")
    .filter((line) => line.includes("cross-origin request refused"))
    .map((line) => JSON.parse(line));
}

const post = (origin: string, path = "/graphql") =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { origin, "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });

describe("a refused origin", () => {
  it("is logged once (warn) with method, path and origin, and its repeats are not", async () => {
    const response = await post("https://page.example", "/graphql?x=1");
    expect(response.status).toBe(403);
    await vi.waitFor(() => expect(refusals()).toHaveLength(1));
    expect(refusals()[0]).toMatchObject({ level: "warn", method: "POST", path: "/graphql", origin: "https://page.example" });
    expect(String(refusals()[0]!.msg)).toContain("CORS_ORIGINS");

    // A listed origin is not refused, and not logged.
    expect((await post("https://app.example")).status).toBe(200);
    for (let i = 0; i < 50; i++) expect((await post("https://page.example")).status).toBe(403);
    // The server answered every one of them: had it logged any, the line would be written by now.
    expect(refusals()).toHaveLength(1);
  });

  it("over a WebSocket too", async () => {
    const socket = new WebSocket(`${server.url.replace(/^http/, "ws")}/graphql`, "graphql-transport-ws", { origin: "https://socket.example" });
    const status = await new Promise<number>((resolve) => socket.once("unexpected-response", (_req, res) => resolve(res.statusCode!)));
    expect(status).toBe(403);
    await vi.waitFor(() => expect(refusals().map((r) => r.origin)).toContain("https://socket.example"));
    expect(refusals().find((r) => r.origin === "https://socket.example")).toMatchObject({ method: "GET", path: "/graphql" });
  });

  it("a flood from many origins writes a bounded number of lines", async () => {
    const before = refusals().length;
    for (let i = 0; i < 100; i++) expect((await post(`https://flood${i}.example`)).status).toBe(403);
    await vi.waitFor(() => expect(refusals().length).toBeGreaterThan(before));
    expect(refusals().length).toBeLessThanOrEqual(REFUSAL_LOG_LINES_PER_INTERVAL);
  });
});
