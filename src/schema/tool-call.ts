// ToolCallRecord: one attempt at a tool call, from the journal the built-in
// agent writes before and after each call (docs/tools-and-crashes.md).
import type { ToolCallRecord as ToolCallShape } from "../storage/tool-journal/types.ts";
import { builder } from "./builder.ts";

export const ToolCallState = builder.enumType("ToolCallState", {
  values: {
    STARTED: { value: "started", description: "Invoked by a run that is still running; no outcome yet." },
    SUCCEEDED: { value: "succeeded", description: "The tool answered." },
    FAILED: { value: "failed", description: "The tool answered with an error, or a person marked the call in doubt as failed." },
    IN_DOUBT: {
      value: "in_doubt",
      description: "Cut off (a crash, a cancel, a shutdown) before its outcome was recorded: it may or may not have taken effect.",
    },
    SKIPPED: { value: "skipped", description: "In doubt, and a person chose not to run it again; the model got the result they gave." },
  } as const,
});

export const ToolCallRecord = builder.objectRef<ToolCallShape>("ToolCallRecord").implement({
  description: "One attempt at a tool call: recorded before the tool is invoked, and again with its outcome.",
  fields: (t) => ({
    toolCallId: t.exposeString("toolCallId", { description: 'The model\'s id for the call; MCP servers get it as _meta["runledger/toolCallId"].' }),
    name: t.exposeString("name"),
    args: t.field({ type: "JSON", resolve: (c) => c.args }),
    state: t.field({ type: ToolCallState, resolve: (c) => c.state }),
    attempt: t.exposeInt("attempt", { description: "1 for the first invocation; a call in doubt that runs again is the next attempt." }),
    result: t.field({
      type: "JSON",
      nullable: true,
      description: "What the model was given: text, or content blocks; null without an outcome.",
      resolve: (c) => c.result,
    }),
    startedAt: t.expose("startedAt", { type: "DateTime" }),
    finishedAt: t.expose("finishedAt", { type: "DateTime", nullable: true }),
  }),
});
