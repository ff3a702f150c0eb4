// Interrupt: a run paused on LangGraph's interrupt(), waiting for a person; who
// answered it and how.
import type { InterruptRecord } from "../domain/records.ts";
import type { Context } from "../context.ts";
import type { GraphQLResolveInfo } from "graphql";
import { GraphQLError } from "graphql";
import { builder } from "./builder.ts";
import { InterruptState } from "./enums.ts";
import { Interrupt, Run } from "./refs.ts";

async function runOrThrow(ctx: Context, info: GraphQLResolveInfo, id: string) {
  const run = await ctx.reads(info.rootValue).run(id);
  if (!run) throw new GraphQLError(`Run ${JSON.stringify(id)} no longer exists`, { extensions: { code: "NOT_FOUND" } });
  return run;
}

Interrupt.implement({
  description: "A question a run's graph asked with interrupt(): the run ended WAITING until resumeRun answers it.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "LangGraph's interrupt id; resumeRun's responses name it." }),
    node: t.exposeString("node", { description: "The graph node that raised it." }),
    value: t.field({
      type: "JSON",
      nullable: true,
      description:
        'What the graph asked. The built-in agent\'s tool approvals are {"type": "tool_approval", "toolCalls": [{"id", "name", "args"}]}; a tool call in doubt is {"type": "tool_in_doubt", "toolCallId", "tool", "args", "startedAt", "attempt"}.',
      resolve: (i) => i.value,
    }),
    run: t.field({ type: Run, description: "The run that raised it.", resolve: (i, _a, ctx, info) => runOrThrow(ctx, info, i.runId) }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    state: t.field({
      type: InterruptState,
      resolve: async (i, _a, ctx, info) => {
        if (i.answeredByRunId) return "answered" as const;
        const pending = await ctx.reads(info.rootValue).pendingInterrupts(i.conversationId);
        return pending.some((p) => p.id === i.id) ? ("pending" as const) : ("superseded" as const);
      },
    }),
    answer: t.field({ type: "JSON", nullable: true, description: "The answer a resume gave.", resolve: (i: InterruptRecord) => i.answer }),
    answeredBy: t.field({
      type: Run,
      nullable: true,
      description: "The resume that answered it.",
      resolve: (i, _a, ctx, info) => (i.answeredByRunId ? ctx.reads(info.rootValue).run(i.answeredByRunId) : null),
    }),
    answeredAt: t.expose("answeredAt", { type: "DateTime", nullable: true }),
  }),
});
