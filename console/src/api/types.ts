// The console's names for what its documents select: each one a type graphql-codegen
// generates from documents.ts and schema.graphql (generated.ts), or a part of one.
// Enums end in a catch-all member, so a value the console does not know yet (a
// new run status, say) still type-checks where it is shown.
import type {
  ConsoleAgentFragment,
  ConsoleCheckpointFragment,
  ConsoleConversationQuery,
  ConsoleInterruptFragment,
  ConsoleMeQuery,
  ConsoleMessageFragment,
  ConsoleRunEventsSubscription,
  ConsoleRunFragment,
} from "./generated.ts";

export type { InterruptState, Multitask, PrincipalRole, RunKind, RunStatus } from "./generated.ts";

/** Who the console's credential stands for (the `me` query). */
export type Principal = ConsoleMeQuery["me"];

export type Agent = ConsoleAgentFragment;
export type Message = ConsoleMessageFragment;
export type ToolCall = Message["toolCalls"][number];
/** A question a run's graph asked (interrupt()); the built-in agent's tool approvals are one kind. */
export type Interrupt = ConsoleInterruptFragment;
/** One row of the conversation list, as the client SDK's list store keeps it (from the list query or a conversationsChanged notice). */
export type { ConversationRow } from "@runledger/client";
export type CheckpointSummary = ConsoleCheckpointFragment;
export type RunDetails = ConsoleRunFragment;
/** Stored when the run ends; null while it runs. */
export type RunUsage = NonNullable<RunDetails["usage"]>;
export type TaskError = RunDetails["failedTasks"][number];
export type ConversationDetails = NonNullable<ConsoleConversationQuery["conversation"]>;
/** A custom event a run published, as it stored it (the same CustomEvent runEvents carries). */
export type StoredCustomEvent = RunDetails["customEvents"][number];
/** The node a run streamed a message's tokens from, with its first token's seq. */
export type MessageNode = RunDetails["messageNodes"][number];
/** Every RunEvent member the console selects; __typename tells which fields are set. */
export type RunEvent = ConsoleRunEventsSubscription["runEvents"];
