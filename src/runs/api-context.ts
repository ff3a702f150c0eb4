// What the API side's use cases (start, resume, cancel, fork, edit) share: their
// dependencies, the seam to the execution side, and the checks and records
// every request makes. Refusals are thrown before anything is written.
import { randomUUID } from "node:crypto";
import type { RunInput } from "../agent/runtime.ts";
import type { ConversationChange } from "../domain/events.ts";
import type { ConversationRecord, NewRun, RunQuota, RunRecord, WebhookTarget } from "../domain/records.ts";
import { NotFoundError, ShuttingDownError, ValidationError } from "../domain/errors.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import type { RunTelemetry } from "../telemetry/run-telemetry.ts";
import { requireWebhook, type WebhookInput } from "../webhooks/url-guard.ts";
import { endpointOf } from "./admission.ts";
import { announceConversationChange } from "./conversation-notices.ts";
import type { RunExecution } from "./execution-seam.ts";
import type { RunServiceOptions } from "./options.ts";

/** What recording runs needs of the run service's options. */
export type ApiOptions = Pick<
  RunServiceOptions,
  | "store"
  | "checkpointReads"
  | "bus"
  | "agent"
  | "ownerId"
  | "maxMessageChars"
  | "maxForkCheckpoints"
  | "maxClockSkewMs"
  | "logger"
  | "quotas"
  | "admission"
  | "webhooks"
>;

export interface ApiContext {
  readonly options: ApiOptions;
  readonly now: () => Date;
  readonly telemetry: RunTelemetry;
  /** Where a recorded run goes to be executed, and what stops one. */
  readonly execution: RunExecution;
  /** False once a shutdown began. */
  accepting(): boolean;
  /** Edits being written: a shutdown lets them record their outcome before the database closes. */
  readonly editing: Set<Promise<unknown>>;
}

export function validateMessage(ctx: ApiContext, message: string): string {
  if (message.trim().length === 0) throw new ValidationError("message must not be blank", "message");
  if (message.length > ctx.options.maxMessageChars) {
    throw new ValidationError(`message is ${message.length} characters; the limit is ${ctx.options.maxMessageChars}`, "message");
  }
  if (message.includes("\u0000")) throw new ValidationError("message must not contain NUL characters", "message");
  return message;
}

export function requireAccepting(ctx: ApiContext): void {
  if (!ctx.accepting()) throw new ShuttingDownError();
}

/** The agent a run may use: configured, and the conversation's own when there is one. */
export function requireAgent(ctx: ApiContext, name: string, conversation?: ConversationRecord): string {
  if (conversation && name !== conversation.agent) {
    throw new ValidationError(
      `conversation ${conversation.id} runs agent ${JSON.stringify(conversation.agent)}; a conversation keeps the agent it started with`,
      "agent",
    );
  }
  if (!ctx.options.agent.agent(name)) {
    const known = ctx.options.agent
      .agents()
      .map((a) => a.definition.name)
      .join(", ");
    throw new ValidationError(
      conversation
        ? `agent ${JSON.stringify(name)} of conversation ${conversation.id} is no longer configured (agents: ${known})`
        : `agent ${JSON.stringify(name)} is not configured (agents: ${known})`,
      "agent",
    );
  }
  return name;
}

/** The conversation, when the principal may see it; NotFoundError otherwise, exactly as for one that does not exist. */
export async function visibleConversation(ctx: ApiContext, id: string, principal: Principal): Promise<ConversationRecord> {
  const conversation = await ctx.options.store.getConversation(id);
  if (!conversation || !canSee(principal, conversation)) throw new NotFoundError("Conversation", id);
  return conversation;
}

/** The principal's quotas; none for admins unless QUOTA_ADMINS says otherwise. */
export function quotaOf(ctx: ApiContext, principal: Principal): RunQuota | undefined {
  const { quotas } = ctx.options;
  return quotas && (principal.role !== "admin" || quotas.admins) ? { activeRuns: quotas.activeRuns, runsPerMinute: quotas.runsPerMinute } : undefined;
}

export function newRun(
  ctx: ApiContext,
  conversationId: string,
  kind: NewRun["kind"],
  input: string | null,
  startMark: string,
  startCheckpointId: string | null,
  principal: Principal,
  agent: string,
  webhook?: WebhookTarget | null,
): NewRun {
  const { options } = ctx;
  const quota = quotaOf(ctx, principal);
  return {
    id: randomUUID(),
    conversationId,
    kind,
    input,
    startedAt: ctx.now(),
    startMark,
    ownerId: options.ownerId,
    startCheckpointId,
    startedBy: principal.id,
    startedByRole: principal.role,
    endpoint: options.admission ? endpointOf(options.agent.agent(agent)!.definition, options.admission.ollamaHost) : null,
    traceParent: ctx.telemetry.traceParent(),
    quota,
    webhooks: runWebhooks(ctx, agent, webhook),
  };
}

/** A caller's webhook, checked (ValidationError on `webhook`, before anything is written); null for none. */
export function checkWebhook(ctx: ApiContext, input: WebhookInput | null | undefined): WebhookTarget | null {
  if (input == null) return null;
  return requireWebhook(input, ctx.options.webhooks?.policy ?? { allowPrivate: false, canSign: false });
}

/** Where a run's end and wait are told: its own webhook, its agent's and the deployment's (one target per URL, their events joined). */
function runWebhooks(ctx: ApiContext, agent: string, own: WebhookTarget | null | undefined): WebhookTarget[] {
  const targets = new Map<string, WebhookTarget>();
  for (const t of [own, ctx.options.webhooks?.agents?.[agent], ctx.options.webhooks?.deployment]) {
    if (!t) continue;
    const known = targets.get(t.url);
    targets.set(t.url, { url: t.url, events: [...new Set([...(known?.events ?? []), ...t.events])] });
  }
  return [...targets.values()];
}

/** A run just recorded goes to the execution side, with where the request that recorded it hangs its span. Answers the run as it stands. */
export function handOver(
  ctx: ApiContext,
  run: RunRecord,
  agent: string,
  input: RunInput,
  change: "created" | "updated",
  principal: Principal,
): Promise<RunRecord> {
  return ctx.execution.begin({ run, agent, input, change, principal, origin: ctx.telemetry.origin() });
}

export function announce(ctx: ApiContext, change: ConversationChange): void {
  announceConversationChange(ctx.options.bus, ctx.options.logger, change);
}
