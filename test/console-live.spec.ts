// The console kept live and usable, in a real browser (Chromium through
// playwright-core) against runledger started in this process with the fake
// Ollama: it never goes stale (a server restart under an open page, a dropped
// socket in the middle of a run), the thread follows long streams unless the
// reader scrolls up, the phone layout (390×844), and the smaller things (export,
// search, cancel, forks, layout edges). The restart, the following and the
// export run at 1400×900 and at 390×844, where the list, the chat and the runs
// are views under a tab bar. One server and one browser serve every test;
// screenshots go to test-results/console/.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page, Route, WebSocketRoute } from "playwright-core";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { eventually, launchChromium, PAGE_TIMEOUT_MS, screenshot, watchRunStreams } from "../testkit/browser.ts";

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1400, height: 900 };
/** The sizes the main paths are run at, each named as its screenshots are. */
const SIZES = [DESKTOP, PHONE].map((viewport) => ({ viewport, name: `${viewport.width}x${viewport.height}` }));

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let database: ReturnType<typeof tempDatabaseUrl>;
let agentsFile: string;
let browser: Browser;
let open: { close(): Promise<void>; pageErrors: string[]; deadStreams: string[] } | undefined;

function appEnv(port?: number): Record<string, string> {
  return { RUNLEDGER_CONFIG: agentsFile, ...(port ? { PORT: String(port) } : {}) };
}

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-console-live-"));
  const graphs = path.join(ROOT, "test", "fixtures", "graphs");
  agentsFile = path.join(dir, "agents.json");
  fs.writeFileSync(
    agentsFile,
    JSON.stringify({
      agents: {
        default: { type: "chat" },
        planner: { type: "graph", description: "Plans, then answers.", module: path.join(graphs, "two-node.ts"), export: "graph" },
        interviewer: { type: "graph", description: "Asks who should answer.", module: path.join(graphs, "ask.ts"), export: "graph" },
      },
    }),
  );
  database = tempDatabaseUrl("runledger-console-live-db-");
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: appEnv() });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await fake?.close();
  if (agentsFile) fs.rmSync(path.dirname(agentsFile), { recursive: true, force: true });
  database?.remove();
});

afterEach(async () => {
  const page = open;
  open = undefined;
  if (!page) return;
  await page.close();
  expect(page.pageErrors).toEqual([]);
  expect(page.deadStreams).toEqual([]);
  await until(() => app.services.bus.stats().changeSubscribers === 0, "the closed page's subscriptions to end");
});

/** Opens the console in a fresh context of this size, optionally routing its WebSocket first, and waits until it is connected. */
async function openConsole(fragment = "", options: { viewport?: { width: number; height: number }; routeWs?: (ws: WebSocketRoute) => void } = {}) {
  const context = await browser.newContext({ viewport: options.viewport ?? DESKTOP });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.stack ?? error.message));
  const deadStreams = watchRunStreams(page);
  if (options.routeWs) await page.routeWebSocket(/\/graphql$/, options.routeWs);
  open = { close: () => context.close(), pageErrors, deadStreams };
  await page.goto(`${app.url}/console${fragment}`);
  await connected(page);
  return page;
}

const connection = (page: Page) => page.getByRole("status", { name: "Connection" });
const connected = (page: Page) =>
  connection(page)
    .filter({ hasText: /^connected$/ })
    .waitFor();
const conversationLinks = (page: Page) => page.getByRole("navigation", { name: "Conversations" }).getByRole("list").getByRole("link");
const thread = (page: Page) => page.getByRole("log", { name: "Messages" });
// On a phone the runs are a view of their own, hidden while the chat shows: a run's card is read there too.
const runCard = (page: Page, n: number) => page.getByRole("article", { name: `Run ${n}`, exact: true, includeHidden: true });
const heading = (page: Page) => page.getByRole("main").getByRole("heading", { level: 2 });

let titles = 0;
function unique(text: string): string {
  return `${text} ${++titles}`;
}

async function startViaApi(message: string, conversationId?: string): Promise<{ runId: string; conversationId: string }> {
  const { startRun } = await gqlOk(app.url, START_RUN, { message, conversationId });
  expect(startRun.__typename).toBe("StartRunSuccess");
  return { runId: startRun.run.id, conversationId: startRun.conversation.id };
}

/** Shows one of the three views on a phone, through its tab bar; on a wide screen all three show already. */
async function show(page: Page, view: "Conversations" | "Chat" | "Runs"): Promise<void> {
  const tabs = page.getByRole("tablist", { name: "Views" });
  if (await tabs.isVisible()) await tabs.getByRole("tab", { name: view }).click();
}

async function send(page: Page, message: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(message);
  await page.getByRole("button", { name: "Send", exact: true }).click();
}

/** How far the thread's bottom is below what it shows, in pixels. */
async function gapBelow(page: Page): Promise<number> {
  return thread(page).evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
}

/** The run's card shows this status and its recorded usage (the snapshot has its outcome), and nothing streams. */
async function recorded(page: Page, n: number, status: string): Promise<void> {
  await runCard(page, n).filter({ hasText: status }).waitFor({ state: "attached", timeout: 30_000 });
  await eventually(
    async () => (await thread(page).locator(".streaming").count()) === 0 && ((await runCard(page, n).textContent()) ?? "").includes("usage"),
    `run ${n} recorded`,
    20_000,
  );
}

/** n tokens of a long answer, several lines' worth. */
function longAnswer(n: number, word = "streaming"): string[] {
  return Array.from({ length: n }, (_, i) => `${word}${i} `);
}

const RENAME = /* GraphQL */ `
  mutation ($id: ID!, $title: String!) {
    renameConversation(input: { conversationId: $id, title: $title }) { __typename }
  }
`;
const FORK = /* GraphQL */ `
  mutation ($checkpointId: ID!) {
    forkConversation(input: { checkpointId: $checkpointId }) { __typename ... on ForkConversationSuccess { conversation { id title } } }
  }
`;
const CHECKPOINTS = /* GraphQL */ `
  query ($id: ID!) { conversation(id: $id) { checkpoints(first: 100) { edges { node { id } } } } }
`;

describe("never stale", () => {
  for (const { viewport, name } of SIZES) {
    it(`a server restart under an open console (${name}): it reconnects and resubscribes, then shows what is created, run and renamed elsewhere, and what it runs itself, without a reload`, async () => {
      const first = await startViaApi(unique("Open across the restart"));
      await waitForRun(app.url, first.runId);
      const page = await openConsole(`#/c/${first.conversationId}`, { viewport });
      await recorded(page, 1, "COMPLETED");
      await until(() => app.services.bus.stats().changeSubscribers === 1, "the page's list subscription");

      // A graceful shutdown completes the page's subscriptions, then closes its socket.
      const port = Number(new URL(app.url).port);
      await app.close();
      await connection(page).filter({ hasText: "reconnecting" }).waitFor();
      await screenshot(page, `restart-server-down-${name}`);
      app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: appEnv(port) });
      await connected(page);
      // The list stream is subscribed again on the new server: exactly once.
      await until(() => app.services.bus.stats().changeSubscribers === 1, "the list subscription on the new server", 20_000);

      // Created elsewhere.
      const created = unique("Created after the restart");
      await waitForRun(app.url, (await startViaApi(created)).runId);
      await show(page, "Conversations");
      await conversationLinks(page).filter({ hasText: created }).filter({ hasText: "COMPLETED" }).waitFor();
      // Run elsewhere, in the open conversation.
      await show(page, "Chat");
      await waitForRun(app.url, (await startViaApi("Asked from elsewhere", first.conversationId)).runId);
      await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Echo: Asked from elsewhere" }).waitFor();
      await recorded(page, 2, "COMPLETED");
      // Renamed elsewhere.
      const renamed = unique("Renamed after the restart");
      expect((await gqlOk(app.url, RENAME, { id: first.conversationId, title: renamed })).renameConversation.__typename).toBe("RenameConversationSuccess");
      await heading(page).filter({ hasText: renamed }).waitFor();
      await show(page, "Conversations");
      await conversationLinks(page).filter({ hasText: renamed }).waitFor();
      // Run from the page itself: the list follows it too.
      await show(page, "Chat");
      await send(page, "Asked from the console");
      await recorded(page, 3, "COMPLETED");
      await show(page, "Runs");
      await runCard(page, 3).filter({ hasText: "COMPLETED" }).waitFor();
      await show(page, "Conversations");
      await conversationLinks(page).filter({ hasText: renamed }).filter({ hasText: "6 messages" }).waitFor();
      // Caught up: every stream back (a view just shown may still be reading its list).
      await expect.poll(() => connection(page).textContent(), { timeout: PAGE_TIMEOUT_MS }).toBe("connected");
      await show(page, "Chat");
      await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Echo: Asked from the console" }).waitFor();
      await screenshot(page, `restart-caught-up-${name}`);
    });
  }

  it("a server restart: the reads that failed while it was down take their notices away once one succeeds; the refusal of the user's own action stays", async () => {
    const first = await startViaApi(unique("Read across the restart"));
    await waitForRun(app.url, first.runId);
    const page = await openConsole(`#/c/${first.conversationId}`);
    await recorded(page, 1, "COMPLETED");
    await until(() => app.services.bus.stats().changeSubscribers === 1, "the page's list subscription");
    const main = page.getByRole("main");
    // The user's own action, refused: that notice is theirs to dismiss.
    await main.getByRole("button", { name: "Rename" }).click();
    const form = page.getByRole("form", { name: "Rename conversation" });
    await form.getByRole("textbox", { name: "Title" }).fill("   ");
    await form.getByRole("button", { name: "Save" }).click();
    const refusal = main.getByRole("alert").filter({ hasText: "Could not rename: VALIDATION" });
    await refusal.waitFor();
    await form.getByRole("button", { name: "Cancel" }).click();

    // A run active at the shutdown ends INTERRUPTED: the page reads the conversation
    // again (its run ended, its row changed) as the server goes away. Those reads
    // fail as they do once its listener is closed; refused here from the start, so
    // none slips in before it is.
    fake.enqueue({ kind: "silence", tokens: ["Thinking "] });
    await startViaApi("Running at the restart", first.conversationId);
    await runCard(page, 2).filter({ hasText: "RUNNING" }).waitFor();
    await until(() => fake.asked("Running at the restart") > 0, "the run's model request, which takes the silence");
    const refused = (route: Route) => (route.request().method() === "POST" ? route.abort("connectionrefused") : route.continue());
    await page.route(/\/graphql$/, refused);
    const port = Number(new URL(app.url).port);
    await app.close();
    await connection(page).filter({ hasText: "reconnecting" }).waitFor();
    const readFailures = main.getByRole("alert").filter({ hasText: /Could not read the conversation: could not reach .*\/graphql: Failed to fetch/ });
    await readFailures.first().waitFor();
    await page.unroute(/\/graphql$/, refused);
    app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: appEnv(port) });
    await connected(page);
    await until(() => app.services.bus.stats().changeSubscribers === 1, "the list subscription on the new server", 20_000);

    // Read again after the reconnection: the run shows as it ended, the read failures go, the refusal stays.
    await recorded(page, 2, "INTERRUPTED");
    await expect.poll(() => readFailures.count(), { timeout: PAGE_TIMEOUT_MS }).toBe(0);
    expect(await refusal.count()).toBe(1);
    expect(await main.getByRole("alert").count()).toBe(1);
    await screenshot(page, "restart-read-notices-cleared");
  });

  it("a list stream the server completes is subscribed again; a dropped socket in the middle of a run: its stream resumes with after: the last seq seen, so nothing is missed or shown twice", async () => {
    const sent: { at: number; message: string }[] = [];
    let refuse = false;
    const sockets: { page: WebSocketRoute; server: WebSocketRoute }[] = [];
    const page = await openConsole("#/new", {
      routeWs: (ws) => {
        if (refuse) return void ws.close({ code: 1012, reason: "restarting" });
        const server = ws.connectToServer();
        // Forwarded by hand, so what the page sends can be read.
        ws.onMessage((message) => {
          sent.push({ at: Date.now(), message: String(message) });
          server.send(message);
        });
        sockets.push({ page: ws, server });
      },
    });
    type Sent = { id?: string; type: string; payload?: { query?: string; variables?: { after?: number } } };
    const subscribes = (to: string, since = 0) =>
      sent
        .filter((s) => s.at >= since)
        .map((s) => JSON.parse(s.message) as Sent)
        .filter((m) => m.type === "subscribe" && m.payload?.query?.includes(to));

    // The list's stream completed by the server while the socket stays up: it is subscribed again.
    // Connected comes with the acknowledgement; the list's subscribe may still be on its way.
    await eventually(() => subscribes("conversationsChanged").length > 0, "the list's subscription");
    const listId = subscribes("conversationsChanged").at(-1)!.id!;
    const completedAt = Date.now();
    sockets.at(-1)!.server.send(JSON.stringify({ id: listId, type: "complete" }));
    sockets.at(-1)!.page.send(JSON.stringify({ id: listId, type: "complete" }));
    await eventually(() => subscribes("conversationsChanged", completedAt).length === 1, "the list's stream subscribed again");
    await until(() => app.services.bus.stats().changeSubscribers === 1, "the list's new subscription on the server");
    // The badge is "connected" again: the socket stayed up, only the list's stream was completed.
    await connected(page);
    const elsewhere = unique("Created after the list stream ended");
    await waitForRun(app.url, (await startViaApi(elsewhere)).runId);
    await conversationLinks(page).filter({ hasText: elsewhere }).filter({ hasText: "COMPLETED" }).waitFor();

    const tokens = longAnswer(40, "tok");
    fake.enqueue({ kind: "trickle", tokens, delayMs: 80 });
    await send(page, unique("A run across a dropped socket"));
    const answer = thread(page).getByRole("article", { name: "Assistant" });
    await answer.filter({ hasText: "tok10 " }).waitFor();

    refuse = true;
    const droppedAt = Date.now();
    const socket = sockets.at(-1)!;
    await socket.server.close({ code: 1000 });
    await socket.page.close({ code: 1012, reason: "restarting" });
    await connection(page).filter({ hasText: "reconnecting" }).waitFor();
    await new Promise((resolve) => setTimeout(resolve, 700));
    refuse = false;
    await connected(page);
    await recorded(page, 1, "COMPLETED");

    expect(await answer.count()).toBe(1);
    expect(await answer.textContent()).toBe(tokens.join(""));
    const resubscribed = subscribes("runEvents", droppedAt);
    expect(resubscribed.length).toBeGreaterThan(0);
    for (const m of resubscribed) expect(m.payload!.variables!.after).toBeGreaterThanOrEqual(10);
  });
});

describe("following the stream", () => {
  for (const { viewport, name } of SIZES) {
    // Round after round at 1400×900, where the view once fell further behind each round; one round in the phone layout.
    const rounds = viewport === DESKTOP ? 2 : 1;
    it(
      `stays at the bottom through long answers, a failed run, a resume and another message, ${rounds === 1 ? "one round" : "round after round"} (${name}); the wheel stops following, Jump to latest brings it back`,
      { timeout: 120_000 },
      async () => {
        const page = await openConsole("#/new", { viewport });
        let runs = 0;
        /** Streams one run to its end, measuring the gap below the thread's view as it goes. */
        const streamed = async (start: () => Promise<void>, status: string): Promise<number[]> => {
          await start();
          runs += 1;
          const gaps: number[] = [];
          const end = recorded(page, runs, status).then(() => true);
          let done = false;
          void end.finally(() => (done = true));
          while (!done) {
            gaps.push(await gapBelow(page));
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          await end;
          gaps.push(await gapBelow(page));
          return gaps;
        };

        // 300-token answers at 10 ms: more text lands per frame than at a model's usual pace, the harder case for following.
        for (let round = 1; round <= rounds; round++) {
          fake.enqueue({ kind: "trickle", tokens: longAnswer(300), delayMs: 10 });
          const long = await streamed(() => send(page, unique(`Round ${round}: a long answer`)), "COMPLETED");
          fake.enqueue({ kind: "errorLine", tokens: longAnswer(60, "partial"), error: "the model fell over", delayMs: 10 });
          const failed = await streamed(() => send(page, unique(`Round ${round}: this one fails`)), "FAILED");
          fake.enqueue({ kind: "trickle", tokens: longAnswer(300, "resumed"), delayMs: 10 });
          const resumed = await streamed(() => page.getByRole("main").getByRole("button", { name: "Resume" }).click(), "COMPLETED");
          for (const [what, gaps] of Object.entries({ long, failed, resumed })) {
            expect(Math.max(...gaps), `round ${round}, ${what}: the gap below the view (${gaps.join(", ")})`).toBeLessThanOrEqual(2);
          }
        }
        expect(await thread(page).evaluate((el) => el.scrollHeight > 3 * el.clientHeight)).toBe(true);
        await screenshot(page, `following-after-rounds-${name}`);

        // Scrolling up with the wheel while another answer streams: the view stays where the reader put it.
        fake.enqueue({ kind: "trickle", tokens: longAnswer(300, "another"), delayMs: 10 });
        await send(page, unique("Another message"));
        runs += 1;
        await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "another20 " }).waitFor();
        await thread(page).hover();
        await page.mouse.wheel(0, -400);
        const jump = page.getByRole("button", { name: /Jump to latest/ });
        await jump.waitFor();
        const readingAt = await thread(page).evaluate((el) => el.scrollTop);
        await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "another150 " }).waitFor();
        expect(Math.abs((await thread(page).evaluate((el) => el.scrollTop)) - readingAt)).toBeLessThanOrEqual(1);
        expect(await gapBelow(page)).toBeGreaterThan(200);
        await screenshot(page, `following-scrolled-up-${name}`);

        await jump.click();
        expect(await gapBelow(page)).toBeLessThanOrEqual(2);
        await recorded(page, runs, "COMPLETED");
        expect(await gapBelow(page)).toBeLessThanOrEqual(2);
        expect(await jump.count()).toBe(0);
      },
    );
  }
});

describe("phone layout (390×844)", () => {
  it("shows the list, the thread and the runs as three views under a tab bar; opening a conversation shows it, with the composer at the bottom of the screen", async () => {
    const title = unique("Seen on a phone");
    const { runId, conversationId } = await startViaApi(title);
    await waitForRun(app.url, runId);
    for (let i = 0; i < 6; i++) await waitForRun(app.url, (await startViaApi(`Message ${i} to fill the thread`, conversationId)).runId);

    const page = await openConsole("", { viewport: PHONE });
    const tabs = page.getByRole("tablist", { name: "Views" });
    await tabs.waitFor();
    const list = page.getByRole("navigation", { name: "Conversations" });
    expect(await list.isVisible()).toBe(true);
    expect(await page.getByRole("main").isVisible()).toBe(false);
    expect(await tabs.getByRole("tab", { name: "Conversations" }).getAttribute("aria-selected")).toBe("true");
    await screenshot(page, "phone-list");

    await conversationLinks(page).filter({ hasText: title }).click();
    await heading(page).filter({ hasText: title }).waitFor();
    expect(await list.isVisible()).toBe(false);
    expect(await tabs.getByRole("tab", { name: "Chat" }).getAttribute("aria-selected")).toBe("true");
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Echo: Message 5 to fill the thread" }).waitFor();
    await screenshot(page, "phone-chat");
    // The page does not scroll: the thread does, and the composer sits at the bottom of the screen.
    expect(await page.evaluate(() => document.scrollingElement!.scrollHeight <= innerHeight)).toBe(true);
    const composer = (await page.getByRole("form", { name: "Send a message" }).boundingBox())!;
    expect(composer.y + composer.height).toBeGreaterThan(PHONE.height - 24);
    expect(composer.y + composer.height).toBeLessThanOrEqual(PHONE.height);
    expect(await thread(page).evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
    expect(await gapBelow(page)).toBeLessThanOrEqual(2);

    await tabs.getByRole("tab", { name: "Runs" }).click();
    const inspector = page.getByRole("complementary", { name: "Runs and checkpoints" });
    await runCard(page, 7).waitFor();
    expect(await inspector.isVisible()).toBe(true);
    expect(await page.getByRole("main").isVisible()).toBe(false);
    // The checkpoints table keeps off the window's edges.
    const table = (await page.getByRole("table", { name: "Checkpoints" }).boundingBox())!;
    expect(table.x).toBeGreaterThanOrEqual(8);
    expect(table.x + table.width).toBeLessThanOrEqual(PHONE.width - 8);
    await screenshot(page, "phone-runs");

    // The list again, and the same conversation picked again: the chat shows.
    await tabs.getByRole("tab", { name: "Conversations" }).click();
    await conversationLinks(page).filter({ hasText: title }).click();
    await heading(page).filter({ hasText: title }).waitFor();
    expect(await page.getByRole("main").isVisible()).toBe(true);
  });

  it("keeps Send answer whole under a long hint, and the rename input shows the whole title", async () => {
    const page = await openConsole("#/new", { viewport: PHONE });
    await page.getByRole("radio", { name: "interviewer" }).check();
    const question = unique("Which of the three teams should take the question about the quarterly numbers?");
    await send(page, question);
    const form = page.getByRole("form", { name: "Answer the waiting run" });
    await form.waitFor();
    const button = form.getByRole("button", { name: /^Send answer/ });
    const panel = (await page.locator(".answer-panel").boundingBox())!;
    const box = (await button.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(panel.x + panel.width);
    expect(box.y + box.height).toBeLessThanOrEqual(Math.min(panel.y + panel.height, PHONE.height));
    expect(
      await button.evaluate((el) => el.scrollWidth <= el.clientWidth && el.getBoundingClientRect().height < 2 * parseFloat(getComputedStyle(el).lineHeight)),
    ).toBe(true);
    await screenshot(page, "phone-answer-form");

    await page.getByRole("main").getByRole("button", { name: "Rename" }).click();
    const input = page.getByRole("form", { name: "Rename conversation" }).getByRole("textbox", { name: "Title" });
    for (const viewport of [PHONE, DESKTOP]) {
      await page.setViewportSize(viewport);
      expect(await input.inputValue()).toContain("Which of the three teams");
      await eventually(
        () => input.evaluate((el) => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight + 1),
        `the whole title in view at ${viewport.width} px`,
      );
    }
  });
});

describe("the smaller things", () => {
  for (const { viewport, name } of SIZES) {
    it(`exports a conversation as JSONL and Markdown (${name})`, async () => {
      const title = unique("To export");
      const { runId, conversationId } = await startViaApi(title);
      await waitForRun(app.url, runId);
      const checkpoints = (await gqlOk(app.url, CHECKPOINTS, { id: conversationId })).conversation.checkpoints.edges.length;
      const page = await openConsole(`#/c/${conversationId}`, { viewport });
      await recorded(page, 1, "COMPLETED");

      const [jsonl] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export JSONL" }).click()]);
      expect(jsonl.suggestedFilename()).toMatch(/\.jsonl$/);
      const lines = fs
        .readFileSync(await jsonl.path(), "utf8")
        .trim()
        .split("\n");
      expect(lines).toHaveLength(checkpoints);
      expect(JSON.parse(lines.at(-1)!)).toMatchObject({ message_count: 2 });

      const [markdown] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export Markdown" }).click()]);
      expect(markdown.suggestedFilename()).toMatch(/\.md$/);
      const text = fs.readFileSync(await markdown.path(), "utf8");
      expect(text).toContain(title);
      expect(text).toContain(`Echo: ${title}`);
      await screenshot(page, `export-${name}`);
    });
  }

  it("searches and filters the conversation list", async () => {
    const apples = unique("Apples and pears");
    const plums = unique("Plums, failing");
    await waitForRun(app.url, (await startViaApi(apples)).runId);
    fake.enqueue({ kind: "errorLine", tokens: ["Half "], error: "the model fell over" });
    await waitForRun(app.url, (await startViaApi(plums)).runId);
    const page = await openConsole();
    await conversationLinks(page).filter({ hasText: plums }).filter({ hasText: "FAILED" }).waitFor();
    const search = page.getByRole("searchbox", { name: "Search" });

    await search.fill("APPLES pears");
    await eventually(async () => (await conversationLinks(page).count()) === 1, "one match");
    expect(await conversationLinks(page).first().textContent()).toContain(apples);
    await search.fill("");
    await page.getByRole("combobox", { name: "Status" }).selectOption("FAILED");
    await eventually(async () => {
      const texts = await conversationLinks(page).allTextContents();
      return texts.length > 0 && texts.every((t) => t.includes("FAILED")) && texts.some((t) => t.includes(plums));
    }, "only failed conversations");
    await search.fill("nothing is called this");
    await eventually(async () => (await conversationLinks(page).count()) === 0, "no match");
    await page
      .getByRole("status", { name: "Search result" })
      .filter({ hasText: /^0 of \d+ listed conversations match/ })
      .waitFor();
  });

  it("renders a custom graph's events and node labels the same after a reload as live", async () => {
    const page = await openConsole("#/new");
    await page.getByRole("radio", { name: "planner" }).check();
    fake.enqueue({ kind: "trickle", tokens: ["A ", "prime ", "has ", "two ", "divisors."], delayMs: 100 });
    await send(page, unique("What is a prime?"));
    await recorded(page, 1, "COMPLETED");
    const event = thread(page).getByRole("group", { name: "Event plan" });
    await event.waitFor();
    const live = await thread(page).locator("ol").innerText();
    expect(live).toContain("node answer");

    await page.reload();
    await connected(page);
    await recorded(page, 1, "COMPLETED");
    await event.waitFor();
    await eventually(async () => (await thread(page).locator("ol").innerText()) === live, "the same thread after the reload");
  });

  it("shows a user's own cancel as a choice, not a red error", async () => {
    const page = await openConsole("#/new");
    fake.enqueue({ kind: "silence", tokens: ["Thinking "] });
    const title = unique("Cancelled on purpose");
    await send(page, title);
    await thread(page).getByRole("article", { name: "Assistant" }).filter({ hasText: "Thinking" }).waitFor();

    // While the first run runs, the thread has no recorded messages yet: no "0 messages".
    const link = conversationLinks(page).filter({ hasText: title });
    await link.filter({ hasText: "RUNNING" }).waitFor();
    expect(await link.textContent()).not.toContain("0 messages");
    await page.getByRole("main").getByText("first run running").waitFor();
    expect(await page.getByRole("main").locator(".conversation-head").textContent()).not.toContain("0 messages");

    await page.getByRole("main").getByRole("button", { name: "Cancel run" }).click();
    await recorded(page, 1, "CANCELLED");
    const card = runCard(page, 1);
    expect(await card.locator(".error-text").count()).toBe(0);
    expect(await card.textContent()).not.toMatch(/\berror\b(?! code)/);
    const red = "rgb(180, 35, 24)";
    const colours = [card, thread(page).getByRole("article", { name: "Run 1 outcome" })].map((l) =>
      l.evaluate((root) => [root, ...root.querySelectorAll("*")].map((el) => getComputedStyle(el).color)),
    );
    for (const list of await Promise.all(colours)) expect(list).not.toContain(red);
    expect(await page.getByRole("alert").count()).toBe(0);
    await screenshot(page, "cancelled-by-user");
  });

  it("tells a fork from its source in the list, and keeps the checkpoints table off the window's edge", async () => {
    const source = unique("The source");
    const { runId, conversationId } = await startViaApi(source);
    await waitForRun(app.url, runId);
    const checkpointId = (await gqlOk(app.url, CHECKPOINTS, { id: conversationId })).conversation.checkpoints.edges.at(-1).node.id;
    const fork = (await gqlOk(app.url, FORK, { checkpointId })).forkConversation;
    expect(fork.__typename).toBe("ForkConversationSuccess");

    const page = await openConsole(`#/c/${conversationId}`);
    const forkLink = conversationLinks(page).filter({ hasText: fork.conversation.title });
    const sourceLink = conversationLinks(page).filter({ hasText: source }).filter({ hasNotText: "fork" });
    await forkLink.waitFor();
    expect(await forkLink.textContent()).toContain(`fork of ${source}`);
    expect(await sourceLink.count()).toBe(1);
    const style = (l: typeof forkLink) => l.evaluate((el) => getComputedStyle(el).borderLeftStyle);
    expect(await style(forkLink)).toBe("dashed");
    expect(await style(sourceLink)).not.toBe("dashed");

    await recorded(page, 1, "COMPLETED");
    await screenshot(page, "fork-in-list");
    const table = (await page.getByRole("table", { name: "Checkpoints" }).boundingBox())!;
    expect(table.x + table.width).toBeLessThanOrEqual(DESKTOP.width - 8);
  });
});
