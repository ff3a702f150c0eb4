// Files served from memory: the console's page and assets, GraphiQL's page.
// Each is sent brotli- or gzip-compressed when the client accepts it, each form
// compressed once (off the event loop) and kept; each form has its own ETag, so
// a revalidation that matches is a 304 with no body.
import crypto from "node:crypto";
import zlib from "node:zlib";
import { promisify } from "node:util";
import type { IncomingMessage, ServerResponse } from "node:http";

export type Encoding = "br" | "gzip" | "identity";

export interface StaticFileOptions {
  contentType: string;
  cacheControl: string;
  /** Sent with the file and with its 304s (a page's security headers, say). */
  headers?: Record<string, string>;
  /** 11 (the best) unless the file is so large that it would take seconds of CPU. */
  brotliQuality?: number;
}

export interface StaticFile extends Required<StaticFileOptions> {
  /** Strong validator of the uncompressed bytes; each encoding adds its own suffix. */
  hash: string;
  identity: Buffer;
  /** Compressed forms, made on the first request for each and kept. */
  encoded: Map<Exclude<Encoding, "identity">, Promise<Buffer>>;
}

export const IMMUTABLE = "public, max-age=31536000, immutable";

/** A file to serve: its bytes and how to send them. */
export function staticFile(bytes: Buffer, options: StaticFileOptions): StaticFile {
  return {
    contentType: options.contentType,
    cacheControl: options.cacheControl,
    headers: options.headers ?? {},
    brotliQuality: options.brotliQuality ?? 11,
    hash: crypto.createHash("sha256").update(bytes).digest("base64url").slice(0, 16),
    identity: bytes,
    encoded: new Map(),
  };
}

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

function encode(file: StaticFile, encoding: Encoding): Promise<Buffer> {
  if (encoding === "identity") return Promise.resolve(file.identity);
  let body = file.encoded.get(encoding);
  if (!body) {
    body =
      encoding === "br"
        ? brotli(file.identity, {
            params: { [zlib.constants.BROTLI_PARAM_QUALITY]: file.brotliQuality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: file.identity.length },
          })
        : gzip(file.identity, { level: 9 });
    file.encoded.set(encoding, body);
  }
  return body;
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

/** Answers a GET or HEAD with the file: 200 in the best accepted encoding, or 304 when If-None-Match names that form. */
export async function sendStaticFile(req: IncomingMessage, res: ServerResponse, file: StaticFile): Promise<void> {
  const encoding = chooseEncoding(req.headers["accept-encoding"]);
  const etag = `"${file.hash}${encoding === "identity" ? "" : `-${encoding}`}"`;
  appendVary(res, "Accept-Encoding");
  res.setHeader("etag", etag);
  res.setHeader("cache-control", file.cacheControl);
  res.setHeader("x-content-type-options", "nosniff");
  for (const [name, value] of Object.entries(file.headers)) res.setHeader(name, value);
  if (matchesEtag(req.headers["if-none-match"], etag)) {
    res.writeHead(304).end();
    return;
  }
  const body = await encode(file, encoding);
  res.setHeader("content-type", file.contentType);
  if (encoding !== "identity") res.setHeader("content-encoding", encoding);
  res.setHeader("content-length", body.length);
  res.writeHead(200).end(req.method === "HEAD" ? undefined : body);
}
