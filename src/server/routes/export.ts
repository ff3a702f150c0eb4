// GET /api/conversations/:id/export?format=jsonl|markdown. JSON Lines: one line
// per checkpoint, oldest first, with the run the timestamp correlation assigns
// it and that run's usage. Markdown: a readable transcript. 400 for a malformed id or an unknown
// format, 404 for an unknown conversation, each as `{code, message}` like the
// lab's routes. The server checks API_TOKEN first.
import type { IncomingMessage, ServerResponse } from "node:http";
import { requireUuid, ValidationError } from "../../domain/errors.ts";
import { ReadScope, type ReadSources } from "../../read/scope.ts";
import { exportCheckpointLines, exportMarkdown } from "../../read/conversation-export.ts";
import { sendRefusal } from "../send.ts";
import { principalOf } from "../auth.ts";

const EXPORT_PATH = /^\/api\/conversations\/([^/]+)\/export$/;
export const EXPORT_FORMATS = ["jsonl", "markdown"] as const;

function sendText(res: ServerResponse, contentType: string, text: string, head: boolean): void {
  res.writeHead(200, { "content-type": contentType, "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
  res.end(head ? undefined : text);
}

export function exportRoute(sources: ReadSources): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
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
    const head = req.method === "HEAD";
    if (format === "markdown") {
      sendText(res, "text/markdown; charset=utf-8", await exportMarkdown(scope, conversation), head);
    } else {
      const lines = await exportCheckpointLines(scope, conversation.id);
      sendText(res, "application/x-ndjson; charset=utf-8", lines.map((line) => JSON.stringify(line) + "\n").join(""), head);
    }
    return true;
  };
}
