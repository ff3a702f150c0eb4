// The console's state viewer, graph, edits and what runs stored in a real
// browser (Debian's Chromium through playwright-core), against one runledger
// started in this process with the fake Ollama and four agents (the default
// chat agent, the planner graph, the researcher graph with a subgraph, the
// interviewer graph that asks a person). One server and one browser serve
// every test (one more server where a test needs its own settings); each test
// opens its own page. Screenshots at 1400×900 and 390×844 go to
// test-results/console/.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { START_AGENT_RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { eventually, launchChromium, openPage, screenshot, type BrowserPage } from "../testkit/browser.ts";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let browser: Browser;
let open: BrowserPage | undefined;
let agentsDir: string;

const DESKTOP = { width: 1400, height: 900 };
const PHONE = { width: 390, height: 844 };

beforeAll(async () => {
  agentsDir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-console-state-"));
  const graphs = path.join(ROOT, "test", "fixtures", "graphs");
  const config = {
    agents: {
      default: { type: "chat" },
      planner: { type: "graph", description: "Plans, then answers.", module: path.join(graphs, "two-node.ts"), export: "graph" },
      researcher: { type: "graph", description: "Researches in a subgraph.", module: path.join(graphs, "subgraph.ts"), export: "graph" },
      interviewer: { type: "graph", description: "Asks who should answer.", module: path.join(graphs, "ask.ts"), export: "graph" },
    },
  };
  fs.writeFileSync(path.join(agentsDir, "agents.json"), JSON.stringify(config));
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { RUNLEDGER_CONFIG: path.join(agentsDir, "agents.json") } });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await fake?.close();
  fs.rmSync(agentsDir, { recursive: true, force: true });
});

afterEach(async () => {
  const page = open;
  open = undefined;
  if (!page) return;
  await page.close();
  expect(page.pageErrors).toEqual([]);
  expect(page.deadStreams).toEqual([]);
});

/** Opens a conversation in the console at 1400×900 and waits until it is connected. */
async function openConversation(conversationId: string): Promise<Page> {
  open = await openPage(browser, `${app.url}/console#/c/${conversationId}`);
  await open.page.setViewportSize(DESKTOP);
  await open.page
    .getByRole("status", { name: "Connection" })
    .filter({ hasText: /^connected$/ })
    .waitFor();
  return open.page;
}

/**
 * Screenshots of the element's neighbourhood at both sizes; the page goes back to 1400×900. On a phone the
 * chat and the inspector are views of their own: the tab that shows the element is chosen first.
 */
async function screenshots(page: Page, name: string, target: () => ReturnType<Page["locator"]>): Promise<void> {
  await target().scrollIntoViewIfNeeded();
  await screenshot(page, `${name}-1400x900`);
  const inInspector = await target().evaluate((element) => element.closest(".inspector") !== null);
  await page.setViewportSize(PHONE);
  await page
    .getByRole("tablist", { name: "Views" })
    .getByRole("tab", { name: inInspector ? "Runs" : "Chat" })
    .click();
  await target().scrollIntoViewIfNeeded();
  await screenshot(page, `${name}-390x844`);
  await page.setViewportSize(DESKTOP);
}

async function start(message: string, agent = "default"): Promise<{ runId: string; conversationId: string }> {
  const { startRun } = await gqlOk(app.url, START_AGENT_RUN, { message, agent });
  expect(startRun.__typename).toBe("StartRunSuccess");
  return { runId: startRun.run.id, conversationId: startRun.conversation.id };
}

const MESSAGES = /* GraphQL */ `query ($id: ID!) { conversation(id: $id) { messages { role content } runs(first: 20) { edges { node { kind status } } } } }`;
const messagesOf = async (id: string) => (await gqlOk(app.url, MESSAGES, { id })).conversation;

const checkpointTable = (page: Page) => page.getByRole("table", { name: "Checkpoints" });
const checkpointRows = (page: Page) => checkpointTable(page).locator("tbody > tr:not(.state-row):not(.fork-row):not(.failure-row):not(.preview-row)");
const thread = (page: Page) => page.getByRole("log", { name: "Messages" });
const graph = (page: Page, agent: string) => page.getByRole("figure", { name: `Graph of agent ${agent}` });
const graphNode = (page: Page, agent: string, node: string) => graph(page, agent).locator(`[data-node="${node}"]`);

/** Opens the state of the newest checkpoint (the table lists newest first). */
async function openNewestState(page: Page) {
  await checkpointRows(page).first().getByRole("button", { name: "State" }).click();
  const viewer = page.getByRole("region", { name: /^State at step \d+$/ });
  await viewer.getByRole("heading", { name: /^Messages/ }).waitFor();
  return viewer;
}

describe("the state viewer", () => {
  it("previews each checkpoint's last message and opens a checkpoint into its state: messages as in the thread, the rest as JSON trees", async () => {
    const { runId, conversationId } = await start("Please calculate 6 * 7");
    expect(await waitForRun(app.url, runId)).toMatchObject({ status: "COMPLETED" });
    const page = await openConversation(conversationId);

    // Each row shows the role and text of its checkpoint's last message: where to fork is no longer a guess.
    await eventually(async () => (await checkpointRows(page).count()) >= 4, "the checkpoints");
    const previews = await checkpointTable(page).locator("tbody > tr.preview-row").allTextContents();
    const rows = await checkpointRows(page).count();
    // Newest first; the input checkpoint holds no message yet, so it has no preview.
    expect(previews).toHaveLength(rows - 1);
    expect(previews[0]).toBe("assistant The result is 42.");
    expect(previews).toContain("user Please calculate 6 * 7");
    expect(previews).toContain("tool 42");

    const viewer = await openNewestState(page);
    const messages = viewer.getByRole("list", { name: "Messages at this checkpoint" });
    await expect.poll(() => messages.getByRole("article").count()).toBe(4);
    await expect.poll(() => messages.getByRole("article", { name: "You" }).textContent()).toBe("Please calculate 6 * 7");
    await expect.poll(() => messages.locator(".tool-name").textContent()).toBe("calculator");
    await expect.poll(() => messages.getByRole("article", { name: "Tool result" }).locator(".message-text").textContent()).toBe("42");
    await expect.poll(() => messages.getByRole("article", { name: "Assistant" }).last().textContent()).toBe("The result is 42.");
    const metadata = viewer.getByRole("group", { name: "Metadata" });
    await expect.poll(() => metadata.textContent()).toContain('source: "loop"');
    await expect.poll(() => metadata.textContent()).toMatch(/step: \d+/);
    await screenshots(page, "state-viewer", () => viewer);

    // An older checkpoint holds fewer messages; the input checkpoint none.
    await checkpointRows(page).last().getByRole("button", { name: "State" }).click();
    const first = page.getByRole("region", { name: "State at step -1" });
    await first.getByText("No messages yet at this checkpoint.").waitFor();
    await expect.poll(() => first.getByRole("group", { name: "Metadata" }).textContent()).toContain('source: "input"');
  });
});

describe("the graph", () => {
  it("draws the agent's graph and lights the node a streaming run is in, then the node a cancelled run stopped at", async () => {
    fake.enqueue({ kind: "silence", tokens: ["Thinking "] });
    const { runId, conversationId } = await start("Take your time.");
    await until(() => fake.openChatRequests() > 0, "the model request");
    const page = await openConversation(conversationId);

    for (const node of ["__start__", "agent", "approve", "tools", "__end__"]) await graphNode(page, "default", node).waitFor();
    expect(await graph(page, "default").locator(".graph-edge.conditional").count()).toBe(5);
    await eventually(async () => (await graphNode(page, "default", "agent").getAttribute("class"))?.includes("active") ?? false, "the running node lit");
    expect(await graph(page, "default").locator("figcaption").textContent()).toBe("Running: agent");
    expect(await graph(page, "default").locator(".graph-node.active").count()).toBe(1);
    await screenshots(page, "graph-running", () => graph(page, "default"));

    await page.getByRole("button", { name: "Cancel run" }).first().click();
    expect(await waitForRun(app.url, runId)).toMatchObject({ status: "CANCELLED" });
    await eventually(async () => (await graphNode(page, "default", "agent").getAttribute("class"))?.includes("stopped") ?? false, "the stopped node");
    expect(await graph(page, "default").locator("figcaption").textContent()).toBe("Stopped at: agent");
    expect(await graph(page, "default").locator(".graph-node.active").count()).toBe(0);
    await screenshots(page, "graph-stopped", () => graph(page, "default"));
  });

  it("lights the node a failed run stopped at, and the node a waiting run asks from", async () => {
    fake.enqueue({ kind: "errorLine", tokens: ["Par"], error: "the model broke down" });
    const failed = await start("Break down, please.");
    expect(await waitForRun(app.url, failed.runId)).toMatchObject({ status: "FAILED" });
    let page = await openConversation(failed.conversationId);
    await eventually(async () => (await graphNode(page, "default", "agent").getAttribute("class"))?.includes("stopped") ?? false, "the failed node");
    expect(await graph(page, "default").locator("figcaption").textContent()).toBe("Stopped at: agent");
    await screenshots(page, "graph-failed", () => graph(page, "default"));
    const first = open!;
    open = undefined;
    await first.close();
    expect(first.pageErrors).toEqual([]);
    expect(first.deadStreams).toEqual([]);

    const waiting = await start("Who knows?", "interviewer");
    await eventually(
      async () => (await gqlOk(app.url, `query ($id: ID!) { run(id: $id) { status } }`, { id: waiting.runId })).run.status === "WAITING",
      "the waiting run",
    );
    page = await openConversation(waiting.conversationId);
    await eventually(async () => (await graphNode(page, "interviewer", "ask").getAttribute("class"))?.includes("stopped") ?? false, "the asking node");
    expect(await graph(page, "interviewer").locator("figcaption").textContent()).toBe("Stopped at: ask");
  });

  it("draws a graph's subgraph with its own nodes inside a box, and lights the inner node whose tokens stream", async () => {
    // The subgraph's model answers without a tool call and stalls mid-answer.
    fake.enqueue({ kind: "silence", tokens: ["Looking "] });
    const { conversationId } = await start("What is the capital of France?", "researcher");
    await until(() => fake.openChatRequests() > 0, "the model request");
    const page = await openConversation(conversationId);
    await graph(page, "researcher").locator('[data-subgraph="research"]').waitFor();
    for (const node of ["research:brief", "research:model", "research:lookup", "answer"]) await graphNode(page, "researcher", node).waitFor();
    await eventually(
      async () => (await graphNode(page, "researcher", "research:model").getAttribute("class"))?.includes("active") ?? false,
      "the subgraph's model node lit",
    );
    await screenshots(page, "graph-subgraph", () => graph(page, "researcher"));
    await page.getByRole("button", { name: "Cancel run" }).first().click();
    // The thread waits at the subgraph node as a whole: its box is lit.
    await eventually(async () => (await graph(page, "researcher").locator("figcaption").textContent()) === "Stopped at: research", "the stopped subgraph");
    expect(await graph(page, "researcher").locator('[data-subgraph="research"]').getAttribute("class")).toContain("stopped");
  });
});

describe("edits", () => {
  it("edits a message and re-runs from it in place, then in a fork that leaves the source as it is", async () => {
    const { runId, conversationId } = await start("Say hello.");
    expect(await waitForRun(app.url, runId)).toMatchObject({ status: "COMPLETED" });
    const page = await openConversation(conversationId);
    await thread(page).getByText("Echo: Say hello.").waitFor();

    let viewer = await openNewestState(page);
    await viewer.getByRole("button", { name: "Edit and re-run from here" }).click();
    let form = viewer.getByRole("form", { name: "Edit the message and re-run" });
    await form.getByRole("textbox", { name: "New text" }).fill("Say goodbye.");
    expect(await form.getByRole("radio", { name: /In place/ }).isChecked()).toBe(true);
    await screenshots(page, "edit-message", () => form);
    await form.getByRole("button", { name: "Re-run from here" }).click();

    await thread(page).getByText("Echo: Say goodbye.").waitFor();
    // The edit shows in the thread as the message it changed, in its own run's turn.
    await thread(page).getByRole("article", { name: "You" }).filter({ hasText: "Say goodbye." }).waitFor();
    await eventually(async () => (await messagesOf(conversationId)).runs.edges.length === 3, "the edit and its resume recorded");
    const inPlace = await messagesOf(conversationId);
    expect(inPlace.messages).toEqual([
      { role: "USER", content: "Say goodbye." },
      { role: "ASSISTANT", content: "Echo: Say goodbye." },
    ]);
    expect(inPlace.runs.edges.map((e: any) => [e.node.kind, e.node.status])).toEqual([
      ["START", "COMPLETED"],
      ["EDIT", "COMPLETED"],
      ["RESUME", "COMPLETED"],
    ]);
    await page.getByRole("article", { name: "Run 2", exact: true }).getByText("EDIT").waitFor();
    await screenshots(page, "edit-in-place", () => thread(page));

    viewer = await openNewestState(page);
    await viewer.getByRole("button", { name: "Edit and re-run from here" }).click();
    form = viewer.getByRole("form", { name: "Edit the message and re-run" });
    await form.getByRole("textbox", { name: "New text" }).fill("Say it in a fork.");
    await form.getByRole("radio", { name: /In a fork/ }).check();
    await form.getByRole("button", { name: "Re-run from here" }).click();

    // The fork opens and runs on; the source keeps its thread.
    await page.getByRole("note", { name: "Forked from" }).waitFor();
    await thread(page).getByText("Echo: Say it in a fork.").waitFor();
    const forkId = /#\/c\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    expect(forkId).not.toBe(conversationId);
    await eventually(async () => (await messagesOf(forkId)).runs.edges.at(-1)?.node.status === "COMPLETED", "the fork's run");
    expect((await messagesOf(forkId)).messages).toEqual([
      { role: "USER", content: "Say it in a fork." },
      { role: "ASSISTANT", content: "Echo: Say it in a fork." },
    ]);
    expect((await messagesOf(conversationId)).messages).toEqual(inPlace.messages);
    await screenshots(page, "edit-in-fork", () => thread(page));
  });

  it("edits a past message from its bubble in the thread and re-runs from it: in place (an EDIT run, then a run), then as a fork on a phone, the source left as it is", async () => {
    const first = await start("Say hello.");
    expect(await waitForRun(app.url, first.runId)).toMatchObject({ status: "COMPLETED" });
    const { conversationId } = first;
    // A long last turn: on a phone the thread scrolls.
    const long = `Say it once more, ${"at length ".repeat(30).trim()}.`;
    for (const message of ["Say more.", long]) {
      const { startRun } = await gqlOk(app.url, START_AGENT_RUN, { message, conversationId });
      expect(await waitForRun(app.url, startRun.run.id)).toMatchObject({ status: "COMPLETED" });
    }
    const page = await openConversation(conversationId);
    await thread(page).getByText(`Echo: ${long}`).waitFor();
    const bubble = (text: string) =>
      thread(page)
        .getByRole("listitem")
        .filter({ has: page.getByRole("article", { name: "You" }).getByText(text, { exact: true }) });
    const form = thread(page).getByRole("form", { name: "Edit the message and re-run" });

    // In place, on the first message: prefilled with its text, in place by default.
    await bubble("Say hello.").getByRole("button", { name: "Edit", exact: true }).click();
    const text = form.getByRole("textbox", { name: "New text" });
    expect(await text.inputValue()).toBe("Say hello.");
    expect(await form.getByRole("radio", { name: /In place/ }).isChecked()).toBe(true);
    // Unchanged text has nothing to re-run.
    expect(await form.getByRole("button", { name: "Save and re-run" }).isDisabled()).toBe(true);
    await text.fill("Say hi instead.");
    await screenshots(page, "edit-bubble", () => form);
    await form.getByRole("button", { name: "Save and re-run" }).click();

    await thread(page).getByText("Echo: Say hi instead.").waitFor();
    expect(await form.count()).toBe(0);
    await eventually(async () => (await messagesOf(conversationId)).runs.edges.at(-1)?.node.status === "COMPLETED", "the run after the edit");
    const inPlace = await messagesOf(conversationId);
    // The edited message replaced the original where it was added; the later turn is left behind.
    expect(inPlace.messages).toEqual([
      { role: "USER", content: "Say hi instead." },
      { role: "ASSISTANT", content: "Echo: Say hi instead." },
    ]);
    expect(inPlace.runs.edges.map((e: any) => [e.node.kind, e.node.status])).toEqual([
      ["START", "COMPLETED"],
      ["START", "COMPLETED"],
      ["START", "COMPLETED"],
      ["EDIT", "COMPLETED"],
      ["RESUME", "COMPLETED"],
    ]);
    // The ledger as it happened: the runs inspector shows the edit, the thread every turn in order.
    await page.getByRole("article", { name: "Run 4", exact: true }).getByText("EDIT").waitFor();
    await page.getByRole("article", { name: "Run 5", exact: true }).getByText("RESUME").waitFor();
    await bubble("Say hi instead.").waitFor();
    expect(await thread(page).getByRole("article", { name: "You" }).allTextContents()).toEqual(["Say hello.", "Say more.", long, "Say hi instead."]);
    // Saved, the thread follows its newest output again: the new answer at the bottom, in view.
    expect(await thread(page).evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
    await eventually(() => thread(page).evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight <= 2), "the thread at its bottom");
    await screenshots(page, "edit-bubble-in-place", () => thread(page));
    await screenshots(page, "edit-bubble-in-place-runs", () => page.getByRole("article", { name: "Run 4", exact: true }));

    // As a fork, on a phone, from the message of the turn the edit left behind: its checkpoint is that run's.
    await page.setViewportSize(PHONE);
    await page.getByRole("tablist", { name: "Views" }).getByRole("tab", { name: "Chat" }).click();
    expect(await thread(page).evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
    await bubble("Say more.").getByRole("button", { name: "Edit", exact: true }).click();
    // The form takes the typing at once, and the thread, which follows its newest output, keeps it in view.
    expect(await text.evaluate((el) => el === document.activeElement)).toBe(true);
    const view = (await thread(page).boundingBox())!;
    const field = (await text.boundingBox())!;
    expect(field.y).toBeGreaterThanOrEqual(view.y);
    expect(field.y + field.height).toBeLessThanOrEqual(view.y + view.height);
    await text.fill("Say more, in a fork.");
    await form.getByRole("radio", { name: /In a fork/ }).check();
    await form.getByRole("button", { name: "Save and re-run" }).click();

    await page.getByRole("note", { name: "Forked from" }).waitFor();
    await thread(page).getByText("Echo: Say more, in a fork.").waitFor();
    const forkId = /#\/c\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    expect(forkId).not.toBe(conversationId);
    await eventually(async () => (await messagesOf(forkId)).runs.edges.at(-1)?.node.status === "COMPLETED", "the fork's run");
    const forked = await messagesOf(forkId);
    expect(forked.messages).toEqual([
      { role: "USER", content: "Say hello." },
      { role: "ASSISTANT", content: "Echo: Say hello." },
      { role: "USER", content: "Say more, in a fork." },
      { role: "ASSISTANT", content: "Echo: Say more, in a fork." },
    ]);
    expect(forked.runs.edges.map((e: any) => e.node.kind)).toEqual(["EDIT", "RESUME"]);
    expect(await messagesOf(conversationId)).toEqual(inPlace);
    await page.setViewportSize(DESKTOP);
    await screenshots(page, "edit-bubble-fork", () => thread(page));
  });

  it("edits a graph agent's state as one of its nodes and runs on; a refusal is shown as the API words it", async () => {
    const { runId, conversationId } = await start("Plan a trip.", "planner");
    expect(await waitForRun(app.url, runId)).toMatchObject({ status: "COMPLETED" });
    const page = await openConversation(conversationId);
    const viewer = await openNewestState(page);
    await viewer.getByRole("button", { name: "Edit state" }).click();
    const form = viewer.getByRole("form", { name: "Edit state" });
    const values = form.getByRole("textbox", { name: "Values (JSON)" });

    await values.fill('{"nowhere": 1}');
    await form.getByRole("button", { name: "Save edit" }).click();
    await expect.poll(() => form.getByRole("alert").textContent()).toContain("VALIDATION");
    await values.fill("{not json");
    await form.getByRole("button", { name: "Save edit" }).click();
    await expect.poll(() => form.getByRole("alert").textContent()).toContain("Not JSON");
    expect((await messagesOf(conversationId)).runs.edges).toHaveLength(1);

    await values.fill(JSON.stringify({ messages: [{ role: "ASSISTANT", content: "A plan written by hand.", toolCalls: [] }] }));
    await form.getByRole("combobox", { name: "As node" }).selectOption("plan");
    await screenshots(page, "edit-state", () => form);
    await form.getByRole("button", { name: "Save edit" }).click();

    await eventually(async () => {
      const runs = (await messagesOf(conversationId)).runs.edges;
      return runs.length === 3 && runs[2].node.status === "COMPLETED";
    }, "the resume after the edit");
    const after = await messagesOf(conversationId);
    expect(after.runs.edges.map((e: any) => e.node.kind)).toEqual(["START", "EDIT", "RESUME"]);
    expect(after.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "ASSISTANT", "ASSISTANT"]);
    expect(after.messages[2].content).toBe("A plan written by hand.");
    await thread(page).getByText("A plan written by hand.").waitFor();
    await screenshots(page, "edit-state-done", () => thread(page));
  });
});

describe("what a run stored", () => {
  it("shows a custom graph's events and its messages' nodes the same after a reload as live, once the server keeps none of the run's events", async () => {
    // A server that forgets a run's events as soon as it ends: after the reload, only what the run stored can show them.
    const database = tempDatabaseUrl("runledger-console-stored-");
    const forgetful = await startTestApp({
      ollamaUrl: fake.url,
      databaseUrl: database.url,
      env: { RUNLEDGER_CONFIG: path.join(agentsDir, "agents.json"), EVENT_GRACE_MS: "0" },
    });
    try {
      open = await openPage(browser, `${forgetful.url}/console#/new`);
      const page = open.page;
      await page.setViewportSize(DESKTOP);
      const connected = () =>
        page
          .getByRole("status", { name: "Connection" })
          .filter({ hasText: /^connected$/ })
          .waitFor();
      await connected();
      await page.getByRole("radio", { name: "planner" }).check();
      fake.enqueue({ kind: "trickle", tokens: ["A ", "prime ", "has ", "exactly ", "two ", "divisors."], delayMs: 100 });
      await page.getByRole("textbox", { name: "Message" }).fill("What is a prime?");
      await page.getByRole("button", { name: "Send", exact: true }).click();

      // Live: the event and the answer's node while it streams.
      const event = thread(page).getByRole("group", { name: "Event plan" });
      const answer = thread(page).getByRole("article", { name: "Assistant" }).last();
      await event.waitFor();
      await answer.filter({ hasText: "prime" }).waitFor();
      expect(await answer.textContent()).toMatch(/^node answer/);
      const runCard = page.getByRole("article", { name: "Run 1", exact: true });
      const recorded = async () => {
        await runCard.filter({ hasText: "COMPLETED" }).waitFor();
        await eventually(
          async () => (await thread(page).locator(".streaming").count()) === 0 && ((await runCard.textContent()) ?? "").includes("usage"),
          "the recorded run",
        );
      };
      await recorded();
      const runId = (await gqlOk(forgetful.url, `{ conversations(first: 1) { edges { node { latestRun { id status } } } } }`)).conversations.edges[0].node
        .latestRun.id;
      // The server no longer has the run's events: a subscriber would get its outcome from the database alone.
      expect(await forgetful.services.bus.subscribeRun(runId)).toBeNull();

      // What the page shows at each size, having watched the run.
      const text = () => thread(page).locator("ol").innerText();
      const chat = () => page.getByRole("tablist", { name: "Views" }).getByRole("tab", { name: "Chat" }).click();
      const live = { desktop: await text(), phone: "" };
      // (The event's label is styled in capitals.)
      expect(live.desktop).toMatch(/event\s+plan\s+\{"steps":\["read the question","answer it briefly"\],"question":"What is a prime\?"\}/i);
      expect(live.desktop).toContain("node answer");
      // Where it streamed: after the question, before the answer.
      expect(live.desktop.indexOf("What is a prime?")).toBeLessThan(live.desktop.search(/event\s+plan/i));
      expect(live.desktop.search(/event\s+plan/i)).toBeLessThan(live.desktop.indexOf("node answer"));
      await screenshot(page, "stored-events-live-1400x900");
      await page.setViewportSize(PHONE);
      await chat();
      live.phone = await text();
      expect(live.phone).toContain("node answer");
      await screenshot(page, "stored-events-live-390x844");

      // Reloaded at each size: the same thread, from what the run stored.
      await page.setViewportSize(DESKTOP);
      await page.reload();
      await connected();
      await recorded();
      await event.waitFor();
      await eventually(async () => (await text()) === live.desktop, "the same thread after the reload at 1400×900");
      expect(await answer.locator(".node-label").textContent()).toBe("node answer");
      await screenshot(page, "stored-events-reloaded-1400x900");
      await page.setViewportSize(PHONE);
      await chat();
      await eventually(async () => (await text()) === live.phone, "the same thread after the reload at 390×844");
      await event.scrollIntoViewIfNeeded();
      await screenshot(page, "stored-events-reloaded-390x844");
    } finally {
      await open?.close();
      expect(open?.pageErrors ?? []).toEqual([]);
      expect(open?.deadStreams ?? []).toEqual([]);
      open = undefined;
      await forgetful.close();
      database.remove();
    }
  });
});
