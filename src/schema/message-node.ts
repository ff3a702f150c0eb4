// MessageNode: the graph node a run streamed a message's tokens from, stored
// as the run streamed it (run_events), so it outlives the run's event log.
import type { StoredMessageNode } from "../storage/run-events/types.ts";
import { builder } from "./builder.ts";

export const MessageNode = builder.objectRef<StoredMessageNode>("MessageNode").implement({
  description: "The graph node whose tokens made a message of a run: the node of the message's TokenEvents, as they streamed.",
  fields: (t) => ({
    messageId: t.exposeString("messageId", { description: "The message's id (Message.id, TokenEvent.messageId)." }),
    node: t.exposeString("node", { description: "The graph node that produced it (agent for the built-in agent)." }),
    seq: t.exposeInt("seq", { description: "The seq of the message's first TokenEvent in the run's events." }),
    at: t.expose("at", { type: "DateTime", description: "When its first token was sent." }),
  }),
});
