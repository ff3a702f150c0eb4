// examples/react-chat, built as `npm run build` builds it (its build.ts:
// the page's script and its server, from the SDK's sources), served by its
// own server, and driven in headless Chromium at desktop (1400x900) and phone
// (390x844) sizes against runledger started as a process of its own (so it
// can be killed with SIGKILL and started again on the same database), with
// the fake model and an MCP server fixture for a tool call left in doubt.
// runledger asks for a credential: the page's provider fetches short-lived
// JWTs from the example's GET /token. Each scenario compares what the page
// shows and received with the server's own record (the run's event log, the
// thread): send and stream; a refresh mid-stream; kill -9 and a restart; two
// tabs; a tool approval and a tool call in doubt; cancel; fork; edit and
// re-run; a token expiring mid-run; and a server render hydrated mid-run.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { defaultResponder, startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { closedPort, PROCESS_TEST_TIMEOUT_MS, ROOT, tempDatabaseUrl, trackedServerProcesses } from "../testkit/app.ts";
import type { ServerProcess } from "../testkit/processes.ts";
import { gql } from "../testkit/graphql.ts";
import { RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { eventually, launchChromium, PAGE_TIMEOUT_MS, watchRunStreams } from "../testkit/browser.ts";
import { numbered, observeRun, serverLog, serverThread, textOf } from "./sdk/harness.ts";
import { buildExample } from "../examples/react-chat/build.ts";
import { hs256Token } from "../examples/react-chat/src/tokens.ts";
import type { ExampleServer, ExampleServerOptions, PageData, Token } from "../examples/react-chat/src/shared.ts";

const SECRET = "the react-chat example's HS256 secret, 32 bytes or more";
const ADMIN = "react-chat-example-admin-token";
const DESKTOP = { width: 1400, height: 900 };
const PHONE = { width: 390, height: 844 };
const SIZES = [
  ["desktop", DESKTOP],
  ["phone", PHONE],
] as const;
const SHOTS = path.join(ROOT, "test-results", "example-react-chat");

const startServer = trackedServerProcesses();
let fake: FakeOllama;
let database: ReturnType<typeof tempDatabaseUrl>;
let work: string;
let mcpLog: string;
let agentsFile: string;
let api: string;
let port: number;
let server: ServerProcess;
let browser: Browser;
/** The example's server as it runs by default (server rendering), and one that leaves rendering to the page. */
let site: ExampleServer;
let plainSite: ExampleServer;
/** How long the tokens GET /token hands out live, and each one handed out. */
let tokenTtlS = 600;
const issued: string[] = [];

// The model: "stream <n> <prefix> <ms>" streams n numbered tokens, ms apart; "Start the long job" calls the MCP fixture's
// slow tool (it runs until cancelled); anything else as the fake's default (an echo; a calculator call; "The result is ...").
function respond(request: Parameters<typeof defaultResponder>[0]): FakeStep | Promise<FakeStep> {
  const last = request.messages.at(-1);
  const user = request.messages.findLast((m) => m.role === "user")?.content ?? "";
  if (last?.role !== "tool") {
    const stream = /^stream (\d+) ([a-z]+) (\d+)$/.exec(user);
    if (stream) return { kind: "trickle", tokens: numbered(Number(stream[1]), stream[2]), delayMs: Number(stream[3]) };
    if (user === "Start the long job") return { kind: "toolCalls", calls: [{ name: "slow", args: { label: "long job" } }] };
  }
  return defaultResponder(request);
}

function serverEnv(): Record<string, string> {
  return {
    PORT: String(port),
    DATABASE_URL: database.url,
    OLLAMA_HOST: fake.url,
    RUNLEDGER_CONFIG: agentsFile,
    API_TOKEN: ADMIN,
    AUTH_JWT_SECRET: SECRET,
    AUTH_CLOCK_TOLERANCE_S: "0",
    CREDENTIAL_RECHECK_MS: "200",
    CORS_ORIGINS: `${site.url},${plainSite.url}`,
  };
}

beforeAll(async () => {
  database = tempDatabaseUrl("runledger-example-chat-");
  work = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-example-chat-"));
  mcpLog = path.join(work, "mcp.log");
  agentsFile = path.join(work, "agents.json");
  fs.writeFileSync(
    agentsFile,
    JSON.stringify({
      agents: {
        default: { type: "chat" },
        careful: { type: "chat", description: "Asks before it calculates.", tools: ["calculator"], requireApproval: ["calculator"] },
        toolbox: {
          type: "chat",
          description: "Runs a slow job.",
          tools: [],
          mcpServers: {
            fx: {
              command: process.execPath,
              args: [path.join(ROOT, "test", "fixtures", "mcp", "stdio-server.mjs")],
              env: { MCP_FIXTURE_LOG: mcpLog },
              tools: ["slow"],
            },
          },
        },
      },
    }),
  );
  // runledger's port is chosen first: the pages reach it there, and it keeps it across the restart.
  port = await closedPort();
  api = `http://127.0.0.1:${port}`;
  const [built, fakeOllama, chromium] = await Promise.all([
    buildExample({ outdir: path.join(work, "dist") }),
    startFakeOllama({ responder: respond }),
    launchChromium(),
  ]);
  fake = fakeOllama;
  browser = chromium;
  const example = (await import(/* @vite-ignore */ pathToFileURL(built.server).href)) as {
    startExampleServer(options: ExampleServerOptions): Promise<ExampleServer>;
  };
  const token = (): Token => {
    const made = hs256Token(SECRET, "alice", tokenTtlS);
    issued.push(made.token!);
    return made;
  };
  const publicDir = path.dirname(built.script);
  [site, plainSite] = await Promise.all([
    example.startExampleServer({ api, publicDir, port: 0, token }),
    example.startExampleServer({ api, publicDir, port: 0, token, ssr: false }),
  ]);
  server = await startServer(serverEnv());
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await plainSite?.close();
  await server?.stop("SIGKILL");
  await fake?.close();
  database?.remove();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

// ---- the browser ----

interface Tab {
  page: Page;
  /** The runEvents subscriptions the page sent: run and after, and how many events the page had received by then. */
  afters: { runId: string; after: number; received: number }[];
  /** The run events the page received, in order (a token's text too). */
  received: { runId: string; seq: number; text?: string }[];
  /** The HTML the server answered the first load with. */
  html: string;
}

interface Opened {
  context: BrowserContext;
  errors: string[];
  deadStreams: string[][];
}
let opened: Opened[] = [];

afterEach(async () => {
  const done = opened;
  opened = [];
  tokenTtlS = 600;
  for (const { context, errors, deadStreams } of done) {
    await context.close();
    expect(errors).toEqual([]);
    // No page asked for a run's events after it had received their end (it would never settle).
    expect(deadStreams.flat()).toEqual([]);
  }
});

/** A Chromium context of its own (its own sessionStorage), at this size; `observe` notes the last answer's text as it changes. */
async function newContext(size: { width: number; height: number }): Promise<Opened> {
  const context = await browser.newContext({ viewport: size });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
  // window.__texts: the newest assistant message's text as the page first showed it (the server's markup, if any),
  // then after every change: a text that only grows was never replayed, flashed or doubled.
  await context.addInitScript(() => {
    const w = window as unknown as { __texts: string[] };
    w.__texts = [];
    const note = () => {
      const answers = document.querySelectorAll("#chat .thread > li[data-role=ASSISTANT] .content");
      const text = answers[answers.length - 1]?.textContent ?? "";
      if (text && text !== w.__texts.at(-1)) w.__texts.push(text);
    };
    document.addEventListener("DOMContentLoaded", () => {
      note();
      new MutationObserver(note).observe(document.getElementById("root")!, { subtree: true, childList: true, characterData: true });
    });
  });
  const entry = { context, errors: [], deadStreams: [] };
  opened.push(entry);
  return entry;
}

/** The browser's own reports of a server that is down or refused a credential: expected where a spec makes them happen. */
const NETWORK_NOISE = /^(Failed to load resource|WebSocket connection to)/;

async function openTab(opened: Opened, url: string, size?: { width: number; height: number }): Promise<Tab> {
  const page = await opened.context.newPage();
  if (size) await page.setViewportSize(size);
  page.on("pageerror", (error) => opened.errors.push(error.stack ?? error.message));
  page.on("console", (message) => {
    if (message.type() === "error" && !NETWORK_NOISE.test(message.text())) opened.errors.push(message.text());
  });
  opened.deadStreams.push(watchRunStreams(page));
  const tab: Tab = { page, afters: [], received: [], html: "" };
  page.on("websocket", (ws) => {
    ws.on("framesent", ({ payload }) => {
      const message = JSON.parse(String(payload)) as { type?: string; payload?: { query?: string; variables?: { runId?: string; after?: number | null } } };
      if (message.type !== "subscribe" || !message.payload?.query?.includes("runEvents(")) return;
      tab.afters.push({ runId: String(message.payload.variables?.runId), after: message.payload.variables?.after ?? 0, received: tab.received.length });
    });
    ws.on("framereceived", ({ payload }) => {
      const message = JSON.parse(String(payload)) as { type?: string; payload?: { data?: { runEvents?: { runId: string; seq: number; text?: string } } } };
      const event = message.type === "next" ? message.payload?.data?.runEvents : undefined;
      if (event) tab.received.push({ runId: event.runId, seq: event.seq, text: event.text });
    });
  });
  const response = await page.goto(url);
  tab.html = (await response?.text()) ?? "";
  return tab;
}

async function connected(page: Page, timeout?: number): Promise<void> {
  await page.locator('#connection[data-status="connected"]').waitFor({ state: "attached", timeout });
}

/** Waits until the chat has these data- attributes. */
async function chatIs(page: Page, attributes: Record<string, string>, timeout?: number): Promise<void> {
  const selector = Object.entries(attributes)
    .map(([name, value]) => `[data-${name}="${value}"]`)
    .join("");
  await page.locator(`#chat${selector}`).waitFor({ state: "attached", timeout });
}

async function chatAttribute(page: Page, name: string): Promise<string> {
  return (await page.locator("#chat").getAttribute(`data-${name}`)) ?? "";
}

interface Shown {
  id: string;
  role: string;
  state: string;
  text: string;
}

async function shownMessages(page: Page): Promise<Shown[]> {
  return page.locator("#chat .thread > li").evaluateAll((items) =>
    items.map((li) => {
      const data = (li as HTMLElement).dataset;
      return { id: data.id!, role: data.role!, state: data.state!, text: li.querySelector(".content")?.textContent ?? "" };
    }),
  );
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.locator(".composer .send").click();
}

/** Sends a message and waits for the run it started: the chat names a run other than the one it showed. */
async function sendAndStart(page: Page, text: string): Promise<{ runId: string; conversationId: string }> {
  const before = await chatAttribute(page, "run");
  await send(page, text);
  await eventually(async () => !["", before].includes(await chatAttribute(page, "run")), `the run of "${text}"`);
  return { runId: await chatAttribute(page, "run"), conversationId: await chatAttribute(page, "conversation") };
}

/** The run ended with this status, and the page has read the thread since: every message stored (or the run's partial text). */
async function settled(page: Page, runId: string, status: string, timeout?: number): Promise<void> {
  await chatIs(page, { run: runId, status }, timeout);
  await eventually(async () => (await shownMessages(page)).every((m) => m.state === "stored" || m.state === "partial"), `run ${runId} settled`, timeout);
}

/** The page's stored messages are the server's thread, exactly. */
async function expectServerThread(page: Page, conversationId: string): Promise<void> {
  const thread = await serverThread(api, conversationId, ADMIN);
  const shown = (await shownMessages(page)).filter((m) => m.state === "stored");
  expect(shown.map(({ id, role, text }) => ({ id, role, text }))).toEqual(thread.messages.map((m) => ({ id: m.id, role: m.role, text: m.content })));
}

function seqsOf(tab: Tab, runId: string, from = 0): number[] {
  return tab.received
    .slice(from)
    .filter((e) => e.runId === runId)
    .map((e) => e.seq);
}

/** Opens the conversation list (behind the menu button on a phone). */
async function openList(page: Page): Promise<void> {
  const menu = page.getByRole("button", { name: "Conversations" });
  if (await menu.isVisible()) await menu.click();
  await page.locator('nav.conversations[data-phase="ready"]').waitFor();
}

async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

async function admin(query: string, variables: Record<string, unknown>): Promise<any> {
  const result = await gql(api, query, variables, { authorization: `Bearer ${ADMIN}` });
  if (result.errors?.length) throw new Error(JSON.stringify(result.errors));
  return result.data;
}

// ---- the scenarios ----

describe("examples/react-chat in Chromium", () => {
  for (const [name, size] of SIZES) {
    it(`send and stream (${name}): the message shows at once, the answer streams, and the page ends with the server's events and thread`, async () => {
      const tab = await openTab(await newContext(size), `${site.url}/`);
      const { page } = tab;
      await connected(page);
      await page.getByRole("textbox", { name: "Message" }).fill("stream 40 s 15");
      const first = await page.evaluate(async () => {
        document.querySelector<HTMLButtonElement>(".composer .send")!.click();
        await new Promise((resolve) => setTimeout(resolve, 0));
        return [...document.querySelectorAll<HTMLElement>("#chat .thread > li")].map((li) => ({
          role: li.dataset.role,
          state: li.dataset.state,
          text: li.querySelector(".content")?.textContent,
        }));
      });
      expect(first).toEqual([{ role: "USER", state: "sending", text: "stream 40 s 15" }]);
      await page.locator("#chat .thread > li[data-role=ASSISTANT][data-state=streaming]").waitFor();
      const runId = await chatAttribute(page, "run");
      const conversationId = await chatAttribute(page, "conversation");
      await settled(page, runId, "COMPLETED");

      // Every event once, in order, from one subscription made at the run's start.
      const log = await serverLog(api, runId, ADMIN);
      expect(seqsOf(tab, runId)).toEqual(log.map((e) => e.seq));
      expect(tab.afters.filter((a) => a.runId === runId).map((a) => a.after)).toEqual([0]);
      await expectServerThread(page, conversationId);
      expect((await shownMessages(page)).at(-1)!.text).toBe(numbered(40, "s").join(""));
      expect(new URL(page.url()).searchParams.get("c")).toBe(conversationId);
      await screenshot(page, `send-${name}`);
      // The list is live: the new conversation on top, with its run's outcome.
      await openList(page);
      const top = page.locator("nav.conversations li").first();
      await eventually(
        async () => (await top.getAttribute("data-id")) === conversationId && (await top.getAttribute("data-status")) === "COMPLETED",
        "the conversation on top of the list, completed",
      );
      await screenshot(page, `list-${name}`);
    });
  }

  it("refresh mid-stream (phone, rendered in the page): the text so far shows at once from sessionStorage, and the stream goes on after the stored seq: no event twice, none missed", async () => {
    const tab = await openTab(await newContext(PHONE), `${plainSite.url}/`);
    const { page } = tab;
    await connected(page);
    const { runId, conversationId } = await sendAndStart(page, "stream 120 r 20");
    await page.locator("#chat .thread > li[data-role=ASSISTANT]", { hasText: "r15 " }).waitFor();
    await page.reload();
    await settled(page, runId, "COMPLETED");

    const log = await serverLog(api, runId, ADMIN);
    const subscriptions = tab.afters.filter((a) => a.runId === runId);
    expect(subscriptions.map((a) => a.after)).toEqual([0, expect.any(Number)]);
    const rejoinedAfter = subscriptions[1]!.after;
    expect(rejoinedAfter).toBeGreaterThanOrEqual(15);
    // Before the reload, from the start; after it, exactly what came after the stored seq.
    const before = tab.received
      .slice(0, subscriptions[1]!.received)
      .filter((e) => e.runId === runId)
      .map((e) => e.seq);
    // What the page itself held up to the stored seq is proven by its first paint below (texts[0]): the frames
    // noted here through the browser's protocol may miss the last ones before the reload.
    expect(before).toEqual(log.slice(0, before.length).map((e) => e.seq));
    expect(seqsOf(tab, runId, subscriptions[1]!.received)).toEqual(log.filter((e) => e.seq > rejoinedAfter).map((e) => e.seq));
    // The reloaded page showed the text streamed up to the stored seq at once, and it only ever grew to the whole answer.
    const texts = await page.evaluate(() => (window as unknown as { __texts: string[] }).__texts);
    const whole = numbered(120, "r").join("");
    expect(texts[0]).toBe(textOf(log.filter((e) => e.seq <= rejoinedAfter)));
    expect(texts.every((text, i) => whole.startsWith(text) && (i === 0 || text.length > texts[i - 1]!.length))).toBe(true);
    expect(texts.at(-1)).toBe(whole);
    await expectServerThread(page, conversationId);
    await screenshot(page, "refresh-phone");
  });

  it(
    "kill -9 the server mid-stream and start it again on the same database: the run shows INTERRUPTED, and the next run streams live with no reload (desktop)",
    async () => {
      const tab = await openTab(await newContext(DESKTOP), `${site.url}/`);
      const { page } = tab;
      await connected(page);
      const { runId, conversationId } = await sendAndStart(page, "stream 400 k 15");
      await page.locator("#chat .thread > li[data-role=ASSISTANT]", { hasText: "k20 " }).waitFor();
      await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));

      expect(await server.stop("SIGKILL")).toBeNull();
      await page.locator('#connection[data-status="reconnecting"]').waitFor({ state: "attached" });
      server = await startServer(serverEnv());
      await connected(page, 30_000);
      await chatIs(page, { run: runId, status: "INTERRUPTED" }, 30_000);
      const { run } = await admin(RUN, { id: runId });
      expect(run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED" });
      // What the page streamed before the kill stays shown as the run's partial answer, never as a stored one: the
      // killed process recorded none (partialOutput null), so it is exactly the text the page received.
      await settled(page, runId, "INTERRUPTED");
      const partial = (await shownMessages(page)).filter((m) => m.state === "partial");
      const streamed = tab.received
        .filter((e) => e.runId === runId && e.text !== undefined)
        .map((e) => e.text)
        .join("");
      expect(partial.map((m) => m.role)).toEqual(["ASSISTANT"]);
      expect(partial[0]!.text).toContain("k20 ");
      expect(partial[0]!.text).toBe(run.partialOutput ?? streamed);
      await expectServerThread(page, conversationId);
      await screenshot(page, "restart-desktop");

      // The next run streams live on the new server, in the same page.
      const next = await sendAndStart(page, "stream 30 n 20");
      await page.locator("#chat .thread > li[data-role=ASSISTANT][data-state=streaming]", { hasText: "n5 " }).waitFor();
      await settled(page, next.runId, "COMPLETED");
      expect(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
      expect(seqsOf(tab, next.runId)).toEqual((await serverLog(api, next.runId, ADMIN)).map((e) => e.seq));
      expect(tab.afters.filter((a) => a.runId === next.runId).map((a) => a.after)).toEqual([0]);
      await expectServerThread(page, conversationId);
      expect((await shownMessages(page)).at(-1)).toMatchObject({ role: "ASSISTANT", state: "stored", text: numbered(30, "n").join("") });
      expect(Number(await page.locator("#connection").getAttribute("data-reconnects"))).toBeGreaterThanOrEqual(1);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it("two tabs on one conversation (one desktop, one phone): each follows the runs the other starts, live, and both end with the server's thread", async () => {
    const context = await newContext(DESKTOP);
    const a = await openTab(context, `${site.url}/`);
    await connected(a.page);
    const opening = await sendAndStart(a.page, "Hello from tab A");
    await settled(a.page, opening.runId, "COMPLETED");
    const b = await openTab(context, `${site.url}/?c=${opening.conversationId}`, PHONE);
    await chatIs(b.page, { conversation: opening.conversationId, phase: "ready" });
    await connected(b.page);
    expect((await shownMessages(b.page)).map((m) => m.text)).toEqual(["Hello from tab A", "Echo: Hello from tab A"]);

    const fromA = await sendAndStart(a.page, "stream 60 t 20");
    await b.page.locator("#chat .thread > li[data-role=ASSISTANT][data-state=streaming]", { hasText: "t10 " }).waitFor();
    await settled(a.page, fromA.runId, "COMPLETED");
    await settled(b.page, fromA.runId, "COMPLETED");
    const log = await serverLog(api, fromA.runId, ADMIN);
    expect(seqsOf(a, fromA.runId)).toEqual(log.map((e) => e.seq));
    expect(seqsOf(b, fromA.runId)).toEqual(log.map((e) => e.seq));

    const fromB = await sendAndStart(b.page, "And hello from tab B");
    await settled(b.page, fromB.runId, "COMPLETED");
    await settled(a.page, fromB.runId, "COMPLETED");
    for (const tab of [a, b]) await expectServerThread(tab.page, opening.conversationId);
    expect((await shownMessages(a.page)).map((m) => m.text)).toEqual([
      "Hello from tab A",
      "Echo: Hello from tab A",
      "stream 60 t 20",
      numbered(60, "t").join(""),
      "And hello from tab B",
      "Echo: And hello from tab B",
    ]);
    await screenshot(b.page, "two-tabs-phone");
  });

  it("approve a tool call (phone): the run waits with the call to approve, and Approve runs it to the answer", async () => {
    const tab = await openTab(await newContext(PHONE), `${site.url}/`);
    const { page } = tab;
    await connected(page);
    await page.getByRole("combobox", { name: "Agent" }).selectOption("careful");
    const started = await sendAndStart(page, "Please calculate 2 + 3");
    await chatIs(page, { run: started.runId, status: "WAITING" });
    const question = page.locator('.interrupt[data-kind="tool_approval"]');
    await expect.poll(() => question.textContent()).toContain('calculator({"expression":"2 + 3"})');
    await screenshot(page, "approval-phone");
    await question.getByRole("button", { name: "Approve" }).click();
    await eventually(async () => (await chatAttribute(page, "run")) !== started.runId, "the run that continues");
    const resumed = await chatAttribute(page, "run");
    await settled(page, resumed, "COMPLETED");
    expect(await question.count()).toBe(0);
    expect((await shownMessages(page)).at(-1)).toMatchObject({ role: "ASSISTANT", text: "The result is 5." });
    expect(seqsOf(tab, resumed)).toEqual((await serverLog(api, resumed, ADMIN)).map((e) => e.seq));
    await expectServerThread(page, started.conversationId);
    const { runs } = await serverThread(api, started.conversationId, ADMIN);
    expect(runs.map((r) => [r.kind, r.status]).sort()).toEqual([
      ["RESUME", "COMPLETED"],
      ["START", "WAITING"],
    ]);
  });

  it("a tool call in doubt (desktop): Stop cancels the run mid-call, Resume asks instead of calling again, and Skip tells the agent what happened", async () => {
    const tab = await openTab(await newContext(DESKTOP), `${site.url}/`);
    const { page } = tab;
    await connected(page);
    await page.getByRole("combobox", { name: "Agent" }).selectOption("toolbox");
    const started = await sendAndStart(page, "Start the long job");
    const startedCalls = () =>
      (fs.existsSync(mcpLog) ? fs.readFileSync(mcpLog, "utf8").split("\n").filter(Boolean) : [])
        .map((line) => JSON.parse(line) as { event: string; label?: string })
        .filter((e) => e.event === "started" && e.label === "long job");
    await until(() => startedCalls().length === 1, "the MCP server to start the call");
    await page.locator("#chat .thread code.call", { hasText: 'slow({"label":"long job"})' }).waitFor();
    await page.locator(".composer .stop").click();
    await chatIs(page, { run: started.runId, status: "CANCELLED" });

    await page.locator(".run").getByRole("button", { name: "Resume" }).click();
    await eventually(async () => (await chatAttribute(page, "run")) !== started.runId, "the resume");
    const resume = await chatAttribute(page, "run");
    await chatIs(page, { run: resume, status: "WAITING" });
    const doubt = page.locator('.interrupt[data-kind="tool_in_doubt"]');
    await expect.poll(() => doubt.textContent()).toMatch(/slow\(\{"label":"long job"\}\).*attempt 1/);
    await screenshot(page, "in-doubt-desktop");
    await doubt.getByRole("textbox", { name: "What happened" }).fill("done by hand");
    await doubt.getByRole("button", { name: "Skip" }).click();
    await eventually(async () => (await chatAttribute(page, "run")) !== resume, "the run after the answer");
    const answered = await chatAttribute(page, "run");
    await settled(page, answered, "COMPLETED");

    // The call was never made again; the agent read what the page told it.
    expect(startedCalls()).toHaveLength(1);
    const thread = await serverThread(api, started.conversationId, ADMIN);
    expect(thread.messages.filter((m) => m.role === "TOOL").map((m) => m.content)).toEqual(["done by hand"]);
    expect((await shownMessages(page)).at(-1)).toMatchObject({ role: "ASSISTANT", text: "The result is done by hand." });
    expect(await doubt.count()).toBe(0);
    await expectServerThread(page, started.conversationId);
    expect(thread.runs.map((r) => [r.kind, r.status]).sort()).toEqual([
      ["RESUME", "COMPLETED"],
      ["RESUME", "WAITING"],
      ["START", "CANCELLED"],
    ]);
  });

  it("cancel (phone): Stop cancels the run on the server; the page keeps what it streamed as the run's partial answer", async () => {
    const tab = await openTab(await newContext(PHONE), `${site.url}/`);
    const { page } = tab;
    await connected(page);
    const { runId, conversationId } = await sendAndStart(page, "stream 300 c 20");
    await page.locator("#chat .thread > li[data-role=ASSISTANT]", { hasText: "c10 " }).waitFor();
    await page.locator(".composer .stop").click();
    await settled(page, runId, "CANCELLED");
    const { run } = await admin(RUN, { id: runId });
    expect(run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
    const partial = (await shownMessages(page)).filter((m) => m.state === "partial");
    expect(partial.map((m) => m.text)).toEqual([run.partialOutput]);
    expect(run.partialOutput).toContain("c10 ");
    expect(run.partialOutput.length).toBeLessThan(numbered(300, "c").join("").length);
    expect(seqsOf(tab, runId)).toEqual((await serverLog(api, runId, ADMIN)).map((e) => e.seq));
    await expectServerThread(page, conversationId);
    await expect.poll(() => page.locator(".composer .stop").count()).toBe(0);
    await screenshot(page, "cancel-phone");
  });

  it("fork (desktop): Fork here at a checkpoint opens a new conversation with the thread up to it; the source stays as it was", async () => {
    const tab = await openTab(await newContext(DESKTOP), `${site.url}/`);
    const { page } = tab;
    await connected(page);
    const first = await sendAndStart(page, "First question");
    await settled(page, first.runId, "COMPLETED");
    const second = await sendAndStart(page, "Second question");
    await settled(page, second.runId, "COMPLETED");
    const source = first.conversationId;
    const firstAnswer = (await shownMessages(page))[1]!;
    expect(firstAnswer).toMatchObject({ role: "ASSISTANT", text: "Echo: First question" });

    await page.getByRole("button", { name: "History" }).click();
    const at = page.locator(`.history li[data-last-message="${firstAnswer.id}"]`);
    await at.getByRole("button", { name: "Fork here" }).click();
    await eventually(async () => !["", source].includes(await chatAttribute(page, "conversation")), "the fork opened");
    const fork = await chatAttribute(page, "conversation");
    await chatIs(page, { conversation: fork, phase: "ready" });
    await eventually(async () => new URL(page.url()).searchParams.get("c") === fork, "the fork's URL");
    expect((await shownMessages(page)).map((m) => m.text)).toEqual(["First question", "Echo: First question"]);
    await expectServerThread(page, fork);

    const inFork = await sendAndStart(page, "A question in the fork");
    expect(inFork.conversationId).toBe(fork);
    await settled(page, inFork.runId, "COMPLETED");
    await expectServerThread(page, fork);
    expect((await shownMessages(page)).map((m) => m.text)).toEqual([
      "First question",
      "Echo: First question",
      "A question in the fork",
      "Echo: A question in the fork",
    ]);
    expect((await serverThread(api, source, ADMIN)).messages.map((m) => m.content)).toEqual([
      "First question",
      "Echo: First question",
      "Second question",
      "Echo: Second question",
    ]);
    const listed = await page.locator("nav.conversations li").evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.id));
    expect(listed.slice(0, 2)).toEqual([fork, source]);
    await screenshot(page, "fork-desktop");
  });

  it("edit and re-run (phone): an edited message is written at the checkpoint that added it, and the answer is streamed again from there", async () => {
    const tab = await openTab(await newContext(PHONE), `${site.url}/`);
    const { page } = tab;
    await connected(page);
    const first = await sendAndStart(page, "Frist question");
    await settled(page, first.runId, "COMPLETED");
    const second = await sendAndStart(page, "Second question");
    await settled(page, second.runId, "COMPLETED");
    const typo = (await shownMessages(page))[0]!;

    const row = page.locator(`#chat .thread > li[data-id="${typo.id}"]`);
    await row.getByRole("button", { name: "Edit" }).click();
    await row.getByRole("textbox", { name: "Edited message" }).fill("First question");
    await row.getByRole("button", { name: "Re-run" }).click();
    await eventually(
      async () => (await shownMessages(page)).map((m) => `${m.state}:${m.text}`).join("|") === "stored:First question|stored:Echo: First question",
      "the thread re-run from the edited message",
    );
    const thread = await serverThread(api, first.conversationId, ADMIN);
    expect(thread.messages[0]).toMatchObject({ id: typo.id, content: "First question" });
    await expectServerThread(page, first.conversationId);
    const kinds = thread.runs.map((r) => [r.kind, r.status]);
    expect(kinds).toContainEqual(["EDIT", "COMPLETED"]);
    expect(kinds).toContainEqual(["RESUME", "COMPLETED"]);
    const rerun = thread.runs.find((r) => r.kind === "RESUME")!;
    await chatIs(page, { run: rerun.id, status: "COMPLETED" });
    expect(seqsOf(tab, rerun.id)).toEqual((await serverLog(api, rerun.id, ADMIN)).map((e) => e.seq));
    await screenshot(page, "edit-phone");
  });

  it("a token that expires mid-run (desktop): the provider fetches a fresh one, the socket is made again, and the run's events stay exact", async () => {
    tokenTtlS = 2;
    const tab = await openTab(await newContext(DESKTOP), `${site.url}/`);
    const { page } = tab;
    await connected(page);
    const handedOut = issued.length;
    const { runId, conversationId } = await sendAndStart(page, "stream 120 e 30");
    await settled(page, runId, "COMPLETED", 30_000);
    // The run outlived two tokens: the provider was asked again and fetched new ones, and the socket was made again.
    expect(new Set(issued.slice(handedOut)).size).toBeGreaterThanOrEqual(2);
    expect(Number(await page.locator("#connection").getAttribute("data-reconnects"))).toBeGreaterThanOrEqual(1);
    const afters = tab.afters.filter((a) => a.runId === runId).map((a) => a.after);
    expect(afters.length).toBeGreaterThanOrEqual(2);
    // Each rejoin asked for what came after what the page had: never from the start, never backwards.
    expect(afters[0]).toBe(0);
    expect(afters.slice(1).every((after, i) => after > 0 && after >= afters[i]!)).toBe(true);
    expect(seqsOf(tab, runId)).toEqual((await serverLog(api, runId, ADMIN)).map((e) => e.seq));
    expect((await shownMessages(page)).at(-1)!.text).toBe(numbered(120, "e").join(""));
    await expectServerThread(page, conversationId);
  }, 45_000);

  it("server rendering (phone): loadConversation on the server mid-run, hydrated in the browser without a mismatch, rejoining after the state's lastSeq", async () => {
    const alice = hs256Token(SECRET, "alice", 600).token!;
    const started = await gql(
      api,
      `mutation { startRun(input: { message: "stream 150 h 20" }) { ... on StartRunSuccess { run { id } conversation { id } } } }`,
      {},
      {
        authorization: `Bearer ${alice}`,
      },
    );
    const runId = started.data.startRun.run.id as string;
    const conversationId = started.data.startRun.conversation.id as string;
    const observer = observeRun(api, runId, ADMIN);
    await until(() => observer.events().length >= 12, "a dozen events");

    const tab = await openTab(await newContext(PHONE), `${site.url}/?c=${conversationId}`);
    const { page } = tab;
    const data = await page.evaluate(() => (window as unknown as { __CHAT__: PageData }).__CHAT__);
    expect(data).toMatchObject({ conversationId, rendered: true, state: { conversationId, liveRunId: runId } });
    const lastSeq = data.state!.lastSeq;
    expect(lastSeq).toBeGreaterThanOrEqual(12);
    const streamed = textOf(observer.events().filter((e) => e.seq <= lastSeq));
    expect(streamed.length).toBeGreaterThan(0);
    expect(tab.html).toContain(`<div class="content">${streamed}</div>`);
    await settled(page, runId, "COMPLETED", 30_000);

    // Rejoined after the server's lastSeq: nothing before it was sent again, nothing after it missed.
    const log = await observer.done;
    expect(tab.afters.filter((a) => a.runId === runId).map((a) => a.after)).toEqual([lastSeq]);
    expect(seqsOf(tab, runId)).toEqual(log.filter((e) => e.seq > lastSeq).map((e) => e.seq));
    // The first text was the server's, and it only grew from there (no flash, no replay).
    const texts = await page.evaluate(() => (window as unknown as { __texts: string[] }).__texts);
    expect(texts[0]).toBe(streamed);
    expect(texts.every((text, i) => i === 0 || (text.startsWith(texts[i - 1]!) && text.length > texts[i - 1]!.length))).toBe(true);
    expect(texts.at(-1)).toBe(numbered(150, "h").join(""));
    await expectServerThread(page, conversationId);
    await screenshot(page, "ssr-phone");
  });
});
