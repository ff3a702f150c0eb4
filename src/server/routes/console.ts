// GET /console: the operator console, a preact page that follows runledger
// through GraphQL subscriptions. Its files (console-files.ts: built by `npm run
// build`, or bundled from console/src under `npm start`) are loaded on the
// first request, since most processes never serve the page, and kept in memory.
// The script and stylesheet are named by their content hash and cached for
// good; the page names them, so it is revalidated on every load (ETag).
//
// Everything under /console is static and executes nothing, so the server lets
// it through without API_TOKEN (isConsoleRequest); the page asks for the token
// and sends it with its own GraphQL requests.
import type { IncomingMessage, ServerResponse } from "node:http";
import { IMMUTABLE, sendStaticFile, staticFile, type StaticFile } from "../static-files.ts";
import { loadConsoleFiles, type ConsoleFile } from "./console-files.ts";

export const CONSOLE_PATH = "/console";

/** True for the requests the console route answers without the API token: GET or HEAD of /console and its assets. */
export function isConsoleRequest(method: string | undefined, pathname: string | undefined): boolean {
  return (method === "GET" || method === "HEAD") && pathname !== undefined && (pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`));
}

// The page loads only its own script and stylesheet and talks only to its own
// origin (HTTP and WebSocket), which keeps the token it holds away from anything else.
const PAGE_SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const ASSET_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
};

/** The console's files by request path: the page at /console (and /console/), each asset below it. */
function byPath(files: ConsoleFile[]): Map<string, StaticFile> {
  const served = new Map<string, StaticFile>();
  for (const { name, bytes } of files) {
    if (name === "index.html") {
      const page = staticFile(bytes, { contentType: "text/html; charset=utf-8", cacheControl: "no-cache", headers: PAGE_SECURITY_HEADERS });
      served.set(CONSOLE_PATH, page);
      served.set(`${CONSOLE_PATH}/`, page);
      continue;
    }
    const contentType = ASSET_TYPES[name.slice(name.lastIndexOf("."))];
    if (contentType) served.set(`${CONSOLE_PATH}/${name}`, staticFile(bytes, { contentType, cacheControl: IMMUTABLE }));
  }
  if (!served.has(CONSOLE_PATH)) throw new Error("the console's files have no page (index.html)");
  return served;
}

export interface ConsoleRouteOptions {
  logger?: { error(msg: string, fields?: Record<string, unknown>): void };
}

export function consoleRoute(options: ConsoleRouteOptions = {}): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  let files: Promise<Map<string, StaticFile>> | undefined;
  const load = () => {
    files ??= loadConsoleFiles()
      .then(byPath)
      .catch((error: unknown) => {
        // Not kept: the next request tries again (a source file being fixed, say).
        files = undefined;
        throw error;
      });
    return files;
  };

  return async (req, res) => {
    const pathname = new URL(req.url ?? "/", "http://localhost").pathname;
    if (pathname !== CONSOLE_PATH && !pathname.startsWith(`${CONSOLE_PATH}/`)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end("use GET\n");
      return true;
    }
    let served: Map<string, StaticFile>;
    try {
      served = await load();
    } catch (error) {
      options.logger?.error("console files could not be loaded", { error });
      res
        .writeHead(500, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" })
        .end("the console could not be loaded; see the server log\n");
      return true;
    }
    const found = served.get(pathname);
    if (!found) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }).end("not found\n");
      return true;
    }
    await sendStaticFile(req, res, found);
    return true;
  };
}
