// Cross-origin access (CORS_ORIGINS), for every route and for WebSocket
// upgrades alike. Default: none. A request from a web page carries an Origin
// header; one from a page of another origin that is not listed is refused with
// 403 before anything else runs, so a page the user happens to visit cannot
// drive a local runledger, over HTTP or over a WebSocket (browsers apply no CORS
// to WebSockets: the Origin check is the only guard there). Requests without an
// Origin (curl, servers, the test clients) and same-origin pages (GraphiQL) pass.
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson } from "./send.ts";

export interface CorsPolicy {
  /**
   * Refuses a foreign origin (403), answers a CORS preflight (204), or adds the
   * CORS headers for a listed origin. Returns true when it has answered.
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** Whether a WebSocket upgrade may proceed: no Origin, the same origin, or a listed one. */
  allowsUpgrade(req: IncomingMessage): boolean;
}

const ALLOWED_METHODS = "GET, POST, OPTIONS";
const ALLOWED_HEADERS = "authorization, content-type, accept";
const PREFLIGHT_MAX_AGE_SECONDS = "600";

/** @param origins exact origins (`https://app.example.com`), or `*` for any. */
export function createCorsPolicy(origins: readonly string[]): CorsPolicy {
  const any = origins.includes("*");
  const listed = new Set(origins);

  const sameOrigin = (origin: string, host: string | undefined) => {
    try {
      return host !== undefined && new URL(origin).host === host.toLowerCase();
    } catch {
      return false; // "null" (sandboxed frames, file: pages) or garbage
    }
  };
  const crossOriginAllowed = (origin: string) => any || listed.has(origin);

  return {
    handle(req, res) {
      const origin = req.headers.origin;
      if (origin === undefined || sameOrigin(origin, req.headers.host)) return false;
      if (!crossOriginAllowed(origin)) {
        sendJson(res, 403, { errors: [{ message: `origin ${JSON.stringify(origin)} is not allowed (CORS_ORIGINS)`, extensions: { code: "ORIGIN_NOT_ALLOWED" } }] });
        return true;
      }
      res.setHeader("access-control-allow-origin", any ? "*" : origin);
      res.setHeader("vary", "Origin");
      if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
        res.setHeader("access-control-allow-methods", ALLOWED_METHODS);
        res.setHeader("access-control-allow-headers", ALLOWED_HEADERS);
        res.setHeader("access-control-max-age", PREFLIGHT_MAX_AGE_SECONDS);
        res.writeHead(204).end();
        return true;
      }
      return false;
    },
    allowsUpgrade(req) {
      const origin = req.headers.origin;
      return origin === undefined || sameOrigin(origin, req.headers.host) || crossOriginAllowed(origin);
    },
  };
}
