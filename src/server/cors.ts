// Cross-origin access (CORS_ORIGINS), for every route and for WebSocket
// upgrades alike. Default: none. A request from a web page carries an Origin
// header; one from a page of another origin that is not listed is refused with
// 403 before anything else runs, so a page the user happens to visit cannot
// drive a local runledger, over HTTP or over a WebSocket (browsers apply no CORS
// to WebSockets: the Origin check is the only guard there). Requests without an
// Origin (curl, servers, the test clients) and same-origin pages (GraphiQL) pass.
//
// The browser shows the refused page only "Failed to fetch", so each refusal is
// logged (warn) with its method, path and origin; repeats are rate-limited, so a
// hostile page cannot flood the log.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../logger.ts";
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
// last-event-id: a fetch-based event-stream client resuming GET /api/chat sets it itself.
const ALLOWED_HEADERS = "authorization, content-type, accept, last-event-id, idempotency-key";
const PREFLIGHT_MAX_AGE_SECONDS = "600";

/** One line per origin per this interval; the refusals between are counted in the next line. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;
/** At most this many refusal lines per interval, whatever the origins. */
export const REFUSAL_LOG_LINES_PER_INTERVAL = 10;
/** Origins remembered for rate limiting; beyond this the oldest are forgotten. */
const REMEMBERED_ORIGINS = 1_000;

export interface CorsPolicyOptions {
  /** Where refusals are reported (warn); none by default. */
  logger?: Pick<Logger, "warn">;
  /** The clock for rate limiting, in ms; Date.now by default. */
  now?: () => number;
}

/** Logs refused requests: per origin at most one line per interval, and at most a few lines per interval in all. */
function refusalLog(logger: Pick<Logger, "warn"> | undefined, now: () => number): (req: IncomingMessage, origin: string) => void {
  if (!logger) return () => {};
  const lastLogged = new Map<string, { at: number; repeated: number }>();
  let windowStart = -Infinity;
  let linesInWindow = 0;
  let suppressed = 0;
  return (req, origin) => {
    const at = now();
    const key = origin.slice(0, 200);
    const seen = lastLogged.get(key);
    if (at - windowStart >= REFUSAL_LOG_INTERVAL_MS) {
      windowStart = at;
      linesInWindow = 0;
    }
    if ((seen && at - seen.at < REFUSAL_LOG_INTERVAL_MS) || linesInWindow >= REFUSAL_LOG_LINES_PER_INTERVAL) {
      if (seen) seen.repeated++;
      suppressed++;
      return;
    }
    linesInWindow++;
    lastLogged.delete(key);
    if (lastLogged.size >= REMEMBERED_ORIGINS) lastLogged.delete(lastLogged.keys().next().value!);
    lastLogged.set(key, { at, repeated: 0 });
    logger.warn("cross-origin request refused; list the origin in CORS_ORIGINS to allow it", {
      method: req.method,
      path: (req.url ?? "/").split("?")[0]!.slice(0, 200),
      origin: key,
      ...(seen?.repeated ? { repeatedSinceLastLine: seen.repeated } : {}),
      ...(suppressed ? { unloggedRefusals: suppressed } : {}),
    });
    suppressed = 0;
  };
}

/** @param origins exact origins (`https://app.example.com`), or `*` for any. */
export function createCorsPolicy(origins: readonly string[], options: CorsPolicyOptions = {}): CorsPolicy {
  const logRefusal = refusalLog(options.logger, options.now ?? Date.now);
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
        logRefusal(req, origin);
        sendJson(res, 403, {
          errors: [{ message: `origin ${JSON.stringify(origin)} is not allowed (CORS_ORIGINS)`, extensions: { code: "ORIGIN_NOT_ALLOWED" } }],
        });
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
      if (origin === undefined || sameOrigin(origin, req.headers.host) || crossOriginAllowed(origin)) return true;
      logRefusal(req, origin);
      return false;
    },
  };
}
