// GraphiQL's page (about 9 MB, its scripts inlined) is served compressed as the
// browser asks (brotli or gzip), computed once and kept; it opens on three
// tabs that start a run, follow it and inspect it.
import http from "node:http";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { defaultResponder, splitTokens, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { eventually, launchChromium, PAGE_TIMEOUT_MS } from "../testkit/browser.ts";
import { startTestApp } from "../testkit/app.ts";
import { collect, gqlOk, wsClient } from "../testkit/graphql.ts";
import { GRAPHIQL_DEFAULT_DOCUMENT, GRAPHIQL_TABS, graphiqlRoute } from "../src/server/graphiql.ts";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;

beforeAll(async () => {
  fake = await startFakeOllama();
  // "slowly ..." answers a token every 300 ms (about 4 s in all, longer than a busy machine takes to open the
  // FollowRun tab after the start), so a subscription can be watched as it streams.
  fake.setResponder((request) =>
    request.messages.findLast((m) => m.role === "user")?.content.startsWith("slowly")
      ? { kind: "trickle", tokens: splitTokens("one two three four five six seven eight nine ten eleven twelve"), delayMs: 300 }
      : defaultResponder(request),
  );
  app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: "page-token" } });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

/** A GET of the page with raw bytes (no client-side decompression). */
function getPage(headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${app.url}/graphql`, { headers: { accept: "text/html", ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on("error", reject);
  });
}

describe("the GraphiQL page", () => {
  it("comes gzip or brotli compressed as asked, decompressing to the page, with Vary: Accept-Encoding and an ETag", async () => {
    const plain = await getPage({ "accept-encoding": "identity" });
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.toString("utf8")).toContain("<title>runledger</title>");

    const gzipped = await getPage({ "accept-encoding": "gzip" });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers["content-encoding"]).toBe("gzip");
    expect(gzipped.headers.vary).toMatch(/Accept-Encoding/i);
    expect(Number(gzipped.headers["content-length"])).toBe(gzipped.body.length);
    expect(zlib.gunzipSync(gzipped.body).equals(plain.body)).toBe(true);

    const brotli = await getPage({ "accept-encoding": "gzip, deflate, br" });
    expect(brotli.headers["content-encoding"]).toBe("br");
    expect(zlib.brotliDecompressSync(brotli.body).equals(plain.body)).toBe(true);

    const sizes = { identity: plain.body.length, gzip: gzipped.body.length, br: brotli.body.length };
    process.stdout.write(`GraphiQL page bytes: ${JSON.stringify(sizes)}\n`);
    expect(sizes.gzip).toBeLessThan(sizes.identity / 3);
    expect(sizes.br).toBeLessThan(sizes.gzip);

    // The validator names the bytes: each encoding has its own, and a match is a 304.
    expect(new Set([plain.headers.etag, gzipped.headers.etag, brotli.headers.etag]).size).toBe(3);
    const again = await getPage({ "accept-encoding": "gzip", "if-none-match": gzipped.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it("is rendered once and compressed once per encoding", async () => {
    let renders = 0;
    const route = graphiqlRoute(async () => {
      renders++;
      return new Response("<html>page</html>".repeat(1000), { headers: { "content-type": "text/html; charset=utf-8" } });
    });
    const server = http.createServer((req, res) => void route(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const get = () =>
      new Promise<Buffer>((resolve) =>
        http.get(`http://127.0.0.1:${port}/graphql`, { headers: { accept: "text/html", "accept-encoding": "gzip" } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => resolve(Buffer.concat(chunks)));
        }),
      );
    const [a, b] = await Promise.all([get(), get()]);
    const c = await get();
    server.close();
    expect(renders).toBe(1);
    expect(a.equals(b) && b.equals(c)).toBe(true);
  });

  it("opens on three tabs (start, follow, inspect) with their variables, and each works as written", async () => {
    const html = (await getPage({})).body.toString("utf8");
    expect(html).toContain(JSON.stringify(GRAPHIQL_TABS));
    expect(html).toContain('"defaultEditorToolsVisibility":"variables"');
    expect(GRAPHIQL_TABS.map((tab) => /^(mutation|subscription|query) (\w+)/m.exec(tab.query)?.[2])).toEqual(["StartRun", "FollowRun", "Inspect"]);

    const token = { authorization: "Bearer page-token" };
    const post = async (operationName: string, variables: Record<string, unknown>) => {
      const response = await fetch(`${app.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", ...token },
        body: JSON.stringify({ query: GRAPHIQL_DEFAULT_DOCUMENT, operationName, variables }),
      });
      return (await response.json()) as any;
    };
    const started = await post("StartRun", JSON.parse(GRAPHIQL_TABS[0]!.variables));
    expect(started.data.startRun).toMatchObject({ __typename: "StartRunSuccess", run: { status: "RUNNING" } });
    const ws = wsClient(app.url, { token: "page-token" });
    const events = await collect(ws, GRAPHIQL_TABS[1]!.query, { runId: started.data.startRun.run.id }).done;
    await ws.dispose();
    expect(events.map((e: any) => e.runEvents.__typename)).toContain("ToolCallEvent");
    expect(events.at(-1).runEvents).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
    const inspected = await post("Inspect", { id: started.data.startRun.conversation.id });
    expect(inspected.errors).toBeUndefined();
    expect(inspected.data.conversation.messages.at(-1).content).toBe("The result is 51.");
    expect((await post("ResumeRun", { id: started.data.startRun.conversation.id })).data.resumeRun.__typename).toBe("NothingToResumeError");
  });
});

describe("GraphiQL in Chromium", () => {
  const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

  // Monaco draws spaces as no-break spaces.
  const plain = (text: string | null) => (text ?? "").replace(/\u00a0/g, " ");
  async function response(page: Page): Promise<string> {
    return plain(await page.locator(".graphiql-response").first().textContent());
  }

  /** Chooses a tab and pastes `variables` into its variables editor, as a person would. */
  async function openTab(page: Page, name: string, variables: Record<string, unknown>): Promise<void> {
    await page.locator(".graphiql-tab-button", { hasText: name }).dispatchEvent("click");
    await eventually(async () => (await page.locator(".graphiql-tab[aria-selected=true]").innerText()).includes(name), `the ${name} tab`);
    await page.locator(".graphiql-editor-tool .graphiql-editor").first().click();
    await page.evaluate((text) => navigator.clipboard.writeText(text), JSON.stringify(variables));
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Control+V");
  }

  it("runs the three tabs as written: StartRun with its variables, FollowRun showing each event as it streams, Inspect", async () => {
    // A server without API_TOKEN: GraphiQL's WebSocket would need the token in its connection_init.
    const open = await startTestApp({ ollamaUrl: fake.url });
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      context.setDefaultTimeout(PAGE_TIMEOUT_MS);
      await context.grantPermissions(["clipboard-read", "clipboard-write"]);
      const page = await context.newPage();
      await page.goto(`${open.url}/graphql`);

      // The StartRun tab opens with its variables in the editor; the message is ours for this test.
      await eventually(
        async () => plain(await page.locator(".graphiql-editor-tool .graphiql-editor").first().textContent()).includes("Please calculate 17 * 3"),
        "the prefilled variables",
      );
      await page.locator(".graphiql-editor-tool .graphiql-editor").first().click();
      await page.evaluate((text) => navigator.clipboard.writeText(text), JSON.stringify({ message: "slowly please" }));
      await page.keyboard.press("Control+A");
      await page.keyboard.press("Control+V");
      await page.click(".graphiql-execute-button");
      await eventually(async () => (await response(page)).includes("StartRunSuccess"), "StartRunSuccess");
      const [runId, conversationId] = (await response(page)).match(UUID)!;

      await openTab(page, "FollowRun", { runId });
      await page.click(".graphiql-execute-button");
      const seqs: number[] = [];
      await eventually(
        async () => {
          const shown = await response(page);
          const seq = Number(/"seq":\s*(\d+)/.exec(shown)?.[1] ?? NaN);
          if (Number.isInteger(seq) && seqs.at(-1) !== seq) seqs.push(seq);
          return shown.includes('"COMPLETED"');
        },
        "the run's last event",
        20_000,
      );
      // One event at a time, newest last: several were seen on their way, in order.
      expect(seqs.length).toBeGreaterThanOrEqual(4);
      expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
      expect(await response(page)).toContain("RunStatusEvent");

      await openTab(page, "Inspect", { id: conversationId });
      await page.click(".graphiql-execute-button");
      // The tab holds Inspect and ResumeRun: GraphiQL asks which to run.
      await page.getByRole("menuitem", { name: "Inspect" }).click();
      // The editor draws only the lines in view: the top of the answer.
      await eventually(async () => (await response(page)).includes('"title": "slowly please"'), "the conversation");
      expect(await response(page)).toMatch(/"messageCount": 2,\s*"next": \[\],\s*"resumable": false/);
    } finally {
      await browser.close();
      await open.close();
    }
  }, 60_000);
});
