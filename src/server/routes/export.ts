// GET /api/conversations/:id/export?format=jsonl|markdown. JSON Lines: one line
// per checkpoint, oldest first, with the run the timestamp correlation assigns
// it and that run's usage. Markdown: a readable transcript. 400 for a malformed id or an unknown
// format, 404 for an unknown conversation, each as `{code, message}` like the
// lab's routes. The server checks API_TOKEN first. The body is written as it is
// made, a page of checkpoints at a time (conversation-export.ts), with no
// content-length: a long conversation's export is never held whole.
import type { IncomingMessage, ServerResponse } from "node:http";
import { requireUuid, ValidationError } from "../../domain/errors.ts";
import { ReadScope, type ReadSources } from "../../read/scope.ts";
import { EXPORT_PAGE_CHECKPOINTS, exportCheckpointLines, exportMarkdown } from "../../read/conversation-export.ts";
import { sendRefusal } from "../send.ts";
import { principalOf } from "../auth.ts";

const EXPORT_PATH = /^\/api\/conversations\/([^/]+)\/export$/;
export const EXPORT_FORMATS = ["jsonl", "markdown"] as const;

/** Resolves once the client has taken what was queued for it, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/**
 * Writes the parts as they come, reading on only while the client keeps up (a
 * slow reader holds up the reads, not a growing queue of pages). The first part
 * is made before the status is sent, so a failure to read anything is still a
 * 500; a later one cuts the response (the server destroys it), never ending it
 * as if it were whole.
 */
async function sendParts(res: ServerResponse, contentType: string, parts: AsyncGenerator<string>): Promise<void> {
  try {
    let part = await parts.next();
    res.writeHead(200, { "content-type": contentType, "cache-control": "no-store" });
    while (!part.done) {
      // A client gone (or too slow: write-stall.ts) is read for no further.
      if (res.destroyed) return;
      if (part.value !== "" && !res.write(part.value)) await drained(res);
      part = await parts.next();
    }
    if (!res.destroyed) res.end();
  } finally {
    await parts.return(undefined);
  }
}

async function* jsonLines(lines: AsyncGenerator<object[]>): AsyncGenerator<string> {
  for await (const page of lines) yield page.map((line) => JSON.stringify(line) + "\n").join("");
}

export function exportRoute(sources: ReadSources, options: { pageSize?: number } = {}): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const pageSize = options.pageSize ?? EXPORT_PAGE_CHECKPOINTS;
  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const match = EXPORT_PATH.exec(url.pathname);
    if (!match) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      sendRefusal(res, 405, "METHOD_NOT_ALLOWED", "use GET");
      return true;
    }
    let id: string;
    try {
      id = decodeURIComponent(match[1]!);
      requireUuid(id, "id");
    } catch (error) {
      sendRefusal(res, 400, "BAD_REQUEST", error instanceof ValidationError ? error.message : "the conversation id is not a UUID");
      return true;
    }
    const format = url.searchParams.get("format") ?? "jsonl";
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
      sendRefusal(res, 400, "BAD_REQUEST", `format must be one of ${EXPORT_FORMATS.join(", ")}, got ${JSON.stringify(format.slice(0, 40))}`);
      return true;
    }
    // Another user's conversation is missing here: 404, as for one that does not exist.
    const scope = new ReadScope(sources, principalOf(req));
    const conversation = await scope.conversation(id.toLowerCase());
    if (!conversation) {
      sendRefusal(res, 404, "NOT_FOUND", `Conversation ${JSON.stringify(id)} does not exist`);
      return true;
    }
    const contentType = format === "markdown" ? "text/markdown; charset=utf-8" : "application/x-ndjson; charset=utf-8";
    if (req.method === "HEAD") {
      res.writeHead(200, { "content-type": contentType, "cache-control": "no-store" });
      res.end();
      return true;
    }
    await sendParts(
      res,
      contentType,
      format === "markdown" ? exportMarkdown(scope, conversation, pageSize) : jsonLines(exportCheckpointLines(scope, conversation.id, pageSize)),
    );
    return true;
  };
}
