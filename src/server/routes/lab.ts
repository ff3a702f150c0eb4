// The seed's lab over REST: the routes its experiment calls with curl and reads
// with jq, over the same run service as GraphQL (docs/design.md, section 3, "The
// life of a run"; the routes' answers: README.md, "The seed's lab over REST",
// and docs/lab.md).
//
//   POST /api/chat                   {message} | {message, conversation} | {resume: true, conversation}
//                                    | {resume: true, conversation, responses: [{interruptId, value}]}
//                                    → {conversation, run} (ids); refusals {code, message}: 400 BAD_REQUEST,
//                                    404 NOT_FOUND, 409 SESSION_IN_PROGRESS, 409 RUN_NOT_RESUMABLE,
//                                    409 INTERRUPT_MISMATCH (with pendingInterruptIds)
//   GET  /api/chat?conversation=ID   Server-Sent Events of the active run: `token`, `trace`, then
//                                    `end {conversation, status}` or `chat-error {code, message}`;
//                                    Last-Event-ID resumes after the last event received. With no
//                                    active run, the latest run's outcome from the database, alone.
//   GET  /api/conversations          newest activity first, each with its latest run's status
//   GET  /api/conversations/:id      {conversation, messages: [{id, role, content}], resumable,
//                                    pendingInterrupts: [{id, node, value}]}
//
// Reads go through a read scope, writes through the run service, both as the
// caller's principal (another user's conversation answers 404 NOT_FOUND, as a
// missing one); the server authenticates and checks CORS before any route.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RunEvent } from "../../domain/events.ts";
import type { ConversationRecord, RunRecord } from "../../domain/records.ts";
import {
  ApiError,
  InterruptMismatchError,
  QuotaExceededError,
  IdempotencyKeyReusedError,
  NothingToResumeError,
  NotFoundError,
  RunInProgressError,
  ShuttingDownError,
  ValidationError,
  requireUuid,
} from "../../domain/errors.ts";
import { ReadScope, type ReadSources } from "../../read/scope.ts";
import { followRun } from "../../read/event-streams.ts";
import { toApiMessages } from "../../read/messages.ts";
import type { InterruptResponse, RunService } from "../../runs/service.ts";
import type { EventBus } from "../../storage/event-bus/types.ts";
import { SubscriberOverflowError } from "../../storage/event-bus/subscriber.ts";
import type { Logger } from "../../logger.ts";
import { sendJson } from "../send.ts";
import { principalOf } from "../auth.ts";
import type { Metrics } from "../../telemetry/metrics.ts";

export interface LabRouteOptions {
  runs: RunService;
  bus: EventBus;
  reads: ReadSources;
  logger: Pick<Logger, "warn">;
  /** The largest request body read (`MAX_REQUEST_BYTES`); 413 beyond. */
  maxBodyBytes: number;
  /** How often an idle event stream sends a comment line, so proxies keep it open. */
  keepAliveMs?: number;
  /** Where open event streams are counted (`runledger_subscriptions{transport="rest"}`) and streams cut off as too slow. */
  metrics?: Metrics;
}

const CONVERSATION_PATH = /^\/api\/conversations\/([^/]+)$/;
const LIST_DEFAULT = 50;
const LIST_MAX = 100;
/** How often a stream of a run that no instance holds a log of asks storage whether it ended. */
const STORED_RUN_POLL_MS = 500;

/** A refusal in the lab's words: `{code, message}` with its HTTP status. */
class LabError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** More fields of the refusal's body (the interrupts a wrong answer missed, say). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function refusal(error: unknown): LabError | null {
  if (error instanceof LabError) return error;
  if (error instanceof ValidationError) return new LabError(400, "BAD_REQUEST", error.message);
  if (error instanceof NotFoundError) return new LabError(404, "NOT_FOUND", error.message);
  if (error instanceof RunInProgressError) return new LabError(409, "SESSION_IN_PROGRESS", error.message);
  if (error instanceof NothingToResumeError) return new LabError(409, "RUN_NOT_RESUMABLE", error.message);
  if (error instanceof QuotaExceededError) {
    return new LabError(429, error.code, error.message, { limit: error.limit, retryAfterSeconds: error.retryAfterSeconds });
  }
  if (error instanceof InterruptMismatchError) return new LabError(409, error.code, error.message, { pendingInterruptIds: error.pendingInterruptIds });
  if (error instanceof IdempotencyKeyReusedError) return new LabError(422, error.code, error.message, { operation: error.operation });
  if (error instanceof ShuttingDownError) return new LabError(503, error.code, error.message);
  if (error instanceof ApiError) return new LabError(400, error.code, error.message);
  return null;
}

function send(res: ServerResponse, error: LabError): void {
  if (error.status === 429) res.setHeader("retry-after", String(error.details.retryAfterSeconds));
  sendJson(res, error.status, { code: error.code, message: error.message, ...error.details });
}

async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") throw new LabError(415, "UNSUPPORTED_MEDIA_TYPE", "send the body as application/json");
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (declared > maxBytes) throw new LabError(413, "REQUEST_ENTITY_TOO_LARGE", `the body is larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > maxBytes) throw new LabError(413, "REQUEST_ENTITY_TOO_LARGE", `the body is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks)));
  } catch {
    throw new LabError(400, "BAD_REQUEST", "the body is not valid JSON");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new LabError(400, "BAD_REQUEST", "the body must be a JSON object");
  return body as Record<string, unknown>;
}

function conversationIdParam(value: unknown, field = "conversation"): string {
  if (typeof value !== "string") throw new LabError(400, "BAD_REQUEST", `${field} must be a conversation id`);
  requireUuid(value, field);
  return value.toLowerCase();
}

/** `responses` as resumeRun takes them: absent, or a list of `{interruptId, value}`. */
function responsesParam(value: unknown): InterruptResponse[] | null {
  if (value === undefined || value === null) return null;
  const wrong = new LabError(400, "BAD_REQUEST", 'responses must be a list of {"interruptId": string, "value": any}');
  if (!Array.isArray(value)) throw wrong;
  return value.map((item: unknown) => {
    if (item === null || typeof item !== "object" || Array.isArray(item)) throw wrong;
    const { interruptId, value: answer } = item as Record<string, unknown>;
    if (typeof interruptId !== "string" || !Object.hasOwn(item, "value")) throw wrong;
    return { interruptId, value: answer };
  });
}

/** The conversation as the lab shows it: its row and its latest run's status (lowercase, as stored). */
function conversationJson(conversation: ConversationRecord, latest: RunRecord | null) {
  return {
    id: conversation.id,
    title: conversation.title,
    createdAt: conversation.createdAt.toISOString(),
    updatedAt: conversation.updatedAt.toISOString(),
    messageCount: conversation.messageCount,
    status: latest?.status ?? null,
    errorCode: latest?.errorCode ?? null,
  };
}

/** How a run's outcome ends the lab's stream: `end` when it completed or was cancelled, `chat-error` otherwise. */
function outcomeEvent(conversationId: string, status: string, errorCode: string | null, errorMessage: string | null): { event: string; data: unknown } {
  if (status === "completed" || status === "cancelled") return { event: "end", data: { conversation: conversationId, status } };
  if (status === "waiting") {
    const how = `the run waits for answers: read pendingInterrupts at GET /api/conversations/${conversationId}, then POST /api/chat {"resume": true, "conversation", "responses": [{"interruptId", "value"}]}`;
    return { event: "chat-error", data: { code: "WAITING", message: how } };
  }
  return { event: "chat-error", data: { code: errorCode ?? status.toUpperCase(), message: errorMessage ?? `the run ended ${status}` } };
}

/** A run event as the lab streams it: `token` for model text, `trace` for the rest, the terminal status as end or chat-error. */
function labEvent(event: RunEvent): { event: string; data: unknown } {
  switch (event.type) {
    case "token":
      return { event: "token", data: { text: event.text, messageId: event.messageId, node: event.node } };
    case "status":
      if (event.status !== "running") return outcomeEvent(event.conversationId, event.status, event.errorCode, event.errorMessage);
      return { event: "trace", data: { type: "status", seq: event.seq, status: event.status } };
    default: {
      const { runId: _runId, conversationId: _conversationId, at, ...body } = event;
      return { event: "trace", data: { ...body, at: at.toISOString() } };
    }
  }
}

/** The `Idempotency-Key` header (the IETF draft's name); null without one. */
function idempotencyKeyHeader(req: IncomingMessage): string | null {
  const value = req.headers["idempotency-key"];
  if (value === undefined) return null;
  if (Array.isArray(value)) throw new LabError(400, "BAD_REQUEST", "send one Idempotency-Key header");
  return value;
}

function sseFrame(event: string, data: unknown, id?: string): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** `<runId>:<seq>` of the last event received; the seq counts only for the same run. */
function replayAfter(lastEventId: string | undefined, runId: string): number {
  const match = /^([0-9a-f-]{36}):(\d+)$/i.exec((lastEventId ?? "").trim());
  return match && match[1]!.toLowerCase() === runId ? Number(match[2]) : 0;
}

export function labRoute(options: LabRouteOptions): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const { runs, bus, reads: sources, logger, maxBodyBytes } = options;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  let streaming = 0;
  options.metrics?.setSubscriptionsSource("rest", () => streaming);

  async function postChat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJsonBody(req, maxBodyBytes);
    // A client retrying after a dropped connection sends the same Idempotency-Key: it gets the first call's answer.
    const idempotencyKey = idempotencyKeyHeader(req);
    if (body.resume === true) {
      if (body.message !== undefined) throw new LabError(400, "BAD_REQUEST", "send either a message or resume: true, not both");
      const run = await runs.resumeRun(
        { conversationId: conversationIdParam(body.conversation), responses: responsesParam(body.responses), idempotencyKey },
        principalOf(req),
      );
      sendJson(res, 200, { conversation: run.conversationId, run: run.id });
      return;
    }
    if (body.resume !== undefined && body.resume !== false) throw new LabError(400, "BAD_REQUEST", "resume must be true or absent");
    if (body.responses !== undefined) throw new LabError(400, "BAD_REQUEST", "responses answer a waiting conversation: send them with resume: true");
    if (typeof body.message !== "string") throw new LabError(400, "BAD_REQUEST", "message must be a string (or send resume: true)");
    const conversationId = body.conversation === undefined || body.conversation === null ? null : conversationIdParam(body.conversation);
    const { run, conversation } = await runs.startRun({ conversationId, message: body.message, idempotencyKey }, principalOf(req));
    sendJson(res, 200, { conversation: conversation.id, run: run.id });
  }

  async function streamChat(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const conversationId = conversationIdParam(url.searchParams.get("conversation") ?? undefined);
    const scope = new ReadScope(sources, principalOf(req));
    const conversation = await scope.conversation(conversationId);
    if (!conversation) throw new NotFoundError("Conversation", conversationId);
    const active = await scope.activeRun(conversationId);

    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    if (!active) {
      const latest = await scope.latestRun(conversationId);
      const { event, data } = latest
        ? outcomeEvent(conversationId, latest.status, latest.errorCode, latest.errorMessage)
        : { event: "end", data: { conversation: conversationId, status: null } };
      res.end(sseFrame(event, data, latest ? `${latest.id}:${latest.lastEventSeq}` : undefined));
      return;
    }

    const events = followRun(bus, active.id, replayAfter(req.headers["last-event-id"] as string | undefined, active.id), {
      lookup: (id) => sources.runs.getRun(id),
      pollMs: STORED_RUN_POLL_MS,
    });
    const stop = () => void events.return?.();
    res.once("close", stop);
    streaming += 1;
    const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), keepAliveMs);
    keepAlive.unref();
    try {
      for await (const event of events) {
        const { event: name, data } = labEvent(event);
        // A slow reader waits here: the run never does (its events queue per subscriber, bounded).
        if (!res.write(sseFrame(name, data, `${event.runId}:${event.seq}`))) await new Promise((resolve) => res.once("drain", resolve));
        if (res.destroyed) break;
      }
    } catch (error) {
      const code = error instanceof SubscriberOverflowError ? error.code : "INTERNAL";
      if (error instanceof SubscriberOverflowError) options.metrics?.subscribersCutOff.inc();
      if (code === "INTERNAL") logger.warn("lab event stream failed", { conversationId, runId: active.id, error });
      if (!res.destroyed) res.write(sseFrame("chat-error", { code, message: (error as Error).message }));
    } finally {
      clearInterval(keepAlive);
      streaming -= 1;
      res.off("close", stop);
      res.end();
    }
  }

  async function listConversations(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const limitParam = url.searchParams.get("limit");
    const limit = limitParam === null ? LIST_DEFAULT : Number(limitParam);
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX) throw new LabError(400, "BAD_REQUEST", `limit must be an integer from 1 to ${LIST_MAX}`);
    const after = url.searchParams.get("after");
    const scope = new ReadScope(sources, principalOf(req));
    const page = await scope.conversationPage(
      after === null ? { skip: 0, take: limit } : { cursor: conversationIdParam(after, "after"), skip: 1, take: limit },
    );
    const latest = await Promise.all(page.map((c) => scope.latestRun(c.id)));
    sendJson(
      res,
      200,
      page.map((c, i) => conversationJson(c, latest[i]!)),
    );
  }

  async function showConversation(req: IncomingMessage, res: ServerResponse, rawId: string): Promise<void> {
    let id: string;
    try {
      id = decodeURIComponent(rawId);
    } catch {
      throw new LabError(400, "BAD_REQUEST", "the conversation id is not a UUID");
    }
    id = conversationIdParam(id, "id");
    const scope = new ReadScope(sources, principalOf(req));
    const conversation = await scope.conversation(id);
    if (!conversation) throw new NotFoundError("Conversation", id);
    const [latest, active, state] = await Promise.all([scope.latestRun(id), scope.activeRun(id), scope.threadState(id)]);
    sendJson(res, 200, {
      conversation: conversationJson(conversation, latest),
      messages: toApiMessages(state.messages).map(({ id: messageId, role, content }) => ({ id: messageId, role, content })),
      // A waiting conversation is answered, not retried (as Conversation.resumable says).
      resumable: active === null && state.next.length > 0 && state.interrupts.length === 0,
      // What a waiting conversation asks: answer each with POST /api/chat {resume: true, conversation, responses}.
      pendingInterrupts: active === null ? state.interrupts.map(({ id: interruptId, node, value }) => ({ id: interruptId, node, value })) : [],
    });
  }

  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const conversationMatch = CONVERSATION_PATH.exec(url.pathname);
    const route = url.pathname === "/api/chat" ? "chat" : url.pathname === "/api/conversations" ? "list" : conversationMatch ? "conversation" : null;
    if (!route) return false;
    const allowed = route === "chat" ? ["GET", "POST"] : ["GET"];
    try {
      if (!allowed.includes(req.method ?? "")) {
        res.setHeader("allow", allowed.join(", "));
        throw new LabError(405, "METHOD_NOT_ALLOWED", `use ${allowed.join(" or ")}`);
      }
      if (route === "chat") await (req.method === "POST" ? postChat(req, res) : streamChat(req, res, url));
      else if (route === "list") await listConversations(req, res, url);
      else await showConversation(req, res, conversationMatch![1]!);
    } catch (error) {
      const known = refusal(error);
      if (!known || res.headersSent) throw error;
      send(res, known);
    }
    return true;
  };
}
