// GET /console: the operator console, a preact page that follows runledger
// through GraphQL subscriptions. esbuild bundles console/src on the first
// request (most processes never serve the page, so start-up does not pay for
// it); the result stays in memory, and so does each gzip or brotli form once a
// browser has asked for it. The script and stylesheet are named by their
// content hash and cached for good; the page names them, so it is revalidated
// on every load (ETag).
//
// Everything under /console is static and executes nothing, so the server lets
// it through without API_TOKEN (isConsoleRequest); the page asks for the token
// and sends it with its own GraphQL requests.
import crypto from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { IncomingMessage, ServerResponse } from "node:http";
import * as esbuild from "esbuild";

export const CONSOLE_PATH = "/console";

const CONSOLE_DIR = fileURLToPath(new URL("../../../console/", import.meta.url));

/** True for the requests the console route answers without the API token: GET or HEAD of /console and its assets. */
export function isConsoleRequest(method: string | undefined, pathname: string | undefined): boolean {
  return (method === "GET" || method === "HEAD") && pathname !== undefined && (pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`));
}

type Encoding = "br" | "gzip" | "identity";

interface Asset {
  contentType: string;
  cacheControl: string;
  /** Strong validator of the uncompressed bytes; each encoding gets its own suffix. */
  hash: string;
  identity: Buffer;
  /** Compressed forms, made on first request (off the event loop) and kept. */
  encoded: Map<Exclude<Encoding, "identity">, Promise<Buffer>>;
  headers?: Record<string, string>;
}

export interface ConsoleAssets {
  /** Keyed by request path: the page and its hashed assets. */
  byPath: Map<string, Asset>;
}

const IMMUTABLE = "public, max-age=31536000, immutable";

// The page loads only its own script and stylesheet and talks only to its own
// origin (HTTP and WebSocket), which keeps the token it holds away from anything else.
const PAGE_SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

function contentHash(bytes: Buffer): string {
  return crypto.createHash("sha256").update(bytes).digest("base64url").slice(0, 16);
}

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

function makeAsset(contentType: string, cacheControl: string, identity: Buffer, headers?: Record<string, string>): Asset {
  return { contentType, cacheControl, hash: contentHash(identity), identity, encoded: new Map(), headers };
}

function encode(asset: Asset, encoding: Encoding): Promise<Buffer> {
  if (encoding === "identity") return Promise.resolve(asset.identity);
  let body = asset.encoded.get(encoding);
  if (!body) {
    body =
      encoding === "br"
        ? brotli(asset.identity, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: asset.identity.length } })
        : gzip(asset.identity, { level: 9 });
    asset.encoded.set(encoding, body);
  }
  return body;
}

/**
 * Source paths relative to the package (console/src/..., node_modules/...), so
 * the map, which anyone may fetch, does not describe the server's directories.
 */
function portableSourceMap(bytes: Buffer): Buffer {
  const map = JSON.parse(bytes.toString("utf8")) as { sources?: string[] };
  map.sources = map.sources?.map((source) => {
    const packaged = source.lastIndexOf("node_modules/");
    return packaged >= 0 ? source.slice(packaged) : source.replace(/^(\.\.\/)+/, "console/");
  });
  return Buffer.from(JSON.stringify(map));
}

/** Bundles console/src and renders the page around the bundle's hashed names. */
export async function buildConsole(): Promise<ConsoleAssets> {
  const result = await esbuild.build({
    absWorkingDir: CONSOLE_DIR,
    entryPoints: { app: "src/main.tsx" },
    tsconfig: path.join(CONSOLE_DIR, "tsconfig.json"),
    bundle: true,
    minify: true,
    format: "esm",
    target: ["chrome111", "firefox111", "safari16.4"],
    jsx: "automatic",
    jsxImportSource: "preact",
    define: { "process.env.NODE_ENV": '"production"' },
    entryNames: "[name]-[hash]",
    outdir: "out",
    publicPath: `${CONSOLE_PATH}/`,
    sourcemap: "linked",
    legalComments: "eof",
    metafile: false,
    write: false,
    logLevel: "silent",
  });
  const byPath = new Map<string, Asset>();
  let scriptPath = "";
  let stylePath = "";
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    const urlPath = `${CONSOLE_PATH}/${name}`;
    const bytes = Buffer.from(file.contents);
    if (name.endsWith(".js")) {
      scriptPath = urlPath;
      byPath.set(urlPath, makeAsset("text/javascript; charset=utf-8", IMMUTABLE, bytes));
    } else if (name.endsWith(".css")) {
      stylePath = urlPath;
      byPath.set(urlPath, makeAsset("text/css; charset=utf-8", IMMUTABLE, bytes));
    } else if (name.endsWith(".map")) {
      byPath.set(urlPath, makeAsset("application/json; charset=utf-8", IMMUTABLE, portableSourceMap(bytes)));
    }
  }
  if (!scriptPath || !stylePath) throw new Error("the console build produced no script or no stylesheet");
  const template = await fs.readFile(path.join(CONSOLE_DIR, "index.html"), "utf8");
  const page = template.replace("%STYLE%", stylePath).replace("%SCRIPT%", scriptPath);
  const html = makeAsset("text/html; charset=utf-8", "no-cache", Buffer.from(page), PAGE_SECURITY_HEADERS);
  byPath.set(CONSOLE_PATH, html);
  byPath.set(`${CONSOLE_PATH}/`, html);
  return { byPath };
}

/** The best encoding the client accepts (q > 0): brotli, then gzip, else none. */
export function chooseEncoding(acceptEncoding: string | undefined): Encoding {
  const accepted = new Map<string, number>();
  for (const part of (acceptEncoding ?? "").split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)).find(Boolean);
    accepted.set(name, q ? Number(q[1]) : 1);
  }
  const ok = (name: string) => (accepted.get(name) ?? accepted.get("*") ?? 0) > 0;
  if (ok("br")) return "br";
  if (ok("gzip") || (accepted.get("x-gzip") ?? 0) > 0) return "gzip";
  return "identity";
}

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === "*") return true;
  return ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

function appendVary(res: ServerResponse, value: string): void {
  const existing = res.getHeader("vary");
  res.setHeader("vary", existing ? `${String(existing)}, ${value}` : value);
}

export interface ConsoleRouteOptions {
  logger?: { error(msg: string, fields?: Record<string, unknown>): void };
  /** Builds the assets; buildConsole by default. */
  build?: () => Promise<ConsoleAssets>;
}

export function consoleRoute(options: ConsoleRouteOptions = {}): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const build = options.build ?? buildConsole;
  let assets: Promise<ConsoleAssets> | undefined;
  const load = () => {
    assets ??= build().catch((error: unknown) => {
      // Not cached: the next request tries again (a source file being fixed, say).
      assets = undefined;
      throw error;
    });
    return assets;
  };

  return async (req, res) => {
    const pathname = new URL(req.url ?? "/", "http://localhost").pathname;
    if (pathname !== CONSOLE_PATH && !pathname.startsWith(`${CONSOLE_PATH}/`)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end("use GET\n");
      return true;
    }
    let built: ConsoleAssets;
    try {
      built = await load();
    } catch (error) {
      options.logger?.error("console build failed", { error });
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }).end("the console could not be built; see the server log\n");
      return true;
    }
    const found = built.byPath.get(pathname);
    if (!found) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }).end("not found\n");
      return true;
    }
    const encoding = chooseEncoding(req.headers["accept-encoding"]);
    const etag = `"${found.hash}${encoding === "identity" ? "" : `-${encoding}`}"`;
    appendVary(res, "Accept-Encoding");
    res.setHeader("etag", etag);
    res.setHeader("cache-control", found.cacheControl);
    res.setHeader("x-content-type-options", "nosniff");
    for (const [name, value] of Object.entries(found.headers ?? {})) res.setHeader(name, value);
    if (matchesEtag(req.headers["if-none-match"], etag)) {
      res.writeHead(304).end();
      return true;
    }
    const body = await encode(found, encoding);
    res.setHeader("content-type", found.contentType);
    if (encoding !== "identity") res.setHeader("content-encoding", encoding);
    res.setHeader("content-length", body.length);
    res.writeHead(200).end(req.method === "HEAD" ? undefined : body);
    return true;
  };
}
