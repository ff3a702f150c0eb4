// The example's web server: the page, server-rendered (the conversation read
// with loadConversation, rendered with react-dom/server, and the state handed
// to the page, which hydrates it), its script, and GET /token, which hands
// the signed-in user a credential for runledger.
//
// node dist/server.js (after npm run build); see README.md for its settings.
import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { StrictMode } from "react";
import { renderToString } from "react-dom/server";
import { createRunledgerClient, loadConversation } from "@runledger/client";
import { RunledgerProvider } from "@runledger/react";
import { App } from "./App.tsx";
import type { ExampleServer, ExampleServerOptions, PageData, Token } from "./shared.ts";
import { hs256Token } from "./tokens.ts";
import css from "./style.css";

export type { ExampleServer, ExampleServerOptions, Token };
export { hs256Token };

export async function startExampleServer(options: ExampleServerOptions): Promise<ExampleServer> {
  const { api, publicDir } = options;
  const ssr = options.ssr ?? true;
  const token = options.token ?? (() => ({ token: null, expiresAt: null }));
  const credentials = async (): Promise<string | null> => (await token()).token;

  async function page(conversationId: string | null): Promise<string> {
    const data: PageData = { api, conversationId, rendered: ssr, state: null };
    let markup = "";
    if (ssr && conversationId) {
      // A live run is read until its events pause: the state holds what it streamed so far, and its lastSeq.
      try {
        data.state = await loadConversation({ url: api, credentials }, conversationId, { timeoutMs: 3_000 });
      } catch (error) {
        // runledger is unreachable: the page renders itself, and its client keeps trying.
        console.warn(`could not render ${conversationId} on the server: ${(error as Error).message}`);
        data.rendered = false;
      }
    }
    if (data.rendered) {
      // A client for rendering only: the hooks' stores send nothing on the server (and SSE connects only for a stream).
      const client = createRunledgerClient({ url: api, credentials, transport: "sse" });
      markup = renderToString(
        <StrictMode>
          <RunledgerProvider client={client}>
            <App conversationId={conversationId} initial={data.state} />
          </RunledgerProvider>
        </StrictMode>,
      );
      await client.dispose();
    }
    // The state goes into a script: nothing in it may close the tag.
    const json = JSON.stringify(data)
      .replace(/</g, "\\u003c")
      .replace(/\u2028/g, "\\u2028")
      .replace(/\u2029/g, "\\u2029");
    return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runledger chat</title>
<link rel="icon" href="data:,">
<style>${css}</style>
</head>
<body>
<div id="root">${markup}</div>
<script>window.__CHAT__ = ${json};</script>
<script type="module" src="/app.js"></script>
</body>
</html>`;
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://example");
    const send = (status: number, type: string, body: string | Buffer) =>
      response.writeHead(status, { "content-type": type, "cache-control": "no-store" }).end(request.method === "HEAD" ? undefined : body);
    if (request.method !== "GET" && request.method !== "HEAD") return void send(405, "text/plain", "GET only");
    if (url.pathname === "/") return void send(200, "text/html; charset=utf-8", await page(url.searchParams.get("c")));
    if (url.pathname === "/app.js") return void send(200, "text/javascript", await fs.readFile(path.join(publicDir, "app.js")));
    // In an app of your own: check the user's session first, and hand a token for that user only.
    if (url.pathname === "/token") return void send(200, "application/json", JSON.stringify(await token()));
    send(404, "text/plain", "not found");
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: Error) => {
      if (!response.headersSent) response.writeHead(500, { "content-type": "text/plain" });
      response.end(`error: ${error.message}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 5173, options.host ?? "127.0.0.1", resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The credential GET /token hands out: RUNLEDGER_TOKEN as it is, or a JWT signed with AUTH_JWT_SECRET, or none. */
function tokenFromEnvironment(env: NodeJS.ProcessEnv): () => Token {
  const fixed = env.RUNLEDGER_TOKEN?.trim();
  if (fixed) return () => ({ token: fixed, expiresAt: null });
  const secret = env.AUTH_JWT_SECRET;
  if (secret) return () => hs256Token(secret, env.EXAMPLE_USER ?? "demo", Number(env.TOKEN_TTL_S ?? 300));
  return () => ({ token: null, expiresAt: null });
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const env = process.env;
  const server = await startExampleServer({
    api: env.RUNLEDGER_URL ?? "http://127.0.0.1:4000",
    publicDir: path.join(path.dirname(fileURLToPath(import.meta.url)), "public"),
    port: Number(env.PORT ?? 5173),
    host: env.HOST ?? "127.0.0.1",
    ssr: env.SSR !== "false",
    token: tokenFromEnvironment(env),
  });
  console.log(`react-chat on ${server.url}, talking to ${env.RUNLEDGER_URL ?? "http://127.0.0.1:4000"}`);
}
