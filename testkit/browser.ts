// A real browser for the console's specs: Debian's Chromium driven by
// playwright-core, one fresh context (its own storage) per page.
import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { chromiumPath } from "./services.ts";
import { ROOT } from "./app.ts";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const SCREENSHOT_DIR = path.join(ROOT, "test-results", "console");

/** Launches Chromium; Playwright gives it a fresh temporary profile and removes it on close. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: await chromiumPath(), args: CHROMIUM_ARGS });
}

export interface BrowserPage {
  context: BrowserContext;
  page: Page;
  /** Uncaught exceptions thrown in the page: a spec expects none. */
  pageErrors: string[];
  /** Run streams the page asked for after it had received their end (see watchRunStreams): a spec expects none. */
  deadStreams: string[];
  close(): Promise<void>;
}

/** The statuses of a run that still streams: any other status event is its stream's last. */
const STREAMING = new Set(["QUEUED", "RUNNING"]);

/**
 * Watches the page's GraphQL WebSocket for a runEvents subscription asked
 * `after:` a seq at or past the terminal event the page already received for
 * that run. Such a stream can only complete at once, empty; a page that asks
 * for it again on each end never settles. Returns the offending run ids, as
 * they happen.
 */
export function watchRunStreams(page: Page): string[] {
  const endedAt = new Map<string, number>();
  const dead: string[] = [];
  page.on("websocket", (ws) => {
    ws.on("framereceived", ({ payload }) => {
      const message = JSON.parse(String(payload)) as {
        type?: string;
        payload?: { data?: { runEvents?: { __typename?: string; status?: string; runId?: string; seq?: number } } };
      };
      const event = message.type === "next" ? message.payload?.data?.runEvents : undefined;
      if (event?.__typename === "RunStatusEvent" && event.status && !STREAMING.has(event.status) && event.runId) endedAt.set(event.runId, event.seq ?? 0);
    });
    ws.on("framesent", ({ payload }) => {
      const message = JSON.parse(String(payload)) as { type?: string; payload?: { query?: string; variables?: { runId?: string; after?: number | null } } };
      if (message.type !== "subscribe" || !message.payload?.query?.includes("runEvents(")) return;
      const { runId, after } = message.payload.variables ?? {};
      const end = runId ? endedAt.get(runId) : undefined;
      if (runId && end !== undefined && (after ?? 0) >= end) dead.push(runId);
    });
  });
  return dead;
}

/** Waits this long for anything on a page before failing: generous for a 2-core machine running two spec files at once, short enough to fail fast. */
export const PAGE_TIMEOUT_MS = 20_000;

/** Opens url in a new context; beforeNavigation may set up listeners or routes first. */
export async function openPage(browser: Browser, url: string, beforeNavigation?: (page: Page) => void | Promise<void>): Promise<BrowserPage> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.stack ?? error.message));
  const deadStreams = watchRunStreams(page);
  await beforeNavigation?.(page);
  await page.goto(url);
  return { context, page, pageErrors, deadStreams, close: () => context.close() };
}

/** Saves a screenshot of the page as test-results/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Polls an async condition until it holds; fails with `what` after the timeout. */
export async function eventually(probe: () => Promise<boolean> | boolean, what: string, timeoutMs = PAGE_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
