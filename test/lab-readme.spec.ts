// The seed's lab lines as the README shows them (the sh block of "The seed's
// lab over REST"), run verbatim with bash against a real server process, in
// the order the block has them, and their outputs checked against what the
// seed's experiment observed.
//
// The block's comment lines stand for the seed's restarts: stop the server
// (Ctrl+C) and start it again with an unreachable model, then stop it and start
// it normally. A shell cannot do that to a server it did not start, so the
// test does it between the block's parts (SIGINT, then a new server process on
// the same database file) and runs each part's lines unchanged with bash, with
// B (the server's address), DB (its SQLite file) and C (the conversation the
// first part echoes) in the environment.
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { closedPort, PROCESS_TEST_TIMEOUT_MS, ROOT, tempDatabaseUrl } from "../testkit/app.ts";
import { startServerProcess, type ServerProcess } from "../testkit/processes.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The README's lab block, cut at its comment lines: one part per comment, with the lines under it. */
function labParts(): { comment: string; lines: string }[] {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = /^## The seed's lab over REST\n([^]*?)^## /m.exec(readme)?.[1];
  if (!section) throw new Error(`README.md has no section "The seed's lab over REST"`);
  const block = /```sh\n([^]*?)```/.exec(section)?.[1];
  if (!block) throw new Error(`README.md's section "The seed's lab over REST" has no sh block`);
  const parts: { comment: string; lines: string[] }[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("# ")) parts.push({ comment: line, lines: [] });
    else if (line !== "") {
      if (!parts.length) throw new Error(`the lab block starts with a command, not a comment: ${line}`);
      parts.at(-1)!.lines.push(line);
    }
  }
  return parts.map((p) => ({ comment: p.comment, lines: p.lines.join("\n") }));
}

/** Runs lines with bash (errors and failed pipes stop it), as a terminal with B, DB and C set would. */
function bash(lines: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile("bash", ["-e", "-o", "pipefail", "-c", lines], { env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`bash failed (${error.message}):\n${lines}\nstdout:\n${stdout}\nstderr:\n${stderr}`)) : resolve(stdout),
    ),
  );
}

/** Every `data: {...}` line of an event stream's output, parsed. */
function dataLines(output: string): any[] {
  return [...output.matchAll(/data: (\{.*\})$/gm)].map((m) => JSON.parse(m[1]!));
}

/** The run ids the `curl -s -X POST $B/api/chat` lines printed. */
function postedRuns(output: string): string[] {
  return [...output.matchAll(/\{"conversation":"[0-9a-f-]{36}","run":"([0-9a-f-]{36})"\}/g)].map((m) => m[1]!);
}

let fake: FakeOllama;
const db = tempDatabaseUrl("runledger-lab-readme-");
let server: ServerProcess | undefined;

beforeAll(async () => {
  // The lines call curl, jq and sqlite3 (Debian packages of the same names).
  for (const program of ["curl", "jq", "sqlite3"]) {
    if (spawnSync("which", [program]).status !== 0)
      throw new Error(`${program} not found: install Debian's ${program} (apt-get install -y --no-install-recommends ${program})`);
  }
  fake = await startFakeOllama();
});
afterAll(async () => {
  await server?.stop("SIGKILL");
  await fake?.close();
  db.remove();
});

/** Stops the server (Ctrl+C) if one runs, and starts it on the same database file with the model at `ollamaHost`. */
async function restart(ollamaHost: string): Promise<string> {
  if (server) expect(await server.stop("SIGINT")).toBe(0);
  server = await startServerProcess({ DATABASE_URL: db.url, OLLAMA_HOST: ollamaHost });
  return server.url;
}

describe("the README's lab lines, run with bash", () => {
  it(
    "give what the seed's experiment observed (run 3 failing with MODEL_UNAVAILABLE where the seed recorded AGENT_FAILURE)",
    async () => {
      const parts = labParts();
      expect(parts.map((p) => p.comment.slice(0, 12))).toEqual(["# Run 1 and ", "# Run 3: sto", "# Run 4: sto", "# Inspect:"]);
      const [turns, failing, resume, inspect] = parts as [(typeof parts)[0], (typeof parts)[0], (typeof parts)[0], (typeof parts)[0]];

      // Run 1 and run 2: two completed turns; `echo $C` prints the conversation.
      let B = await restart(fake.url);
      const out1 = await bash(turns.lines, { B, DB: db.file });
      const C = out1.trimEnd().split("\n").at(-1)!;
      expect(C).toMatch(UUID);
      // Each `| tail -2` ends with the end event's data line (then the blank line closing the event).
      expect(dataLines(out1)).toEqual([
        { conversation: C, status: "completed" },
        { conversation: C, status: "completed" },
      ]);
      expect(out1).toContain(`data: {"conversation":"${C}","status":"completed"}\n\n`);
      const runIds = postedRuns(out1);
      expect(runIds).toHaveLength(1);

      // Run 3: restarted with the model unreachable; the stream ends with chat-error.
      B = await restart(`http://127.0.0.1:${await closedPort()}`);
      const out3 = await bash(failing.lines, { B, DB: db.file, C });
      runIds.push(...postedRuns(out3));
      expect(runIds).toHaveLength(2);
      expect([...out3.matchAll(/^event: (.+)$/gm)].at(-1)?.[1]).toBe("chat-error");
      const error = dataLines(out3).at(-1);
      expect(error).toMatchObject({ code: "MODEL_UNAVAILABLE", message: expect.stringMatching(/fetch failed/) });

      // Run 4: restarted normally; the resume completes.
      B = await restart(fake.url);
      const out4 = await bash(resume.lines, { B, DB: db.file, C });
      runIds.push(...postedRuns(out4));
      expect(runIds).toHaveLength(3);
      expect(dataLines(out4)).toEqual([{ conversation: C, status: "completed" }]);
      expect(out4.endsWith(`data: {"conversation":"${C}","status":"completed"}\n\n`)).toBe(true);

      // Inspect: the sqlite3 and curl | jq lines.
      const out = await bash(inspect.lines, { B, DB: db.file, C });
      const lines = out.split("\n");
      // conversations: one row.
      expect(lines.filter((l) => l.startsWith(C))).toEqual([
        expect.stringMatching(new RegExp(`^${C}\\s+Name one prime number\\. Answer in one word\\.\\s+6\\s*$`)),
      ]);
      // runs: completed, completed, failed (MODEL_UNAVAILABLE), completed, in start order; the last three are the ones the POSTs named.
      const runs = lines.flatMap((l) => {
        const m = /^([0-9a-f-]{36})\s+(running|completed|failed|cancelled|interrupted|waiting)\s+(MODEL_UNAVAILABLE\s+)?\d{4}-/.exec(l);
        return m ? [{ id: m[1]!, status: m[2]!, errorCode: m[3]?.trim() ?? null }] : [];
      });
      expect(runs.map((r) => [r.status, r.errorCode])).toEqual([
        ["completed", null],
        ["completed", null],
        ["failed", "MODEL_UNAVAILABLE"],
        ["completed", null],
      ]);
      expect(runs.slice(1).map((r) => r.id)).toEqual(runIds);
      const json = lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
      // The export: input checkpoints at steps -1, 2 and 5; the resume added one loop checkpoint, the last.
      const exported = json.filter((o) => "message_count" in o);
      expect(exported.filter((o) => o.source === "input").map((o) => o.step)).toEqual([-1, 2, 5]);
      expect(exported.at(-1)).toMatchObject({ source: "loop", next: [], message_count: 6, role: "assistant" });
      // Checkpoint metadata: {source, step, parents}, no run id.
      const metadata = json.filter((o) => "parents" in o);
      expect(metadata).toHaveLength(3);
      for (const m of metadata) {
        expect(Object.keys(m).sort()).toEqual(["parents", "source", "step"]);
        for (const run of runs) expect(JSON.stringify(m)).not.toContain(run.id);
      }
      // writes: one __error__ row, the failed task.
      expect(lines.filter((l) => /\s__error__\s*$/.test(l))).toHaveLength(1);
      // Messages: assistant ids start with run-, LangChain's, unrelated to runs.id.
      const messages = json.filter((o) => "role" in o && "id" in o);
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
      for (const m of messages.filter((m) => m.role === "assistant")) {
        expect(m.id).toMatch(/^run-/);
        expect(runs.map((r) => r.id)).not.toContain(m.id.slice(4));
      }
    },
    4 * PROCESS_TEST_TIMEOUT_MS,
  );
});
