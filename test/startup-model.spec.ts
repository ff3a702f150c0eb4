// At start-up the server checks once, after it listens and without waiting for
// the answer, whether Ollama serves OLLAMA_MODEL and each agent's own model, and
// says in the log what is wrong (and which variable to look at) rather than
// leaving it to the first run; /ready names the same.
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { closedPort, PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses } from "../testkit/app.ts";
import type { ServerProcess } from "../testkit/processes.ts";

const startServer = trackedServerProcesses();
let withModel: FakeOllama;
let withoutModel: FakeOllama;
/** Accepts connections and never answers: an Ollama that hangs. */
let silent: net.Server;
const held: net.Socket[] = [];

let unreachable: ServerProcess;
let notPulled: ServerProcess;
let fine: ServerProcess;
let hanging: ServerProcess;
/** OLLAMA_MODEL is served; the agents' "llama3.2" is not. */
let agentMissing: ServerProcess;
/** Whether the hanging server had said anything about Ollama when it started listening. */
let hangingSaidAtStart: Record<string, unknown>[] = [];

beforeAll(async () => {
  withModel = await startFakeOllama({ models: ["qwen3"] });
  withoutModel = await startFakeOllama({ models: ["llama3.2"] });
  silent = net.createServer((socket) => held.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  // The four start together: a process start is the slow part.
  const silentPort = (silent.address() as net.AddressInfo).port;
  const agents = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "runledger-startup-agents-")), "agents.json");
  fs.writeFileSync(
    agents,
    JSON.stringify({ agents: { default: { type: "chat" }, careful: { type: "chat", model: "llama3.2" }, terse: { type: "chat", model: "llama3.2" } } }),
  );
  [unreachable, notPulled, fine, hanging, agentMissing] = await Promise.all([
    serve(`http://127.0.0.1:${await closedPort()}`),
    serve(withoutModel.url),
    serve(withModel.url),
    serve(`http://127.0.0.1:${silentPort}`).then((server) => {
      hangingSaidAtStart = about(server);
      return server;
    }),
    serve(withModel.url, { RUNLEDGER_CONFIG: agents }),
  ]);
}, PROCESS_TEST_TIMEOUT_MS);
afterAll(async () => {
  await withModel?.close();
  await withoutModel?.close();
  for (const socket of held) socket.destroy();
  await new Promise((resolve) => silent?.close(resolve));
});

const lines = (server: ServerProcess) =>
  server
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const about = (server: ServerProcess) => lines(server).filter((l) => /Ollama/.test(String(l.msg)));

function serve(ollamaHost: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  return startServer({ DATABASE_URL: tempDatabaseUrl("runledger-startup-").url, OLLAMA_HOST: ollamaHost, OLLAMA_MODEL: "qwen3", ...env });
}

describe("start-up says whether Ollama serves the model", () => {
  it(
    "warns when Ollama is unreachable (OLLAMA_HOST) or lacks the model (OLLAMA_MODEL), and says so when it serves it",
    async () => {
      await vi.waitFor(() => expect(about(unreachable)).toHaveLength(1), { timeout: 10_000 });
      const [down] = about(unreachable);
      expect(down).toMatchObject({ level: "warn", OLLAMA_HOST: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), OLLAMA_MODEL: "qwen3" });
      expect(down!.msg).toMatch(/cannot be reached at OLLAMA_HOST .*ECONNREFUSED.*MODEL_UNAVAILABLE/);

      await vi.waitFor(() => expect(about(notPulled)).toHaveLength(1), { timeout: 10_000 });
      const [missing] = about(notPulled);
      expect(missing).toMatchObject({ level: "warn", OLLAMA_HOST: withoutModel.url, OLLAMA_MODEL: "qwen3" });
      expect(missing!.msg).toMatch(/OLLAMA_MODEL=qwen3.*MODEL_NOT_FOUND.*`ollama pull qwen3`/);

      await vi.waitFor(() => expect(about(fine)).toHaveLength(1), { timeout: 10_000 });
      expect(about(fine)[0]).toMatchObject({ level: "info", msg: "Ollama serves the model" });

      // Each said after "runledger listening": the check never held start-up back.
      for (const server of [unreachable, notPulled, fine]) {
        const messages = lines(server).map((l) => l.msg);
        expect(messages.indexOf("runledger listening")).toBeLessThan(messages.findIndex((m) => /Ollama/.test(String(m))));
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "warns about an agent's own model that Ollama lacks, naming its agents, and /ready names it too",
    async () => {
      await vi.waitFor(() => expect(about(agentMissing)).toHaveLength(1), { timeout: 10_000 });
      const [warning] = about(agentMissing);
      expect(warning).toMatchObject({ level: "warn", model: "llama3.2", agents: ["careful", "terse"] });
      expect(warning!.msg).toMatch(/model llama3\.2 of agents "careful", "terse" \(RUNLEDGER_CONFIG\).*MODEL_NOT_FOUND.*`ollama pull llama3\.2`/);
      const ready = await fetch(`${agentMissing.url}/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        ready: false,
        database: "ok",
        model: "error: model llama3.2 is not pulled",
        events: "ok",
        retention: { state: "standby", lastSweepAt: null, lastError: null },
      });
      expect((await fetch(`${fine.url}/ready`)).status).toBe(200);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "does not wait for an Ollama that never answers: the server serves at once and warns after the check times out",
    async () => {
      expect(hangingSaidAtStart).toEqual([]);
      expect((await fetch(`${hanging.url}/health`)).status).toBe(200);
      await vi.waitFor(() => expect(about(hanging)).toHaveLength(1), { timeout: 10_000 });
      expect(about(hanging)[0]).toMatchObject({ level: "warn" });
      expect(about(hanging)[0]!.msg).toMatch(/cannot be reached at OLLAMA_HOST .*(timeout|aborted)/i);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
