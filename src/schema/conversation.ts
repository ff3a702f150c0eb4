import { prismaConnectionHelpers } from "@pothos/plugin-prisma";
import { builder } from "./builder.ts";
import { NodeInterface } from "./node.ts";
import { Message } from "./message.ts";
import { toApiMessages } from "../read/messages.ts";
import { Run } from "./run.ts";
import { NotFoundError, RunInProgressError, ValidationError } from "./errors.ts";
import type { ConversationRecord } from "../runs/store.ts";

export const PAGE_SIZE_MAX = 100;
export const PAGE_SIZE_DEFAULT = 20;

export const Conversation = builder.prismaObject("Conversation", {
  description: "One chat. Its id is the LangGraph thread_id.",
  interfaces: [NodeInterface],
  fields: (t) => ({
    id: t.exposeID("id"),
    title: t.exposeString("title"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime" }),
    messageCount: t.exposeInt("messageCount", { description: "Messages in the thread after the latest finished run." }),
    messages: t.field({
      type: [Message],
      description: "The thread's messages at its latest checkpoint; system messages left out.",
      resolve: async (c, _a, ctx) => toApiMessages((await ctx.thread(c.id)).messages),
    }),
    next: t.stringList({
      description: "LangGraph's next at the latest checkpoint: the nodes still to run. The authority on whether work is left.",
      resolve: async (c, _a, ctx) => (await ctx.thread(c.id)).next,
    }),
    resumable: t.boolean({
      description: "True when next is non-empty and no run is active: resumeRun will continue the pending step.",
      select: { runs: { where: { status: "running" }, take: 1, select: { id: true } } },
      resolve: async (c, _a, ctx) => c.runs.length === 0 && (await ctx.thread(c.id)).next.length > 0,
    }),
    activeRun: t.field({
      type: Run,
      nullable: true,
      description: "The run in progress, if any (at most one per conversation).",
      select: (_args, _ctx, nested) => ({ runs: nested({ where: { status: "running" }, take: 1 }) }),
      resolve: (c) => c.runs[0] ?? null,
    }),
    latestRun: t.field({
      type: Run,
      nullable: true,
      description: "The most recently started run.",
      select: (_args, _ctx, nested) => ({ runs: nested({ orderBy: [{ startedAt: "desc" as const }, { id: "desc" as const }], take: 1 }) }),
      resolve: (c) => c.runs[0] ?? null,
    }),
    runs: t.relatedConnection(
      "runs",
      { cursor: "id", query: { orderBy: [{ startedAt: "asc" as const }, { id: "asc" as const }] }, maxSize: PAGE_SIZE_MAX, defaultSize: PAGE_SIZE_DEFAULT, totalCount: true },
      { name: "RunConnection" },
      { name: "RunEdge" },
    ),
  }),
});

builder.queryField("conversation", (t) =>
  t.prismaField({
    type: "Conversation",
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, { id }, ctx) => ctx.prisma.conversation.findUnique({ ...query, where: { id: String(id) } }),
  }),
);

// The list is served by the conversation list read model (prepared statements), in
// Prisma's cursor terms, so cursors and paging match the Prisma connections. Fields
// the rows lack (activeRun, latestRun, runs, resumable) are loaded per conversation
// by the Prisma plugin, as for any Conversation not fetched through Prisma.
const conversationPages = prismaConnectionHelpers(builder, "Conversation", { cursor: "id", maxSize: PAGE_SIZE_MAX, defaultSize: PAGE_SIZE_DEFAULT });

builder.queryField("conversations", (t) =>
  t.connection(
    {
      type: Conversation,
      description: "Newest updatedAt first.",
      resolve: async (_root, args, ctx) => {
        const { cursor, skip = 0, take = PAGE_SIZE_DEFAULT } = conversationPages.getQuery(args, ctx, () => true);
        const rows = await ctx.conversationList.page({ cursor: cursor?.id === undefined ? undefined : { id: cursor.id }, skip, take });
        return conversationPages.resolve(rows, args, ctx);
      },
    },
    {
      name: "ConversationConnection",
      fields: (c) => ({ totalCount: c.int({ resolve: (_page, _args, ctx) => ctx.conversationList.count() }) }),
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
      conversation: await ctx.conversations.rename(String(input.conversationId), input.title),
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
    resolve: async (_root, { input }, ctx) => ({ conversationId: (await ctx.conversations.delete(String(input.conversationId))).id }),
  }),
);
