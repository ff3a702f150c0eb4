// Builds the React specs' code with esbuild, from the packages' sources: the
// page for the browser (with React, or Preact through preact/compat aliased
// as react), and the server render for Node; and serves the page from a web
// server of its own, as an app's server would.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { ROOT } from "../../testkit/app.ts";

const SOURCES = {
  "@runledger/client": path.join(ROOT, "packages", "client", "src", "index.ts"),
  "@runledger/react": path.join(ROOT, "packages", "react", "src", "index.ts"),
};

const PREACT = {
  react: "preact/compat",
  "react-dom/client": "preact/compat/client",
  "react-dom": "preact/compat",
};

/** The page's script (test/react/page.ts), for React or for Preact. */
export async function bundlePage(flavour: "react" | "preact"): Promise<string> {
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [path.join(ROOT, "test", "react", "page.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["chrome111"],
    minify: false,
    write: false,
    logLevel: "silent",
    define: { "process.env.NODE_ENV": '"production"' },
    alias: flavour === "preact" ? { ...SOURCES, ...PREACT } : SOURCES,
  });
  const text = result.outputFiles[0]!.text;
  // Which library the page runs: the spec checks the bundle holds the one asked for.
  if (flavour === "preact" && /react-dom\.production/.test(text)) throw new Error("the Preact page bundled react-dom");
  return text;
}

/** The server render (test/react/ssr.ts), bundled for Node with React into a module of its own, and imported. */
export async function loadServerRender(): Promise<typeof import("./ssr.ts")> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-ssr-"));
  const file = path.join(dir, "ssr.mjs");
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [path.join(ROOT, "test", "react", "ssr.ts")],
    bundle: true,
    format: "esm",
    platform: "node",
    target: ["node20"],
    outfile: file,
    logLevel: "silent",
    define: { "process.env.NODE_ENV": '"production"' },
    alias: SOURCES,
    // React's CommonJS builds require() their parts: give the ES module a require.
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  });
  try {
    return (await import(/* @vite-ignore */ pathToFileURL(file).href)) as typeof import("./ssr.ts");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The page's HTML: a root (holding the server's markup, when given), the state
 * it was rendered from, and the script. `observe`: window.__texts gets the
 * messages' text as first parsed, then after every change to it.
 */
export function pageHtml(options: { markup?: string; state?: unknown; observe?: boolean } = {}): string {
  const state = options.state === undefined ? "" : `<script>window.__RUNLEDGER_STATE__ = ${JSON.stringify(options.state).replace(/</g, "\\u003c")};</script>`;
  const observe = options.observe
    ? `<script>
const root = document.getElementById("root");
const text = () => document.getElementById("messages")?.textContent ?? "";
window.__texts = [text()];
new MutationObserver(() => window.__texts.push(text())).observe(root, { subtree: true, childList: true, characterData: true });
</script>`
    : "";
  return `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>runledger React hooks</title></head>
<body><div id="root">${options.markup ?? ""}</div>${state}${observe}
<script type="module" src="/page.js"></script></body></html>`;
}

/**
 * A web server for the page, as an app's own server would be: on another
 * port than runledger's (started with CORS_ORIGINS naming it), serving the
 * page's HTML and its script, which reach the API at the URL given in ?api=.
 */
export interface PageServer {
  origin: string;
  /** What the next page load gets: the script, and index.html (a page with no server markup by default). */
  serve(script: string, html?: string): void;
  close(): Promise<void>;
}

export async function startPageServer(): Promise<PageServer> {
  let script = "";
  let html = pageHtml();
  const server = http.createServer((request, response) => {
    const { pathname } = new URL(request.url ?? "/", "http://page");
    if (pathname === "/page.js") {
      response.writeHead(200, { "content-type": "text/javascript", "cache-control": "no-store" }).end(script);
    } else if (pathname === "/" || pathname === "/index.html") {
      response.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" }).end(html);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    serve(nextScript, nextHtml = pageHtml()) {
      script = nextScript;
      html = nextHtml;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
