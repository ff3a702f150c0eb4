// What a run tells its observers. Plain data: the GraphQL layer maps these to
// the RunEvent types of the API.
import { TERMINAL_STATUSES, type ConversationRecord, type RunStatusValue } from "./records.ts";

export { TERMINAL_STATUSES, type RunStatusValue };

export type RunEventBody =
  | { type: "status"; status: RunStatusValue; errorCode: string | null; errorMessage: string | null }
  | { type: "token"; text: string; messageId: string | null; node: string }
  /** `attempt`: 1 when the model asks; a call in doubt run again is told again with its next attempt. */
  | { type: "toolCall"; toolCallId: string; name: string; args: unknown; attempt: number }
  | { type: "toolResult"; toolCallId: string; name: string; content: string; isError: boolean; attempt: number }
  | { type: "checkpoint"; checkpointId: string; conversationId: string }
  /** What a graph emitted through LangGraph's custom stream writer. */
  | { type: "custom"; name: string; data: unknown }
  /** The run paused on an interrupt; sent before the terminal WAITING status. */
  | { type: "interrupt"; interrupt: RaisedInterrupt }
  /** Events fromSeq..toSeq were no longer retained when a subscriber asked for them. */
  | { type: "replayGap"; fromSeq: number; toSeq: number };

/** An interrupt as its event carries it. */
export interface RaisedInterrupt {
  id: string;
  node: string;
  value: unknown;
  runId: string;
  conversationId: string;
  createdAt: Date;
}

export type RunEvent = RunEventBody & {
  /** 1, 2, 3... within one run; a replayGap carries the last seq it stands for. */
  seq: number;
  runId: string;
  conversationId: string;
  at: Date;
};

export function isTerminalEvent(event: RunEvent): boolean {
  return event.type === "status" && TERMINAL_STATUSES.has(event.status);
}

/** The conversation row as it was last seen: what a deletion leaves for observers. */
export type ConversationSnapshot = ConversationRecord;

/**
 * A conversation was created, renamed, deleted, or its runs changed status or
 * message count. Created and updated changes name the conversation (observers
 * read its current row); a deletion carries the last row, since none is left.
 */
export type ConversationChange =
  { kind: "created" | "updated"; conversationId: string; at: Date } | { kind: "deleted"; conversationId: string; at: Date; snapshot: ConversationSnapshot };
