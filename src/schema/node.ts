// Node: object identification by the product's own ids (a conversation id is a
// LangGraph thread id; checkpoint ids are LangGraph's), not Relay global ids.
import { brandWithType } from "@pothos/core";
import { builder } from "./builder.ts";
import { Checkpoint, Conversation, Node, Run, Schedule } from "./refs.ts";

Node.implement({
  fields: (t) => ({ id: t.exposeID("id") }),
});

builder.queryField("node", (t) =>
  t.field({
    type: Node,
    nullable: true,
    description: "Any conversation, run, checkpoint or schedule by its id.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx, info) => {
      const reads = ctx.reads(info.rootValue);
      const key = String(id);
      // The lookup that finds the id names the type (Pothos resolves the interface by this brand).
      const found =
        (await brand(reads.conversation(key), Conversation)) ??
        (await brand(reads.run(key), Run)) ??
        (await brand(reads.checkpoint(key), Checkpoint)) ??
        (await brand(ctx.schedules.get(key, ctx.principal), Schedule));
      return found;
    },
  }),
);

async function brand<T extends object>(
  lookup: Promise<T | null>,
  type: typeof Conversation | typeof Run | typeof Checkpoint | typeof Schedule,
): Promise<T | null> {
  const value = await lookup;
  if (value) brandWithType(value, type);
  return value;
}
