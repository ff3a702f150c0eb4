// Node: object identification by the product's own ids (a conversation id is a
// LangGraph thread id; checkpoint ids are LangGraph's), not Relay global ids.
import { builder } from "./builder.ts";

export const NodeInterface = builder.interfaceRef<{ id: string }>("Node").implement({
  resolveType: (value) => {
    if ("startMark" in value) return "Run";
    if ("title" in value) return "Conversation";
    if ("checkpointNs" in value) return "Checkpoint";
    throw new Error("unknown Node shape");
  },
  fields: (t) => ({ id: t.exposeID("id") }),
});

builder.queryField("node", (t) =>
  t.field({
    type: NodeInterface,
    nullable: true,
    description: "Any conversation, run or checkpoint by its id.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx, info) => {
      const key = String(id);
      return (await ctx.store.getConversation(key)) ?? (await ctx.store.getRun(key)) ?? (await ctx.checkpoints(info.rootValue).checkpoint(key));
    },
  }),
);
