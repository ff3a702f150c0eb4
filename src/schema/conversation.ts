// Conversation: one chat, its thread's state, its runs and checkpoints; the
// conversation queries and the rename and delete mutations.
import { GraphQLError } from "graphql";
import type { ConversationRecord, RunRecord } from "../domain/records.ts";
import { ValidationError, NotFoundError, QuotaExceededError, RunInProgressError, IdempotencyKeyReusedError } from "../domain/errors.ts";
import { isAdmin, type Principal } from "../domain/principal.ts";
import { toApiMessages } from "../read/messages.ts";
import { builder } from "./builder.ts";
import { Agent, Checkpoint, Conversation, Interrupt, Message, Node, Run } from "./refs.ts";
import { Usage } from "./usage.ts";
import { pageQuery, toConnection, type Connection } from "./connection.ts";

Conversation.implement({
  description: "One chat. Its id is the LangGraph thread_id.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id"),
    title: t.exposeString("title"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime" }),
    messageCount: t.exposeInt("messageCount", { description: "Messages in the thread after the latest finished run." }),
    owner: t.exposeString("owner", {
      nullable: true,
      description:
        "The id of the principal that created it (a fork: whoever forked). Users see only their own; admins every owner. Null for conversations from before owners were recorded, which only admins see.",
    }),
    agentName: t.exposeString("agent", { description: "The agent every run of the conversation runs (it keeps the one it started with)." }),
    agent: t.field({
      type: Agent,
      nullable: true,
      description: "That agent; null when it is no longer configured (its runs are then refused).",
      resolve: (c, _a, ctx) => ctx.agent.agent(c.agent) ?? null,
    }),
    pendingInterrupts: t.field({
      type: [Interrupt],
      description: "What the thread waits on: the interrupts resumeRun must answer (LangGraph's pending tasks are the authority).",
      resolve: (c, _a, ctx, info) => ctx.reads(info.rootValue).pendingInterrupts(c.id),
    }),
    usage: t.field({ type: Usage, description: "The sum of its runs' usage.", resolve: (c, _a, ctx, info) => ctx.reads(info.rootValue).usage(c.id) }),
    forkedFrom: t.field({
      type: ForkOrigin,
      nullable: true,
      description: "Where this conversation was forked from; null for one that was not, or once the source is deleted.",
      resolve: (c) =>
        c.forkedFromConversationId && c.forkedFromCheckpointId ? { conversationId: c.forkedFromConversationId, checkpointId: c.forkedFromCheckpointId } : null,
    }),
    deleted: t.boolean({
      description: "True only on the last conversationsChanged notice of a deleted conversation; every query answers false.",
      resolve: (c) => c.deleted === true,
    }),
    messages: t.field({
      type: [Message],
      description: "The thread's messages at its latest checkpoint; system messages left out.",
      resolve: async (c, _a, ctx, info) => toApiMessages((await ctx.reads(info.rootValue).threadState(c.id)).messages),
    }),
    next: t.stringList({
      description: "LangGraph's next at the latest checkpoint: the nodes still to run. The authority on whether work is left.",
      resolve: async (c, _a, ctx, info) => (await ctx.reads(info.rootValue).threadState(c.id)).next,
    }),
    resumable: t.boolean({
      description:
        "True when next is non-empty, no run is active and no interrupt waits for an answer: resumeRun (without responses) will continue the pending step. A thread that waits for answers lists them in pendingInterrupts.",
      resolve: async (c, _a, ctx, info) => {
        const reads = ctx.reads(info.rootValue);
        const [active, state] = await Promise.all([reads.activeRun(c.id), reads.threadState(c.id)]);
        return active === null && state.next.length > 0 && state.interrupts.length === 0;
      },
    }),
    activeRun: t.field({
      type: Run,
      nullable: true,
      description: "The run in progress, if any (at most one per conversation).",
      resolve: (c, _a, ctx, info) => ctx.reads(info.rootValue).activeRun(c.id),
    }),
    latestRun: t.field({
      type: Run,
      nullable: true,
      description: "The most recently started run.",
      resolve: (c, _a, ctx, info) => ctx.reads(info.rootValue).latestRun(c.id),
    }),
    runs: t.connection(
      {
        type: Run,
        resolve: async (c, args, ctx, info) => {
          const query = pageQuery(args);
          const rows = await ctx.reads(info.rootValue).runPage(c.id, query);
          return { ...toConnection(rows, args, query), conversationId: c.id };
        },
      },
      {
        name: "RunConnection",
        fields: (f) => ({
          totalCount: f.int({ resolve: (page, _a, ctx, info) => ctx.reads(info.rootValue).runCount((page as RunPage).conversationId) }),
        }),
      },
      { name: "RunEdge" },
    ),
    checkpoints: t.connection(
      {
        type: Checkpoint,
        description: "The thread's checkpoints, oldest first. Cursors are checkpoint ids, so they stay valid as checkpoints arrive. At most 100 per page.",
        resolve: async (c, args, ctx, info) => {
          let page;
          try {
            page = await ctx.reads(info.rootValue).checkpointPage(c.id, args);
          } catch (error) {
            if (error instanceof ValidationError) throw new GraphQLError(error.message, { extensions: { code: "VALIDATION", field: error.field } });
            throw error;
          }
          return {
            edges: page.nodes.map((node) => ({ cursor: node.id, node })),
            pageInfo: {
              hasNextPage: page.hasNextPage,
              hasPreviousPage: page.hasPreviousPage,
              startCursor: page.nodes[0]?.id ?? null,
              endCursor: page.nodes.at(-1)?.id ?? null,
            },
          };
        },
      },
      { name: "CheckpointConnection" },
      { name: "CheckpointEdge" },
    ),
  }),
});

/** The source of a fork. */
const ForkOrigin = builder.objectRef<{ conversationId: string; checkpointId: string }>("ForkOrigin").implement({
  description: "The conversation and checkpoint a fork copied its thread from.",
  fields: (t) => ({
    conversation: t.field({
      type: Conversation,
      nullable: true,
      resolve: (f, _a, ctx, info) => ctx.reads(info.rootValue).conversation(f.conversationId),
    }),
    checkpoint: t.field({
      type: Checkpoint,
      nullable: true,
      description: "The source's checkpoint: the fork's thread is the source's up to and including it.",
      resolve: (f, _a, ctx, info) => ctx.reads(info.rootValue).checkpoint(f.checkpointId),
    }),
  }),
});

/** A page of a conversation's runs; totalCount is read only when asked for. */
type RunPage = Connection<unknown> & { conversationId: string };

/** Stands for "nobody's": a user who asks for another owner's list gets an empty one, as for an owner with none. */
const NO_ONE = "\u0000";

/** Whose list `conversations(owner:)` reads: a user's own (another owner's is nobody's); an admin's choice. */
function listOwner(principal: Principal, owner: string | null | undefined): string | null {
  if (owner == null) return null;
  return isAdmin(principal) || owner === principal.id ? owner : NO_ONE;
}

builder.queryField("conversation", (t) =>
  t.field({
    type: Conversation,
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx, info) => ctx.reads(info.rootValue).conversation(String(id)),
  }),
);

builder.queryField("conversations", (t) =>
  t.connection(
    {
      type: Conversation,
      description: "Newest updatedAt first: the caller's own conversations; an admin's, everyone's, or one owner's with `owner`.",
      args: {
        owner: t.arg.string({
          description: "Only this principal's conversations. Admins only: a user's list is always their own (another owner lists nothing).",
        }),
      },
      resolve: async (_root, args, ctx, info) => {
        const query = pageQuery(args);
        const owner = listOwner(ctx.principal, args.owner);
        const page = owner === NO_ONE ? [] : await ctx.reads(info.rootValue).conversationPage(query, owner);
        return Object.assign(toConnection(page, args, query), { owner });
      },
    },
    {
      name: "ConversationConnection",
      fields: (c) => ({
        totalCount: c.int({
          resolve: (page, _args, ctx, info) => {
            const { owner } = page as { owner?: string | null };
            return owner === NO_ONE ? 0 : ctx.reads(info.rootValue).conversationCount(owner);
          },
        }),
      }),
    },
    { name: "ConversationEdge" },
  ),
);

const RenameConversationInput = builder.inputType("RenameConversationInput", {
  fields: (t) => ({ conversationId: t.id({ required: true }), title: t.string({ required: true }) }),
});

const RenameConversationSuccess = builder.objectRef<{ conversation: ConversationRecord }>("RenameConversationSuccess").implement({
  fields: (t) => ({ conversation: t.field({ type: Conversation, resolve: (r) => r.conversation }) }),
});

builder.mutationField("renameConversation", (t) =>
  t.field({
    type: RenameConversationSuccess,
    args: { input: t.arg({ type: RenameConversationInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError], directResult: true, union: { name: "RenameConversationResult" } },
    resolve: async (_root, { input }, ctx) => ({
      conversation: await ctx.conversations.rename(String(input.conversationId), input.title, ctx.principal),
    }),
  }),
);

const DeleteConversationInput = builder.inputType("DeleteConversationInput", {
  fields: (t) => ({ conversationId: t.id({ required: true }) }),
});

const DeleteConversationSuccess = builder.objectRef<{ conversationId: string }>("DeleteConversationSuccess").implement({
  fields: (t) => ({ conversationId: t.exposeID("conversationId") }),
});

builder.mutationField("deleteConversation", (t) =>
  t.field({
    type: DeleteConversationSuccess,
    description: "Deletes the conversation, its runs and its LangGraph thread (checkpoints and writes). Refused while a run is active.",
    args: { input: t.arg({ type: DeleteConversationInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError, RunInProgressError], directResult: true, union: { name: "DeleteConversationResult" } },
    resolve: async (_root, { input }, ctx) => ({ conversationId: (await ctx.conversations.delete(String(input.conversationId), ctx.principal)).id }),
  }),
);

const ForkConversationInput = builder.inputType("ForkConversationInput", {
  fields: (t) => ({
    checkpointId: t.id({ required: true, description: "A checkpoint of any conversation: the fork's thread copies the source's up to and including it." }),
    message: t.string({ description: "With a message, a run starts on the fork at once." }),
    idempotencyKey: t.string({
      description:
        "A key the client chooses (at most 255 characters): a retry with the same key and input within 24 hours answers the first call's result and does nothing again.",
    }),
  }),
});

const ForkConversationSuccess = builder.objectRef<{ conversation: ConversationRecord; run: RunRecord | null }>("ForkConversationSuccess").implement({
  fields: (t) => ({
    conversation: t.field({ type: Conversation, resolve: (r) => r.conversation }),
    run: t.field({ type: Run, nullable: true, description: "The run started with the message; null without one.", resolve: (r) => r.run }),
  }),
});

builder.mutationField("forkConversation", (t) =>
  t.field({
    type: ForkConversationSuccess,
    description: "A new conversation (same agent) whose thread is a copy of the source's up to and including the checkpoint; the source is untouched.",
    args: { input: t.arg({ type: ForkConversationInput, required: true }) },
    errors: {
      types: [ValidationError, NotFoundError, QuotaExceededError, IdempotencyKeyReusedError],
      directResult: true,
      union: { name: "ForkConversationResult" },
    },
    resolve: (_root, { input }, ctx) =>
      ctx.runs.forkConversation({ checkpointId: String(input.checkpointId), message: input.message, idempotencyKey: input.idempotencyKey }, ctx.principal),
  }),
);
