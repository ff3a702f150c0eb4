// The console (GET /console) in a real browser: Debian's Chromium through
// playwright-core, against runledger started in this process with the fake
// Ollama and a RUNLEDGER_CONFIG of four agents (the default; "careful", whose
// calculator and MCP note tool wait for approval; two custom graphs), over real
// HTTP and graphql-ws. Screenshots of key moments go to test-results/console/.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import zlib from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page, WebSocketRoute } from "playwright-core";
import Database from "better-sqlite3";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp, waitForRun } from "../testkit/app.ts";
import { gql, gqlOk } from "../testkit/graphql.ts";
import { START_AGENT_RUN, START_RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { eventually, launchChromium, openPage, screenshot, type BrowserPage } from "../testkit/browser.ts";
import { applyEvent, emptyLiveRun, isEnded } from "../console/src/state/run-live.ts";
import { earlierMessages, pendingInterrupts, runViews, type StartedRun } from "../console/src/state/conversation-view.ts";
import { recordedRun } from "../console/src/state/recorded-run.ts";
import { draftAnswer, initialDraft } from "../console/src/state/interrupts.ts";
import { formatDuration } from "../console/src/ui/format.ts";
import type { ConversationDetails, Interrupt, Message, RunDetails, RunEvent, RunStatus } from "../console/src/api/types.ts";
import type { App } from "../src/app.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";

const TOKEN = "console-spec-token";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let browser: Browser;
let typecheck: Promise<unknown>;
let open: BrowserPage | undefined;
let agentsDir: string | undefined;
/** Where careful's MCP note tool logs each note it writes. */
let notesLog: string;
/** Where payer's MCP bank logs each payment it starts. */
let bankLog: string;

/** The agents the console offers, as test/conformance/api.ts configures them. */
function writeAgentsFile(): string {
  agentsDir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-console-agents-"));
  notesLog = path.join(agentsDir, "notes.log");
  bankLog = path.join(agentsDir, "bank.log");
  const fixtures = path.join(ROOT, "test", "fixtures");
  const config = {
    agents: {
      default: { type: "chat" },
      careful: {
        type: "chat",
        description: "Asks before it calculates or writes a note.",
        tools: ["calculator"],
        mcpServers: {
          notes: {
            command: process.execPath,
            args: [path.join(fixtures, "mcp", "stdio-server.mjs")],
            env: { MCP_FIXTURE_LOG: notesLog, MCP_FIXTURE_NAME: "notes" },
            tools: ["note", "echo"],
          },
        },
        requireApproval: ["calculator", "note"],
      },
      planner: { type: "graph", description: "Plans, then answers.", module: path.join(fixtures, "graphs", "two-node.ts"), export: "graph" },
      payer: {
        type: "chat",
        description: "Pays invoices, slowly.",
        tools: [],
        mcpServers: {
          bank: {
            command: process.execPath,
            args: [path.join(fixtures, "mcp", "stdio-server.mjs")],
            // A payment takes a minute: long enough to be cut off by a cancel.
            env: {
              MCP_FIXTURE_LEDGER: path.join(agentsDir, "ledger.jsonl"),
              MCP_FIXTURE_LOG: bankLog,
              MCP_FIXTURE_PAY_DELAY_MS: "60000",
              MCP_FIXTURE_NAME: "bank",
            },
            tools: ["pay"],
          },
        },
      },
      interviewer: { type: "graph", description: "Asks who should answer.", module: path.join(fixtures, "graphs", "ask.ts"), export: "graph" },
    },
  };
  const file = path.join(agentsDir, "agents.json");
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** The notes careful's MCP server wrote, oldest first. */
function noted(): string[] {
  if (!fs.existsSync(notesLog)) return [];
  const lines = fs.readFileSync(notesLog, "utf8").trim().split("\n").filter(Boolean);
  return lines
    .map((line) => JSON.parse(line) as { event: string; text?: string })
    .filter((e) => e.event === "noted")
    .map((e) => String(e.text));
}

/** A set-up step; one still going after 10 s is told on stdout, so that a set-up out of time says where the time went. */
async function setUp<T>(what: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const slow = setInterval(() => console.log(`console.spec set-up: still waiting for ${what} after ${Date.now() - started} ms`), 10_000);
  try {
    return await work();
  } finally {
    clearInterval(slow);
  }
}

// Chromium, a server with its MCP server processes and a type-check, on a shared 2-core machine: a minute at most.
beforeAll(async () => {
  // The console's own type-check (it has DOM and JSX settings of its own) runs beside the browser tests.
  typecheck = promisify(execFile)(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", path.join(ROOT, "console")]);
  typecheck.catch(() => {}); // reported by its own test
  fake = await setUp("the fake model", () => startFakeOllama());
  app = await setUp("the server", () => startTestApp({ ollamaUrl: fake.url, env: { RUNLEDGER_CONFIG: writeAgentsFile() } }));
  browser = await setUp("Chromium", () => launchChromium());
  // careful's MCP tools are listed (and callable) once its server is up.
  await setUp("careful's MCP tools", () =>
    eventually(
      async () => (await gqlOk(app.url, AGENT_TOOLS)).agents.find((a: { name: string }) => a.name === "careful").tools.length === 3,
      "careful's MCP tools",
    ),
  );
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await fake?.close();
  if (agentsDir) fs.rmSync(agentsDir, { recursive: true, force: true });
});

afterEach(async () => {
  const page = open;
  open = undefined;
  if (!page) return;
  await page.close();
  expect(page.pageErrors).toEqual([]);
  expect(page.deadStreams).toEqual([]);
  // The next test may count the list subscribers of its own page.
  await until(() => app.services.bus.stats().changeSubscribers === 0, "the closed page's subscriptions to end");
});

/** Opens the console (at a fragment such as #/new) and waits until it is connected. */
async function openConsole(fragment = ""): Promise<Page> {
  open = await openPage(browser, `${app.url}/console${fragment}`);
  await connection(open.page)
    .filter({ hasText: /^connected$/ })
    .waitFor();
  return open.page;
}

const connection = (page: Page) => page.getByRole("status", { name: "Connection" });
const signedIn = (page: Page) => page.getByRole("status", { name: "Signed in as" });
const conversationLinks = (page: Page) => page.getByRole("navigation", { name: "Conversations" }).getByRole("list").getByRole("link");
const thread = (page: Page) => page.getByRole("log", { name: "Messages" });
const runCard = (page: Page, n: number) => page.getByRole("article", { name: `Run ${n}`, exact: true });
const checkpointTable = (page: Page) => page.getByRole("table", { name: "Checkpoints" });

let titles = 0;
/** A title no other test uses, so list lookups are unambiguous. */
function unique(text: string): string {
  return `${text} ${++titles}`;
}

async function startViaApi(message: string, conversationId?: string): Promise<{ runId: string; conversationId: string }> {
  const { startRun } = await gqlOk(app.url, START_RUN, { message, conversationId });
  expect(startRun.__typename).toBe("StartRunSuccess");
  return { runId: startRun.run.id, conversationId: startRun.conversation.id };
}

async function send(page: Page, message: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(message);
  await page.getByRole("button", { name: "Send" }).click();
}

const AGENT_TOOLS = /* GraphQL */ `query { agents { name tools { name } } }`;
const ANSWER = /* GraphQL */ `
  mutation ($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) { __typename ... on Error { code message } }
  }
`;
const WAITING = /* GraphQL */ `
  query ($id: ID!) {
    conversation(id: $id) {
      next
      pendingInterrupts { id value }
      usage { inputTokens outputTokens modelCalls modelDurationMs }
      checkpoints(first: 100) { edges { node { id } } }
      runs(first: 20) { edges { node { id status usage { inputTokens outputTokens modelCalls timeToFirstTokenMs modelDurationMs } } } }
    }
  }
`;

async function startAgentViaApi(message: string, agent: string): Promise<{ runId: string; conversationId: string }> {
  const { startRun } = await gqlOk(app.url, START_AGENT_RUN, { message, agent });
  expect(startRun.__typename).toBe("StartRunSuccess");
  return { runId: startRun.run.id, conversationId: startRun.conversation.id };
}

/** Polls the API until the run has the status (support's waitForRun knows the failure states, not WAITING). */
async function waitForStatus(runId: string, status: string): Promise<void> {
  await eventually(
    async () => (await gqlOk(app.url, `query ($id: ID!) { run(id: $id) { status } }`, { id: runId })).run.status === status,
    `run ${runId} ${status}`,
    20_000,
  );
}

const RESUME = /* GraphQL */ `
  mutation ($conversationId: ID!) {
    resumeRun(input: { conversationId: $conversationId }) { __typename ... on ResumeRunSuccess { run { id } } ... on Error { code message } }
  }
`;
const CANCEL_RUN = /* GraphQL */ `
  mutation ($runId: ID!) {
    cancelRun(input: { runId: $runId }) { __typename ... on CancelRunSuccess { run { status } } ... on Error { code message } }
  }
`;

const answerForm = (page: Page) => page.getByRole("form", { name: "Answer the waiting run" });

const RUN_DETAILS = /* GraphQL */ `
  query ($id: ID!) {
    run(id: $id) { id status errorCode errorMessage partialOutput failedTasks { node message checkpoint { id step } } }
  }
`;

describe("the console page and its bundle", () => {
  it("serves the page without the token and the bundle compressed, cacheable and revalidatable", async () => {
    const page = await fetch(`${app.url}/console`, { headers: { "accept-encoding": "identity" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await page.text();
    const script = /<script type="module" src="(\/console\/app-[A-Z0-9]+\.js)">/.exec(html)?.[1];
    const style = /<link rel="stylesheet" href="(\/console\/app-[A-Z0-9]+\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(style).toBeDefined();

    const plain = await fetch(`${app.url}${script}`, { headers: { "accept-encoding": "identity" } });
    const identity = Buffer.from(await plain.arrayBuffer());
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(identity.toString("utf8")).toContain("conversationsChanged");
    const sizes: Record<string, number> = { identity: identity.length };
    for (const [encoding, decode] of [
      ["br", zlib.brotliDecompressSync],
      ["gzip", zlib.gunzipSync],
    ] as const) {
      // Node's fetch would decode the body itself: read the bytes as sent.
      const response = await rawGet(`${app.url}${script}`, { "accept-encoding": `${encoding}, identity;q=0.5` });
      expect(response.headers["content-encoding"]).toBe(encoding);
      expect(response.headers["vary"]).toContain("Accept-Encoding");
      expect(response.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(response.headers["content-type"]).toBe("text/javascript; charset=utf-8");
      expect(Number(response.headers["content-length"])).toBe(response.body.length);
      expect(decode(response.body).equals(identity)).toBe(true);
      expect(response.body.length).toBeLessThan(identity.length / 2);
      sizes[encoding] = response.body.length;

      const again = await rawGet(`${app.url}${script}`, { "accept-encoding": encoding, "if-none-match": String(response.headers.etag) });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
    }
    console.info(`console bundle: ${sizes.identity} bytes, gzip ${sizes.gzip}, brotli ${sizes.br}`);

    // The page revalidates; the source map names no server directory.
    const pageAgain = await fetch(`${app.url}/console`, { headers: { "accept-encoding": "identity", "if-none-match": page.headers.get("etag")! } });
    expect(pageAgain.status).toBe(304);
    const mapPath = /\/\/# sourceMappingURL=(\/console\/app-[A-Z0-9]+\.js\.map)\s*$/.exec(identity.toString("utf8"))?.[1];
    expect(mapPath).toBeDefined();
    const map = (await (await fetch(`${app.url}${mapPath}`)).json()) as { sources: string[] };
    expect(map.sources.length).toBeGreaterThan(10);
    expect(map.sources.filter((source) => !/^(console\/src|packages\/client\/src|node_modules)\//.test(source))).toEqual([]);

    const head = await fetch(`${app.url}${style}`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect((await fetch(`${app.url}/console/app-NOSUCHFILE.js`)).status).toBe(404);
    const post = await fetch(`${app.url}/console`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);

    // What Chromium asks for and gets.
    let bundle: Promise<import("playwright-core").Response> | undefined;
    open = await openPage(browser, `${app.url}/console`, (page) => {
      bundle = page.waitForResponse((response) => /\/console\/app-[A-Z0-9]+\.js$/.test(response.url()));
    });
    const response = await bundle!;
    const request = await response.request().allHeaders();
    const headers = await response.allHeaders();
    expect(request["accept-encoding"]).toMatch(/gzip/);
    expect(headers["content-encoding"]).toBe(chooseExpected(request["accept-encoding"]!));
    await connection(open.page)
      .filter({ hasText: /^connected$/ })
      .waitFor();
  });
});

/** What the server should pick for the browser's Accept-Encoding: brotli when offered, else gzip. */
function chooseExpected(acceptEncoding: string): string {
  return /\bbr\b/.test(acceptEncoding) ? "br" : "gzip";
}

/** GET without decoding the body (Node's fetch decodes gzip and brotli by itself). */
async function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      })
      .on("error", reject);
  });
}

describe("the conversation list", () => {
  it("follows conversationsChanged: a run started elsewhere appears and moves up, its status changes, a deletion elsewhere drops it", async () => {
    const older = await startViaApi(unique("An older conversation"));
    await waitForRun(app.url, older.runId);
    const page = await openConsole();
    const olderLink = conversationLinks(page).filter({ hasText: "An older conversation" });
    await olderLink.filter({ hasText: "COMPLETED" }).waitFor();
    await until(() => app.services.bus.stats().changeSubscribers === 1, "the page's conversationsChanged subscription");

    fake.enqueue({ kind: "trickle", tokens: ["Slow ", "enough ", "to ", "be ", "seen ", "running."], delayMs: 150 });
    const title = unique("Started elsewhere");
    const elsewhere = await startViaApi(title);
    const link = conversationLinks(page).filter({ hasText: title });
    await link.filter({ hasText: "RUNNING" }).waitFor();
    expect(await conversationLinks(page).first().textContent()).toContain(title);
    await screenshot(page, "list-run-started-elsewhere");
    await link.filter({ hasText: "COMPLETED" }).waitFor();

    // A new run in the older conversation brings it back to the top.
    const again = await startViaApi("once more", older.conversationId);
    await eventually(
      async () => (await conversationLinks(page).first().textContent())?.includes("An older conversation") ?? false,
      "the older conversation on top",
    );
    await waitForRun(app.url, again.runId);

    const deleted = await gqlOk(app.url, DELETE, { id: elsewhere.conversationId });
    expect(deleted.deleteConversation.__typename).toBe("DeleteConversationSuccess");
    await link.waitFor({ state: "detached" });
  });
});

const DELETE = /* GraphQL */ `
  mutation ($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename } }
`;

/** Makes a conversation look like one from before owners were recorded (its owner NULL), as the migration left them. */
function forgetOwner(databaseFile: string, conversationId: string): void {
  const db = new Database(databaseFile, { timeout: 5_000 });
  try {
    expect(db.prepare("UPDATE conversations SET owner = NULL WHERE id = ?").run(conversationId).changes).toBe(1);
  } finally {
    db.close();
  }
}

describe("who is signed in", () => {
  it("shows local · admin without authentication; an admin sees each conversation's owner (no owner for one from before owners) and can list one owner's", async () => {
    const owned = unique("Owned by local");
    const mine = await startViaApi(owned);
    await waitForRun(app.url, mine.runId);
    const ownerless = unique("From before owners");
    const old = await startViaApi(ownerless);
    await waitForRun(app.url, old.runId);
    forgetOwner(app.databaseFile, old.conversationId);

    const page = await openConsole(`#/c/${mine.conversationId}`);
    await signedIn(page)
      .filter({ hasText: /^local · admin$/ })
      .waitFor();
    // Nothing to forget without a token.
    expect(await page.getByRole("button", { name: "Forget token" }).count()).toBe(0);
    await conversationLinks(page).filter({ hasText: owned }).filter({ hasText: "owner local" }).waitFor();
    await conversationLinks(page).filter({ hasText: ownerless }).filter({ hasText: "no owner" }).waitFor();
    await page.getByRole("main", { name: owned }).getByText("owner local").waitFor();
    await screenshot(page, "owners-admin");

    await conversationLinks(page).filter({ hasText: ownerless }).click();
    await page.getByRole("main", { name: ownerless }).getByText("no owner").waitFor();

    // One owner's conversations (conversations(owner:)), kept current by the notices of that owner's.
    const filter = page.getByRole("form", { name: "Filter by owner" });
    await filter.getByLabel("Owner").fill("local");
    await filter.getByRole("button", { name: "Filter" }).click();
    await conversationLinks(page).filter({ hasText: ownerless }).waitFor({ state: "detached" });
    await conversationLinks(page).filter({ hasText: owned }).waitFor();
    const later = unique("Owned by local, started while filtered");
    await waitForRun(app.url, (await startViaApi(later)).runId);
    await conversationLinks(page).filter({ hasText: later }).filter({ hasText: "COMPLETED" }).waitFor();
    await screenshot(page, "owners-filtered");
    await filter.getByLabel("Owner").fill("someone-else");
    await filter.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("navigation", { name: "Conversations" }).getByText("No conversations of someone-else.").waitFor();
    await filter.getByRole("button", { name: "Everyone" }).click();
    await conversationLinks(page).filter({ hasText: ownerless }).waitFor();
  });
});

describe("the chat", () => {
  it("sends a message and streams the answer token by token until the run is COMPLETED", async () => {
    const page = await openConsole("#/new");
    const tokens = ["Streaming ", "one ", "token ", "at ", "a ", "time ", "until ", "done."];
    fake.enqueue({ kind: "trickle", tokens, delayMs: 200 });
    const message = unique("Stream to me");
    await send(page, message);

    await thread(page).getByRole("article", { name: "You" }).filter({ hasText: message }).waitFor();
    const answer = thread(page).getByRole("article", { name: "Assistant" }).last();
    await answer.filter({ hasText: "Streaming" }).waitFor();
    // Mid-stream: part of the answer is there, the run is still running.
    expect(await answer.textContent()).not.toContain("done.");
    expect(await runCard(page, 1).textContent()).toContain("RUNNING");
    await screenshot(page, "chat-streaming");

    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await answer.filter({ hasText: "done." }).waitFor();
    expect(await answer.textContent()).toBe(tokens.join(""));
    expect(page.url()).toMatch(/#\/c\/[0-9a-f-]{36}$/);
    await conversationLinks(page).filter({ hasText: message }).filter({ hasText: "COMPLETED" }).waitFor();
    expect(await runCard(page, 1).textContent()).toMatch(/START/);
    expect(await runCard(page, 1).textContent()).toMatch(/\d+(\.\d)? (ms|s)/);
    await screenshot(page, "chat-completed");
  });

  it("shows a tool call with its arguments and its result as they stream, and keeps them once recorded", async () => {
    const page = await openConsole("#/new");
    fake.enqueue(
      { kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "17 * 3" } }] },
      { kind: "trickle", tokens: ["The ", "res", "ult ", "is ", "5", "1."], delayMs: 250 },
    );
    await send(page, unique("Please calculate 17 * 3"));

    const tool = thread(page).getByRole("group", { name: "Tool call calculator" });
    await tool.filter({ hasText: "51" }).waitFor();
    expect(await tool.textContent()).toContain('{"expression":"17 * 3"}');
    // Shown live: the answer after the tool is still streaming.
    expect(await runCard(page, 1).textContent()).toContain("RUNNING");
    await screenshot(page, "chat-tool-call");

    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "The result is 51." }).waitFor();
    // The recorded thread shows the same call and result.
    expect(await tool.count()).toBe(1);
    expect(await tool.textContent()).toMatch(/calculator.*17 \* 3.*51/s);
  });

  it("shows a failed run: FAILED with its code and message, what it streamed, and its failed task against its checkpoint", async () => {
    const page = await openConsole("#/new");
    // The model's connection drops mid-answer.
    fake.enqueue({ kind: "dropMidStream", tokens: ["Half ", "an ", "answer "], delayMs: 20 });
    await send(page, unique("This one will fail"));

    await runCard(page, 1).filter({ hasText: "FAILED" }).waitFor();
    const conversationId = /#\/c\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    const { conversation } = await gqlOk(app.url, `query ($id: ID!) { conversation(id: $id) { runs(first: 1) { edges { node { id } } } } }`, {
      id: conversationId,
    });
    const { run } = await gqlOk(app.url, RUN_DETAILS, { id: conversation.runs.edges[0].node.id });
    expect(run).toMatchObject({ status: "FAILED", errorCode: "MODEL_UNAVAILABLE", partialOutput: "Half an answer " });
    expect(run.failedTasks).toHaveLength(1);
    const [task] = run.failedTasks;

    // In the runs panel.
    const card = runCard(page, 1);
    await card.filter({ hasText: "Failed tasks" }).waitFor();
    const cardText = (await card.textContent())!;
    expect(cardText).toContain("MODEL_UNAVAILABLE");
    expect(cardText).toContain(run.errorMessage);
    expect(cardText).toContain("Half an answer");
    expect(cardText).toContain(`from checkpoint step ${task.checkpoint.step}`);

    // In the thread, where it happened.
    const outcome = thread(page).getByRole("article", { name: "Run 1 outcome" });
    const outcomeText = (await outcome.textContent())!;
    expect(outcomeText).toContain("MODEL_UNAVAILABLE");
    expect(outcomeText).toContain(run.errorMessage);
    expect(outcomeText).toContain("Half an answer");

    // Against its checkpoint: the row of that step is marked, the failure follows it.
    const failure = checkpointTable(page).getByRole("row").filter({ hasText: "failed from step" });
    expect(await failure.count()).toBe(1);
    const failureText = (await failure.textContent())!;
    expect(failureText).toContain(`${task.node} failed from step ${task.checkpoint.step} in run #1`);
    expect(failureText).toContain(task.message);
    const checkpointRow = checkpointTable(page)
      .getByRole("row")
      .filter({ has: page.locator(`[title="${task.checkpoint.id}"]`) });
    expect(await checkpointRow.count()).toBe(0); // the title sits on the row itself
    expect(await page.locator(`tr[title="${task.checkpoint.id}"]`).getAttribute("class")).toBe("has-failure");

    // The pending step can be resumed.
    await page.getByRole("main").getByRole("button", { name: "Resume" }).waitFor();
    await screenshot(page, "run-failed");
  });
});

describe("actions", () => {
  it("cancels a running run: CANCELLED, with what it streamed, and the step left to resume", async () => {
    const page = await openConsole("#/new");
    fake.enqueue({ kind: "silence", tokens: ["Thinking ", "about ", "it "] });
    await send(page, unique("Take your time"));
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Thinking about it" }).waitFor();
    await runCard(page, 1).filter({ hasText: "RUNNING" }).waitFor();

    await runCard(page, 1).getByRole("button", { name: "Cancel run" }).click();
    await runCard(page, 1).filter({ hasText: "CANCELLED" }).waitFor();
    await runCard(page, 1).filter({ hasText: "Thinking about it" }).waitFor();
    expect(await thread(page).getByRole("article", { name: "Run 1 outcome" }).textContent()).toContain("Thinking about it");
    await page.getByRole("main").getByRole("button", { name: "Resume" }).waitFor();
    expect(await runCard(page, 1).getByRole("button", { name: "Cancel run" }).count()).toBe(0);
    await screenshot(page, "run-cancelled");
  });

  it("resumes a failed run: a RESUME run completes the pending step", async () => {
    fake.enqueue({ kind: "errorLine", tokens: ["Par", "tial "], error: "the model fell over" });
    const message = unique("Resume me");
    const failed = await startViaApi(message);
    expect((await waitForRun(app.url, failed.runId)).status).toBe("FAILED");

    const page = await openConsole(`#/c/${failed.conversationId}`);
    await runCard(page, 1).filter({ hasText: "MODEL_ERROR" }).waitFor();
    const banner = page.getByRole("main").locator(".banner-pending");
    expect(await banner.textContent()).toContain("agent");
    await page.getByRole("main").getByRole("button", { name: "Resume" }).click();

    await runCard(page, 2).filter({ hasText: "COMPLETED" }).waitFor();
    expect(await runCard(page, 2).textContent()).toContain("RESUME");
    await thread(page)
      .getByRole("article", { name: "Assistant" })
      .filter({ hasText: `Echo: ${message}` })
      .waitFor();
    await banner.waitFor({ state: "detached" });
    // The failure stays on record beside the resume that completed it.
    expect(await runCard(page, 1).textContent()).toContain("the model fell over");
    await screenshot(page, "run-resumed");
  });

  it("renames a conversation, and shows the API's refusal of a blank title", async () => {
    const created = await startViaApi(unique("Name me"));
    await waitForRun(app.url, created.runId);
    const page = await openConsole(`#/c/${created.conversationId}`);
    const main = page.getByRole("main");
    await main.getByRole("button", { name: "Rename" }).click();
    const form = page.getByRole("form", { name: "Rename conversation" });
    await form.getByRole("textbox", { name: "Title" }).fill("   ");
    await form.getByRole("button", { name: "Save" }).click();
    const refusal = main.getByRole("alert").filter({ hasText: "Could not rename: VALIDATION" });
    await refusal.waitFor();
    await screenshot(page, "rename-refused");

    const title = unique("A better name");
    await form.getByRole("textbox", { name: "Title" }).fill(title);
    await form.getByRole("button", { name: "Save" }).click();
    await main.getByRole("heading", { name: title, level: 2 }).waitFor();
    await conversationLinks(page).filter({ hasText: title }).waitFor();
    await form.waitFor({ state: "detached" });
  });

  it("deletes a conversation; while a run is active the API refuses and the console says so", async () => {
    fake.enqueue({ kind: "silence", tokens: ["Still "] });
    const title = unique("Delete me");
    const running = await startViaApi(title);
    const page = await openConsole(`#/c/${running.conversationId}`);
    const main = page.getByRole("main");
    await runCard(page, 1).filter({ hasText: "RUNNING" }).waitFor();
    await until(() => fake.asked(title) > 0, "the run's model request, which takes the silence");

    await main.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("group", { name: "Confirm deletion" }).getByRole("button", { name: "Delete for good" }).click();
    await main.getByRole("alert").filter({ hasText: "Could not delete: RUN_IN_PROGRESS" }).waitFor();
    await screenshot(page, "delete-refused");

    await runCard(page, 1).getByRole("button", { name: "Cancel run" }).click();
    await runCard(page, 1).filter({ hasText: "CANCELLED" }).waitFor();
    await main.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("group", { name: "Confirm deletion" }).getByRole("button", { name: "Delete for good" }).click();
    await main.filter({ hasText: "This conversation no longer exists" }).waitFor();
    await conversationLinks(page).filter({ hasText: title }).waitFor({ state: "detached" });
    expect((await gqlOk(app.url, `query ($id: ID!) { conversation(id: $id) { id } }`, { id: running.conversationId })).conversation).toBeNull();
  });
});

describe("agents and approvals", () => {
  it("starts a conversation with the careful agent, shows its approval of two calls live, approves one and edits the other in one answer; the runs panel records who answered how, with usage", async () => {
    const page = await openConsole("#/new");
    // The picker: every agent, with its kind, description and tools (source, approval).
    const picker = page.getByRole("group", { name: "Agent" });
    const careful = picker.getByRole("radio", { name: "careful" });
    await careful.waitFor();
    expect(await picker.getByRole("radio").evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value))).toEqual([
      "default",
      "careful",
      "planner",
      "payer",
      "interviewer",
    ]);
    expect(await picker.getByRole("radio", { name: "default" }).isChecked()).toBe(true);
    const tools = picker.getByRole("list", { name: "Tools of careful" });
    expect((await tools.getByRole("listitem").allTextContents()).sort()).toEqual([
      "calculator builtin needs approval",
      "echo mcp:notes",
      "note mcp:notes needs approval",
    ]);
    expect(await picker.textContent()).toContain("Asks before it calculates or writes a note.");
    expect(await picker.textContent()).toContain("custom graph");
    await careful.check();
    await screenshot(page, "agent-picker");

    fake.enqueue(
      {
        kind: "toolCalls",
        calls: [
          { name: "calculator", args: { expression: "6 * 7" } },
          { name: "note", args: { text: "draft" } },
        ],
      },
      { kind: "text", tokens: ["All ", "done."] },
    );
    const before = noted().length;
    const message = unique("Calculate and note it");
    await send(page, message);

    // WAITING, with the question: in the list, the runs panel, the thread, and the answer form.
    const form = answerForm(page);
    await form.waitFor();
    await runCard(page, 1).filter({ hasText: "WAITING" }).waitFor();
    await conversationLinks(page).filter({ hasText: message }).filter({ hasText: "WAITING" }).waitFor();
    await page.getByRole("main").locator(".conversation-head").filter({ hasText: "agent careful chat · asks before calculator, note" }).waitFor();
    expect(await thread(page).getByRole("article", { name: "Run 1 outcome" }).textContent()).toMatch(
      /Run #1 is waiting at approve for approval of calculator .*, note/,
    );
    expect(await thread(page).getByRole("group", { name: "Tool call note" }).textContent()).toContain("waiting for approval");
    for (const badge of [runCard(page, 1).locator(".badge-waiting"), conversationLinks(page).filter({ hasText: message }).locator(".badge-waiting")])
      expect(await badge.count()).toBe(1);
    const calculator = form.getByRole("group", { name: "Decision on calculator" });
    const note = form.getByRole("group", { name: "Decision on note" });
    expect(await calculator.textContent()).toContain('{"expression":"6 * 7"}');
    expect(await note.textContent()).toContain('{"text":"draft"}');
    const sendAnswer = form.getByRole("button", { name: "Send answer" });
    // Nothing is approved by default.
    expect(await sendAnswer.isDisabled()).toBe(true);

    await calculator.getByRole("radio", { name: "Approve" }).check();
    await note.getByRole("radio", { name: "Edit arguments" }).check();
    // Edited arguments are checked before anything is sent.
    const args = note.getByRole("textbox", { name: "Arguments (JSON)" });
    await args.fill('{"text": "final"');
    await note.filter({ hasText: "not JSON" }).waitFor();
    expect(await sendAnswer.isDisabled()).toBe(true);
    await args.fill('["final"]');
    await note.filter({ hasText: "the arguments must be a JSON object" }).waitFor();
    await args.fill('{"text": "final"}');
    await eventually(async () => !(await sendAnswer.isDisabled()), "the answer to be complete");
    await screenshot(page, "approval-form");

    await sendAnswer.click();
    await runCard(page, 2).filter({ hasText: "COMPLETED" }).waitFor();
    await form.waitFor({ state: "detached" });
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "All done." }).waitFor();
    await thread(page).getByRole("group", { name: "Tool call calculator" }).filter({ hasText: "42" }).waitFor();
    // The edited call ran with the edited arguments, once.
    const noteResult = thread(page).getByRole("group", { name: "Tool call note" }).filter({ hasText: "noted: final" });
    await noteResult.waitFor();
    expect(await noteResult.textContent()).toContain('{"text":"final"}');
    expect(noted().slice(before)).toEqual(["final"]);

    // Who asked what and who answered how.
    const asked = runCard(page, 1).getByRole("listitem", { name: "Interrupt from approve" });
    await asked.filter({ hasText: "ANSWERED" }).waitFor();
    const record = (await asked.textContent())!;
    expect(record).toMatch(/approve asked approval of calculator \{"expression":"6 \* 7"\}, note \{"text":"draft"\}/);
    expect(record).toContain("answered by run #2");
    expect(record).toContain('calculator approved; note edited to {"text":"final"}');
    expect(await thread(page).getByRole("article", { name: "Run 1 outcome" }).textContent()).toContain("answered by run #2");
    // The run keeps its recorded status, no longer looking like it waits.
    expect(await runCard(page, 1).locator(".badge-waiting.badge-resolved").textContent()).toBe("WAITING answered");

    // Usage: each finished run's, and the conversation's total.
    const conversationId = /#\/c\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    const { conversation } = await gqlOk(app.url, WAITING, { id: conversationId });
    const [first, second] = conversation.runs.edges.map((e: any) => e.node);
    // A run's usage shows once the snapshot has its outcome (a terminal event alone has none).
    expect(first.usage.timeToFirstTokenMs).toBeNull(); // it streamed no token: none shown
    await runCard(page, 1)
      .filter({
        hasText: `usage${first.usage.inputTokens} in / ${first.usage.outputTokens} out tokens · 1 model call · model time ${formatDuration(first.usage.modelDurationMs)}`,
      })
      .waitFor();
    const secondUsage = `${second.usage.inputTokens} in / ${second.usage.outputTokens} out tokens · 1 model call · first token ${formatDuration(second.usage.timeToFirstTokenMs)} · model time ${formatDuration(second.usage.modelDurationMs)}`;
    await runCard(page, 2)
      .filter({ hasText: `usage${secondUsage}` })
      .waitFor();
    const total = page.getByRole("note", { name: "Conversation usage" });
    await total.filter({ hasText: `${conversation.usage.inputTokens} in / ${conversation.usage.outputTokens} out tokens · 2 model calls` }).waitFor();
    expect(conversation.usage.inputTokens).toBe(first.usage.inputTokens + second.usage.inputTokens);
    await runCard(page, 1).scrollIntoViewIfNeeded();
    await screenshot(page, "interrupt-answered");
  });

  it("still shows a pending approval after a reload; refuses a wrong answer in the API's words; a rejection's reason reaches the model as the tool's result", async () => {
    fake.enqueue({ kind: "toolCalls", calls: [{ name: "note", args: { text: "secret" } }] }, { kind: "text", tokens: ["Understood."] });
    const before = noted().length;
    const started = await startAgentViaApi(unique("Note the secret"), "careful");
    await waitForStatus(started.runId, "WAITING");
    const page = await openConsole(`#/c/${started.conversationId}`);
    await answerForm(page).waitFor();
    await page.reload();
    await connection(page)
      .filter({ hasText: /^connected$/ })
      .waitFor();
    const form = answerForm(page);
    await form.getByRole("group", { name: "Decision on note" }).waitFor();

    // A wrong shape, typed as JSON: the API refuses it and says why; nothing changes.
    const { conversation } = await gqlOk(app.url, WAITING, { id: started.conversationId });
    const [pending] = conversation.pendingInterrupts;
    const wrong = { toolCalls: [{ id: pending.value.toolCalls[0].id, decision: "maybe" }] };
    const question = form.getByRole("group", { name: "Approval asked by approve" });
    await question.getByRole("checkbox", { name: "Write the answer as JSON" }).check();
    await question.getByRole("textbox", { name: "Answer (JSON)" }).fill(JSON.stringify(wrong));
    await form.getByRole("button", { name: "Send answer" }).click();
    const refusal = (await gqlOk(app.url, ANSWER, { conversationId: started.conversationId, responses: [{ interruptId: pending.id, value: wrong }] }))
      .resumeRun;
    expect(refusal).toMatchObject({ __typename: "ValidationError", code: "VALIDATION" });
    await page
      .getByRole("main")
      .getByRole("alert")
      .filter({ hasText: `Could not send the answers: VALIDATION — ${refusal.message}` })
      .waitFor();
    await screenshot(page, "answer-refused");
    expect(await runCard(page, 2).count()).toBe(0);

    // Rejected with a reason: the model hears it as the note's result; no note is written.
    await question.getByRole("checkbox", { name: "Write the answer as JSON" }).uncheck();
    const note = form.getByRole("group", { name: "Decision on note" });
    await note.getByRole("radio", { name: "Reject" }).check();
    await note.getByRole("textbox", { name: "Reason" }).fill("Secrets stay off the record.");
    await form.getByRole("button", { name: "Send answer" }).click();
    await runCard(page, 2).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Understood." }).waitFor();
    expect(fake.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: "tool", content: "Secrets stay off the record." });
    expect(noted().length).toBe(before);
    await runCard(page, 1)
      .getByRole("listitem", { name: "Interrupt from approve" })
      .filter({ hasText: "note rejected: “Secrets stay off the record.”" })
      .waitFor();
    expect(await thread(page).getByRole("group", { name: "Tool call note" }).last().textContent()).toContain("tool error");
  });

  it("answers a tool call in doubt: the call cut off by a cancel is shown with retry, skip and fail, and a skip gives the model the result typed", async () => {
    await eventually(
      async () => (await gqlOk(app.url, AGENT_TOOLS)).agents.find((a: { name: string }) => a.name === "payer").tools.length === 1,
      "payer's bank",
    );
    fake.enqueue({ kind: "toolCalls", calls: [{ name: "pay", args: { invoice: "INV-42" } }] }, { kind: "text", tokens: ["Paid, ", "then."] });
    const started = await startAgentViaApi(unique("Pay INV-42"), "payer");
    const payments = () =>
      fs.existsSync(bankLog)
        ? fs
            .readFileSync(bankLog, "utf8")
            .split("\n")
            .filter((l) => l.includes('"started"')).length
        : 0;
    await eventually(() => payments() === 1, "the payment to start");
    expect((await gqlOk(app.url, CANCEL_RUN, { runId: started.runId })).cancelRun.run.status).toBe("CANCELLED");
    const { resumeRun } = await gqlOk(app.url, RESUME, { conversationId: started.conversationId });
    await waitForStatus(resumeRun.run.id, "WAITING");

    const page = await openConsole(`#/c/${started.conversationId}`);
    const form = answerForm(page);
    const call = form.getByRole("group", { name: "Tool call in doubt: pay" });
    await call.waitFor();
    expect(await call.textContent()).toMatch(/\{"invoice":"INV-42"\}.*was cut off after it started at .* and may or may not have taken effect/);
    expect(await call.getByRole("radio").evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value))).toEqual(["retry", "skip", "fail"]);
    // Nothing is decided for the person: the answer cannot go until one is chosen.
    expect(await form.getByRole("button", { name: "Send answer" }).isDisabled()).toBe(true);
    await call.getByRole("radio", { name: "Skip it (it went through)" }).check();
    await call.getByRole("textbox", { name: "Result" }).fill("it went through");
    await screenshot(page, "tool-in-doubt");
    await form.getByRole("button", { name: "Send answer" }).click();

    await runCard(page, 3).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Paid, then." }).waitFor();
    expect(fake.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: "tool", content: "it went through" });
    expect(payments()).toBe(1);
    await runCard(page, 2).getByRole("listitem", { name: "Interrupt from tools" }).filter({ hasText: "pay skipped: “it went through”" }).waitFor();
  });

  it("answers a custom graph's own question with typed JSON (checked before it is sent), and the run completes", async () => {
    const page = await openConsole("#/new");
    await page.getByRole("radio", { name: "interviewer" }).check();
    const topic = unique("the weather");
    await send(page, topic);
    const form = answerForm(page);
    const question = form.getByRole("group", { name: "Question from ask" });
    await question.waitFor();
    expect(await question.textContent()).toContain(`Who should answer \\"${topic}\\"?`);
    await runCard(page, 1).filter({ hasText: "WAITING" }).waitFor();
    const json = question.getByRole("textbox", { name: "Answer (JSON)" });
    const sendAnswer = form.getByRole("button", { name: "Send answer" });
    await json.fill("{name: Ada}");
    await question.filter({ hasText: "not JSON" }).waitFor();
    expect(await sendAnswer.isDisabled()).toBe(true);
    await json.fill('{"name": "Ada"}');
    await screenshot(page, "custom-question");
    await sendAnswer.click();

    await runCard(page, 2).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page)
      .getByRole("article", { name: "Assistant" })
      .filter({ hasText: `Ada will answer: ${topic}` })
      .waitFor();
    const asked = runCard(page, 1).getByRole("listitem", { name: "Interrupt from ask" });
    await asked.filter({ hasText: "ANSWERED" }).waitFor();
    expect(await asked.textContent()).toContain("answered by run #2");
    expect(await asked.textContent()).toContain('{"name":"Ada"}');
  });

  it("shows a custom graph's custom event and the node its tokens come from while it streams", async () => {
    const page = await openConsole("#/new");
    await page.getByRole("radio", { name: "planner" }).check();
    fake.enqueue({ kind: "trickle", tokens: ["A ", "prime ", "has ", "exactly ", "two ", "divisors."], delayMs: 200 });
    const question = unique("What is a prime?");
    await send(page, question);

    const event = thread(page).getByRole("group", { name: "Event plan" });
    await event.waitFor();
    expect(await event.textContent()).toContain(`{"steps":["read the question","answer it briefly"],"question":"${question}"}`);
    const answer = thread(page).getByRole("article", { name: "Assistant" }).last();
    await answer.filter({ hasText: "prime" }).waitFor();
    expect(await answer.textContent()).toMatch(/^node answer/);
    // Mid-stream.
    expect(await answer.textContent()).not.toContain("divisors.");
    expect(await runCard(page, 1).textContent()).toContain("RUNNING");
    await screenshot(page, "custom-event-streaming");

    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await answer.filter({ hasText: "divisors." }).waitFor();
    // Once recorded, the event stays where it was streamed, before the answer, and the answer keeps its node.
    await eventually(
      async () => (await thread(page).locator(".streaming").count()) === 0 && (await runCard(page, 1).textContent())!.includes("usage"),
      "the recorded run",
    );
    expect(await event.count()).toBe(1);
    expect(await thread(page).getByRole("article", { name: "Assistant" }).last().textContent()).toBe("node answerA prime has exactly two divisors.");
  });
});

describe("forks", () => {
  it("forks a failed run's checkpoint: the fork opens showing its origin and completes on resume, the source is unchanged; a fork with a message starts its run at once", async () => {
    fake.enqueue({ kind: "errorLine", tokens: ["Half "], error: "the model fell over" });
    const message = unique("Fork me");
    const failed = await startViaApi(message);
    expect((await waitForRun(app.url, failed.runId)).status).toBe("FAILED");
    const source = (await gqlOk(app.url, WAITING, { id: failed.conversationId })).conversation;
    const checkpointIds = source.checkpoints.edges.map((e: any) => e.node.id);

    const page = await openConsole(`#/c/${failed.conversationId}`);
    await runCard(page, 1).filter({ hasText: "FAILED" }).waitFor();
    await page
      .locator(`tr[title="${checkpointIds.at(-1)}"]`)
      .getByRole("button", { name: "Fork here" })
      .click();
    await page
      .getByRole("form", { name: /^Fork at step/ })
      .getByRole("button", { name: "Fork", exact: true })
      .click();

    // The fork opens: its origin, the copied thread, its pending step.
    const origin = page.getByRole("note", { name: "Forked from" });
    await origin.filter({ hasText: message }).waitFor();
    const forkId = /#\/c\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    expect(forkId).not.toBe(failed.conversationId);
    await page
      .getByRole("main")
      .getByRole("heading", { name: `${message} (fork)`, level: 2 })
      .waitFor();
    expect(await origin.textContent()).toMatch(new RegExp(`Forked from ${message} at step \\d+ \\(checkpoint ${checkpointIds.at(-1).slice(0, 8)}\\)`));
    await thread(page).getByRole("article", { name: "You" }).filter({ hasText: message }).waitFor();
    expect(await thread(page).locator(".run-divider").first().textContent()).toBe("Copied from the source conversation");
    await screenshot(page, "fork-origin");

    await page.getByRole("main").getByRole("button", { name: "Resume" }).click();
    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page)
      .getByRole("article", { name: "Assistant" })
      .filter({ hasText: `Echo: ${message}` })
      .waitFor();
    // The source did not move.
    const after = (await gqlOk(app.url, WAITING, { id: failed.conversationId })).conversation;
    expect(after.checkpoints.edges.map((e: any) => e.node.id)).toEqual(checkpointIds);
    expect(after.next).toEqual(["agent"]);
    expect(after.runs.edges).toHaveLength(1);

    // Back to the source through the origin's link; a fork with a first message starts its run at once.
    await origin.getByRole("link", { name: message }).click();
    await page.getByRole("main").getByRole("heading", { name: message, exact: true, level: 2 }).waitFor();
    await runCard(page, 1).filter({ hasText: "FAILED" }).waitFor();
    expect(await runCard(page, 2).count()).toBe(0);
    await page.locator(`tr[title="${checkpointIds[0]}"]`).getByRole("button", { name: "Fork here" }).click();
    const withMessage = page.getByRole("form", { name: /^Fork at step/ });
    await withMessage.getByRole("textbox", { name: "First message (optional)" }).fill("A different question.");
    await withMessage.getByRole("button", { name: "Fork and send" }).click();
    await eventually(() => !page.url().endsWith(failed.conversationId) && !page.url().endsWith(forkId), "the second fork to open");
    await origin.filter({ hasText: message }).waitFor();
    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Echo: A different question." }).waitFor();
  });
});

describe("the connection", () => {
  it("shows reconnecting while the WebSocket is down, then catches up with what changed meanwhile", async () => {
    let refuse = false;
    const sockets: { page: WebSocketRoute; server: WebSocketRoute }[] = [];
    open = await openPage(browser, `${app.url}/console`, (page) =>
      page.routeWebSocket(/\/graphql$/, (ws) => {
        // While refused, each attempt is closed at once, as a restarting server would.
        if (refuse) return void ws.close({ code: 1012, reason: "restarting" });
        sockets.push({ page: ws, server: ws.connectToServer() });
      }),
    );
    const page = open.page;
    await connection(page)
      .filter({ hasText: /^connected$/ })
      .waitFor();

    refuse = true;
    const socket = sockets.at(-1)!;
    await socket.server.close({ code: 1000 });
    await socket.page.close({ code: 1012, reason: "restarting" });
    await connection(page).filter({ hasText: "reconnecting" }).waitFor();
    await screenshot(page, "connection-reconnecting");

    // Missed while away: the console reads the list again once back.
    const title = unique("Started while the console was away");
    await waitForRun(app.url, (await startViaApi(title)).runId);
    refuse = false;
    await connection(page)
      .filter({ hasText: /^connected$/ })
      .waitFor();
    await conversationLinks(page).filter({ hasText: title }).filter({ hasText: "COMPLETED" }).waitFor();
  });
});

describe("with API_TOKEN set", () => {
  let secured: App;
  beforeAll(async () => {
    secured = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await secured?.close();
  });

  it("asks for the token, refuses a wrong one, then works with the right one (kept for the tab)", async () => {
    // The page is open; the API is not.
    expect((await fetch(`${secured.url}/console`)).status).toBe(200);
    expect((await gql(secured.url, "{ __typename }")).errors?.[0]?.extensions?.code).toBe("UNAUTHENTICATED");

    open = await openPage(browser, `${secured.url}/console`);
    const page = open.page;
    const form = page.getByRole("form", { name: "API token" });
    await form.waitFor();
    await screenshot(page, "token-form");
    await form.getByLabel("API token").fill("not-the-token");
    await form.getByRole("button", { name: "Connect" }).click();
    await form.getByRole("alert").filter({ hasText: "refused this token" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0); // a refused token is not kept

    await form.getByLabel("API token").fill(TOKEN);
    await form.getByRole("button", { name: "Connect" }).click();
    await connection(page)
      .filter({ hasText: /^connected$/ })
      .waitFor();
    await page.getByRole("link", { name: "New conversation" }).click();
    const message = unique("Hello with a token");
    await send(page, message);
    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page)
      .getByRole("article", { name: "Assistant" })
      .filter({ hasText: `Echo: ${message}` })
      .waitFor();
    // API_TOKEN stands for the admin: the header says so, and the conversation is the admin's.
    await signedIn(page)
      .filter({ hasText: /^admin · admin$/ })
      .waitFor();
    await conversationLinks(page).filter({ hasText: message }).filter({ hasText: "owner admin" }).waitFor();
    await screenshot(page, "token-accepted");

    // A reload in the same tab keeps the token; forgetting it brings the form back.
    await page.reload();
    await connection(page)
      .filter({ hasText: /^connected$/ })
      .waitFor();
    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await page.getByRole("button", { name: "Forget token" }).click();
    await form.waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });
});

describe("a queued run", () => {
  let queueing: App;
  beforeAll(async () => {
    queueing = await startTestApp({ ollamaUrl: fake.url, env: { MODEL_CONCURRENCY: "1" } });
  });
  afterAll(async () => {
    await queueing?.close();
  });

  it("shows QUEUED with its place in line and why, then follows it once it starts; a message sent meanwhile queues after it", async () => {
    fake.enqueue({ kind: "silence", tokens: ["Holding "] });
    const busy = (await gqlOk(queueing.url, START_RUN, { message: unique("Holding the model") })).startRun;
    await until(() => fake.openChatRequests() > 0, "the model request");
    const waiting = (await gqlOk(queueing.url, START_RUN, { message: unique("Waiting for my turn") })).startRun;
    expect(waiting.run.status).toBe("QUEUED");

    open = await openPage(browser, `${queueing.url}/console#/c/${waiting.conversation.id}`);
    const page = open.page;
    const card = runCard(page, 1);
    await card.filter({ hasText: "QUEUED" }).filter({ hasText: "#1 in line · the model is busy" }).waitFor();
    await thread(page).getByText("Waiting its turn…").waitFor();
    await page.getByText("Run #1 is waiting its turn").first().waitFor();
    // A message sent meanwhile goes in line behind it: the composer offers the multitask choices, queueing first.
    const composer = page.getByRole("form", { name: "Send a message" });
    const choice = composer.getByRole("combobox", { name: "While a run is active" });
    expect(await choice.inputValue()).toBe("ENQUEUE");
    expect(await choice.locator("option").allTextContents()).toEqual(["Queue after it", "Stop it, send now", "Undo it, send now"]);
    const after = unique("And then this");
    await composer.getByRole("textbox", { name: "Message" }).fill(after);
    await composer.getByRole("button", { name: "Send" }).click();
    await runCard(page, 2).filter({ hasText: "QUEUED" }).filter({ hasText: "#2 in line · behind the conversation's run" }).waitFor();
    await screenshot(page, "queued-run");
    // The run ahead ends; this one starts and streams in the open page, then the one behind it.
    await gqlOk(queueing.url, CANCEL_RUN, { runId: busy.run.id });
    await card.filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Echo: Waiting for my turn" }).waitFor();
    await runCard(page, 2).filter({ hasText: "COMPLETED" }).waitFor();
    await thread(page)
      .getByRole("article", { name: "Assistant" })
      .filter({ hasText: `Echo: ${after}` })
      .waitFor();
  });
});

describe("a user's console", () => {
  let secured: App;
  beforeAll(async () => {
    secured = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await secured?.close();
  });

  it("signs in with the user's API key: alice · user, her own conversations only (no owners, no owner filter), even while the admin works", async () => {
    const asAdmin = { authorization: `Bearer ${TOKEN}` };
    const adminsFirst = unique("The admin's own");
    expect((await gql(secured.url, START_RUN, { message: adminsFirst }, asAdmin)).data.startRun.__typename).toBe("StartRunSuccess");
    const { key } = await createApiKey(secured.storage.apiKeys, { userId: "alice", role: "user", label: "console" });

    open = await openPage(browser, `${secured.url}/console`);
    const page = open.page;
    const form = page.getByRole("form", { name: "API token" });
    await form.getByLabel("API token").fill(key);
    await form.getByRole("button", { name: "Connect" }).click();
    await connection(page)
      .filter({ hasText: /^connected$/ })
      .waitFor();
    await signedIn(page)
      .filter({ hasText: /^alice · user$/ })
      .waitFor();

    await page.getByRole("link", { name: "New conversation" }).click();
    const hers = unique("Alice's question");
    await send(page, hers);
    await runCard(page, 1).filter({ hasText: "COMPLETED" }).waitFor();
    await conversationLinks(page).filter({ hasText: hers }).waitFor();

    // The admin starts another conversation while alice's list is live: it never reaches her.
    const adminsSecond = unique("The admin's second");
    const second = (await gql(secured.url, START_RUN, { message: adminsSecond }, asAdmin)).data.startRun;
    await until(
      async () => (await gql(secured.url, `query ($id: ID!) { run(id: $id) { status } }`, { id: second.run.id }, asAdmin)).data.run.status === "COMPLETED",
      "the admin's run to complete",
    );
    // A notice of her own, sent after the admin's, has reached her live list: the admin's would have come first.
    await send(page, unique("Alice again"));
    await runCard(page, 2).filter({ hasText: "COMPLETED" }).waitFor();
    expect(await conversationLinks(page).allTextContents()).toEqual([expect.stringContaining(hers)]);
    // Her list read afresh is the same.
    await page.reload();
    await connection(page)
      .filter({ hasText: /^connected$/ })
      .waitFor();
    await conversationLinks(page).filter({ hasText: hers }).waitFor();
    expect(await conversationLinks(page).allTextContents()).toEqual([expect.stringContaining(hers)]);
    // A user is shown no owners and has no owner filter.
    expect(await page.getByText(/owner (alice|admin)|no owner/).count()).toBe(0);
    expect(await page.getByRole("form", { name: "Filter by owner" }).count()).toBe(0);
    await screenshot(page, "user-view");
  });
});

describe("the console's state", () => {
  it("run events: applied once each in seq order, tokens joined per message, a tool result paired with its call", () => {
    const at = "2026-01-01T00:00:00.000Z";
    const events: RunEvent[] = [
      { __typename: "RunStatusEvent", seq: 1, runId: "r", at, status: "RUNNING", errorCode: null, errorMessage: null },
      { __typename: "ToolCallEvent", seq: 2, runId: "r", at, toolCallId: "c1", name: "calculator", args: { expression: "1+1" } },
      { __typename: "ToolResultEvent", seq: 3, runId: "r", at, toolCallId: "c1", name: "calculator", content: "2", isError: false },
      { __typename: "TokenEvent", seq: 4, runId: "r", at, text: "It is ", messageId: "m1", node: "agent" },
      { __typename: "TokenEvent", seq: 5, runId: "r", at, text: "2.", messageId: "m1", node: "agent" },
      { __typename: "RunStatusEvent", seq: 6, runId: "r", at, status: "COMPLETED", errorCode: null, errorMessage: null },
    ];
    // A reconnection replays from the start: the second pass changes nothing.
    let run = emptyLiveRun("r");
    for (const event of [...events.slice(0, 4), ...events]) run = applyEvent(run, event);
    expect(run.lastSeq).toBe(6);
    expect(run.status).toBe("COMPLETED");
    expect(run.items).toEqual([
      { kind: "tool", key: "c2", toolCallId: "c1", name: "calculator", args: { expression: "1+1" }, result: { content: "2", isError: false } },
      { kind: "text", key: "t4", messageId: "m1", node: "agent", text: "It is 2." },
    ]);
  });

  it("answers: a tool call in doubt takes retry, skip or fail, with a result only for skip and fail", () => {
    const interrupt = {
      id: "i-1",
      node: "tools",
      value: { type: "tool_in_doubt", toolCallId: "call-1", tool: "pay", args: { invoice: "INV-1" }, startedAt: "2026-12-02T00:00:00.000Z", attempt: 1 },
    } as unknown as Interrupt;
    const draft = initialDraft(interrupt);
    expect(draft.raw).toBe(false);
    expect(draftAnswer(interrupt, draft)).toEqual({ ok: false, problem: "pay: retry, skip or fail it" });
    expect(draftAnswer(interrupt, { ...draft, doubt: { decision: "retry", result: "ignored" } })).toEqual({ ok: true, value: { decision: "retry" } });
    expect(draftAnswer(interrupt, { ...draft, doubt: { decision: "skip", result: "  it went through " } })).toEqual({
      ok: true,
      value: { decision: "skip", result: "it went through" },
    });
    expect(draftAnswer(interrupt, { ...draft, doubt: { decision: "fail", result: "" } })).toEqual({ ok: true, value: { decision: "fail" } });
  });

  it("thread: messages before the listed runs come first; a running run's persisted messages never show twice", () => {
    const message = (id: string, role: Message["role"] = "USER"): Message => ({ id, role, content: id, toolCalls: [], toolCallId: null, name: null });
    const run = (id: string, status: RunStatus, messages: Message[]): RunDetails => ({
      id,
      kind: "START",
      status,
      input: null,
      errorCode: null,
      errorMessage: null,
      partialOutput: null,
      queuePosition: null,
      queueReason: null,
      startedAt: "2026-01-01T00:00:00.000Z",
      finishedAt: status === "RUNNING" ? null : "2026-01-01T00:00:01.000Z",
      messages,
      failedTasks: [],
      customEvents: [],
      messageNodes: [],
      usage: null,
      interrupts: [],
      startCheckpoint: null,
    });
    const details = (messages: Message[], runs: RunDetails[], totalCount = runs.length): ConversationDetails => ({
      id: "c",
      title: "c",
      owner: "local",
      agentName: "default",
      agent: null,
      forkedFrom: null,
      usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, modelDurationMs: 0 },
      pendingInterrupts: [],
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      messageCount: messages.length,
      next: [],
      resumable: false,
      messages,
      activeRun: null,
      runs: { totalCount, edges: runs.map((node) => ({ node })) },
      checkpoints: { pageInfo: { hasPreviousPage: false }, edges: [] },
    });
    // Run 1 is older than the page; run 2 is listed.
    const older = details(
      [message("u1"), message("a1", "ASSISTANT"), message("u2"), message("a2", "ASSISTANT")],
      [run("r2", "COMPLETED", [message("u2"), message("a2", "ASSISTANT")])],
      2,
    );
    const olderViews = runViews(older, new Map(), []);
    expect(olderViews.map((v) => v.number)).toEqual([2]);
    expect(earlierMessages(older, olderViews).map((m) => m.id)).toEqual(["u1", "a1"]);

    // The snapshot was read while run 1 ran: the thread already holds its tool call, the run's own list not yet.
    const racing = details([message("u1"), message("a1", "ASSISTANT")], [run("r1", "RUNNING", [])]);
    const live = new Map([["r1", emptyLiveRun("r1")]]);
    expect(earlierMessages(racing, runViews(racing, live, []))).toEqual([]);
    // A queued run is as active as a running one: nothing of its thread is shown before it starts.
    const waiting = details([message("u1"), message("a1", "ASSISTANT")], [run("r1", "QUEUED", [])]);
    expect(earlierMessages(waiting, runViews(waiting, new Map(), []))).toEqual([]);
    expect(isEnded("QUEUED")).toBe(false);
  });

  it("a recorded run: its custom events among its messages where they streamed, and its messages' nodes, the same from what it stored as from what the page saw", () => {
    const at = "2026-01-01T00:00:00.000Z";
    const message = (id: string, role: Message["role"]): Message => ({ id, role, content: id, toolCalls: [], toolCallId: null, name: null });
    const messages = [message("u", "USER"), message("plan-msg", "ASSISTANT"), message("t", "TOOL"), message("answer-msg", "ASSISTANT")];
    const stream: RunEvent[] = [
      { __typename: "RunStatusEvent", seq: 1, runId: "r", at, status: "RUNNING", errorCode: null, errorMessage: null },
      { __typename: "CustomEvent", seq: 2, runId: "r", at, name: "plan", data: { steps: 2 } },
      { __typename: "TokenEvent", seq: 3, runId: "r", at, text: "Plan", messageId: "plan-msg", node: "planner" },
      { __typename: "TokenEvent", seq: 4, runId: "r", at, text: "ned.", messageId: "plan-msg", node: "planner" },
      { __typename: "CustomEvent", seq: 5, runId: "r", at, name: "progress", data: 0.5 },
      { __typename: "TokenEvent", seq: 6, runId: "r", at, text: "Done.", messageId: "answer-msg", node: "agent" },
      { __typename: "CustomEvent", seq: 7, runId: "r", at, name: "done", data: null },
      { __typename: "RunStatusEvent", seq: 8, runId: "r", at, status: "COMPLETED", errorCode: null, errorMessage: null },
    ];
    const seen = stream.reduce((live, event) => applyEvent(live, event), emptyLiveRun("r"));
    const customEvents = stream.filter((e) => e.__typename === "CustomEvent");
    const messageNodes = [
      { messageId: "plan-msg", node: "planner", seq: 3 },
      { messageId: "answer-msg", node: "agent", seq: 6 },
    ];
    const base = runViews(null, new Map(), [{ id: "r", kind: "START", status: "COMPLETED", input: "u", startedAt: at }])[0]!;
    const view = { ...base, live: null, messages };
    const shape = (r: ReturnType<typeof recordedRun>) => ({
      entries: r.entries.map((e) => (e.kind === "event" ? `event ${e.item.name}` : e.messages.map((m) => m.id).join(","))),
      nodes: [...r.nodes],
    });
    const expected = {
      entries: ["u", "event plan", "plan-msg,t", "event progress", "answer-msg", "event done"],
      nodes: [
        ["plan-msg", "planner"],
        ["answer-msg", "agent"],
      ],
    };
    // The page that watched it, one opened later (stored only), and both at once show the same.
    expect(shape(recordedRun({ ...view, seen }))).toEqual(expected);
    expect(shape(recordedRun({ ...view, seen: null, customEvents, messageNodes }))).toEqual(expected);
    expect(recordedRun({ ...view, seen, customEvents, messageNodes })).toEqual(recordedRun({ ...view, seen: null, customEvents, messageNodes }));
    // A run that streamed no message: its events follow its user message.
    expect(shape(recordedRun({ ...view, seen: null, customEvents, messageNodes: [] })).entries).toEqual([
      "u",
      "event plan",
      "event progress",
      "event done",
      "plan-msg,t,answer-msg",
    ]);
    expect(shape(recordedRun({ ...view, seen: null, customEvents: [], messageNodes })).entries).toEqual(["u,plan-msg,t,answer-msg"]);
  });

  it("interrupts: a question streamed before the snapshot has it waits for an answer; a tool approval's answer needs a decision for every call", () => {
    const at = "2026-01-01T00:00:00.000Z";
    const asked: Interrupt = {
      id: "i1",
      node: "approve",
      value: {
        type: "tool_approval",
        toolCalls: [
          { id: "c1", name: "calculator", args: { expression: "1+1" } },
          { id: "c2", name: "note", args: { text: "x" } },
        ],
      },
      state: "PENDING",
      createdAt: at,
      answer: null,
      answeredAt: null,
      answeredBy: null,
      run: { id: "r" },
    };
    let live = emptyLiveRun("r");
    for (const event of [
      { __typename: "RunStatusEvent", seq: 1, runId: "r", at, status: "RUNNING", errorCode: null, errorMessage: null },
      { __typename: "InterruptEvent", seq: 2, runId: "r", at, interrupt: asked },
      { __typename: "RunStatusEvent", seq: 3, runId: "r", at, status: "WAITING", errorCode: null, errorMessage: null },
    ] satisfies RunEvent[])
      live = applyEvent(live, event);
    const started: StartedRun[] = [{ id: "r", kind: "START", status: "RUNNING", input: "hi", startedAt: at }];
    // The snapshot was read while the run ran: the live question counts.
    expect(pendingInterrupts(null, runViews(null, new Map([["r", live]]), started)).map((i) => i.id)).toEqual(["i1"]);
    // While a run runs (a resume), nothing waits.
    expect(pendingInterrupts(null, runViews(null, new Map([["r", { ...live, status: "RUNNING" }]]), started))).toEqual([]);

    const draft = initialDraft(asked);
    expect(draftAnswer(asked, draft)).toEqual({ ok: false, problem: "calculator: approve, reject or edit it" });
    draft.calls.c1 = { ...draft.calls.c1!, decision: "approve" };
    draft.calls.c2 = { ...draft.calls.c2!, decision: "edit", argsText: "[1]" };
    expect(draftAnswer(asked, draft)).toEqual({ ok: false, problem: "note: the arguments must be a JSON object" });
    draft.calls.c2 = { ...draft.calls.c2, decision: "reject", reason: "  " };
    expect(draftAnswer(asked, draft)).toEqual({
      ok: true,
      value: {
        toolCalls: [
          { id: "c1", decision: "approve" },
          { id: "c2", decision: "reject" },
        ],
      },
    });
    // Any other question is answered with the JSON typed.
    const custom = { ...asked, value: { question: "who?" } };
    expect(draftAnswer(custom, { ...initialDraft(custom), text: '{"name": "Ada"}' })).toEqual({ ok: true, value: { name: "Ada" } });
  });

  it("type-checks (tsc -p console: DOM and JSX settings of its own; the root tsconfig leaves console/ out)", async () => {
    await typecheck.catch((error: { stdout?: string; message: string }) => {
      throw new Error(`tsc -p console failed:\n${error.stdout || error.message}`);
    });
  });
});
