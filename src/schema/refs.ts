// The object and interface types, declared before any is implemented, so each
// type's file can point at the others without importing them (no cycles).
import type { CheckpointRecord, ConversationRecord, InterruptRecord, RunRecord } from "../domain/records.ts";
import type { Agent as AgentShape } from "../agent/runtime.ts";
import type { RunEvent } from "../domain/events.ts";
import type { ApiMessage } from "../read/messages.ts";
import type { FailedTask } from "../read/scope.ts";
import type { ScheduleRecord } from "../storage/schedules/types.ts";
import { builder } from "./builder.ts";

/** A conversation, or the last notice of a deleted one (conversationsChanged), which carries `deleted: true`. */
export type ConversationShape = ConversationRecord & { deleted?: true };

export const Node = builder.interfaceRef<{ id: string }>("Node");
export const Conversation = builder.objectRef<ConversationShape>("Conversation");
export const Run = builder.objectRef<RunRecord>("Run");
export const Checkpoint = builder.objectRef<CheckpointRecord>("Checkpoint");
export const TaskError = builder.objectRef<FailedTask>("TaskError");
export const Message = builder.objectRef<ApiMessage>("Message");
export const RunEventInterface = builder.interfaceRef<RunEvent>("RunEvent");
/** Live in runEvents, and stored for Run.customEvents. */
export const CustomEvent = builder.objectRef<Extract<RunEvent, { type: "custom" }>>("CustomEvent");
export const Agent = builder.objectRef<AgentShape>("Agent");
export const Interrupt = builder.objectRef<InterruptRecord>("Interrupt");
export const Schedule = builder.objectRef<ScheduleRecord>("Schedule");
