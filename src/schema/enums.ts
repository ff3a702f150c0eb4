// The enums of the API, shared by the types that expose them.
import { KINDS, type AgentDefinition } from "../agent/kinds/index.ts";
import { builder } from "./builder.ts";

export const RunStatus = builder.enumType("RunStatus", {
  values: {
    QUEUED: {
      value: "queued",
      description:
        "Waiting its turn: its model endpoint is at MODEL_CONCURRENCY, no instance has room (MAX_ACTIVE_RUNS), it waits behind the conversation's active run, or the model turned its call away (503) and it waits to send it again (a RUNNING run can become QUEUED again this way). See queuePosition and queueReason.",
    },
    RUNNING: { value: "running" },
    COMPLETED: { value: "completed" },
    FAILED: { value: "failed" },
    CANCELLED: { value: "cancelled" },
    INTERRUPTED: { value: "interrupted" },
    WAITING: { value: "waiting", description: "Paused on an interrupt until a person answers it (resumeRun with responses)." },
  } as const,
});

export const QueueReason = builder.enumType("QueueReason", {
  description: "Why a QUEUED run waits.",
  values: {
    MODEL_BUSY: { description: "Its model endpoint already serves as many runs as its concurrency (MODEL_CONCURRENCY, or the agent's own)." },
    INSTANCE_FULL: { description: "Every instance that can run it already executes MAX_ACTIVE_RUNS runs." },
    BEHIND_ACTIVE_RUN: { description: "It waits for the conversation's active run to end." },
  } as const,
});

export const Multitask = builder.enumType("Multitask", {
  description: "What startRun does when the conversation already has an active (queued or running) run.",
  values: {
    REJECT: { value: "reject", description: "Refuse with RunInProgressError (the default)." },
    ENQUEUE: {
      value: "enqueue",
      description: "Queue this run behind the active one (QUEUED, BEHIND_ACTIVE_RUN); it starts when every run ahead of it has ended, in the order sent.",
    },
    INTERRUPT: { value: "interrupt", description: "Cancel the active run (its partial output kept, CANCELLED), then start this one." },
    ROLLBACK: {
      value: "rollback",
      description: "Cancel the active run and drop the checkpoints it wrote (the thread goes back to where it started), then start this one.",
    },
  } as const,
});

export const RunKind = builder.enumType("RunKind", {
  values: {
    START: { value: "start", description: "A new user message." },
    RESUME: { value: "resume", description: "Continues the thread's pending step." },
    EDIT: { value: "edit", description: "A change to the thread's state (editState): no model call; its checkpoint is the edit's." },
  } as const,
});

export const RunErrorCode = builder.enumType("RunErrorCode", {
  values: {
    MODEL_UNAVAILABLE: { description: "Ollama could not be reached: connection refused, reset, DNS." },
    MODEL_NOT_FOUND: { description: "Ollama answered that the model is not pulled." },
    MODEL_TIMEOUT: { description: "The model sent nothing for MODEL_IDLE_TIMEOUT_MS." },
    MODEL_ERROR: { description: "Ollama reported an error." },
    RECURSION_LIMIT: { description: "The agent took more steps than AGENT_RECURSION_LIMIT." },
    CANCELLED: { description: "cancelRun stopped it." },
    INTERRUPTED: { description: "The server stopped or crashed while it ran." },
    AGENT_FAILURE: { description: "Anything else; errorMessage has the original text." },
  } as const,
});

export const CheckpointSource = builder.enumType("CheckpointSource", {
  description: "What wrote the checkpoint (LangGraph's metadata.source).",
  values: {
    INPUT: { value: "input", description: "New input arrived (a user message)." },
    LOOP: { value: "loop", description: "A super-step of the graph finished." },
    UPDATE: { value: "update", description: "A state update from outside the graph's own run." },
    FORK: { value: "fork", description: "A copy of another checkpoint." },
  } as const,
});

export const MessageRole = builder.enumType("MessageRole", {
  values: { USER: { value: "user" }, ASSISTANT: { value: "assistant" }, TOOL: { value: "tool" } } as const,
});

export const ErrorCode = builder.enumType("ErrorCode", {
  values: [
    "VALIDATION",
    "NOT_FOUND",
    "RUN_IN_PROGRESS",
    "NOTHING_TO_RESUME",
    "RUN_NOT_ACTIVE",
    "INTERRUPT_MISMATCH",
    "QUOTA_EXCEEDED",
    "IDEMPOTENCY_KEY_REUSED",
  ] as const,
});

// One value per kind of agent, from the kinds themselves.
export const AgentKind = builder.enumType("AgentKind", {
  values: Object.fromEntries(KINDS.map((kind) => [kind.type.toUpperCase(), { value: kind.type, description: kind.description }])) as Record<
    Uppercase<AgentDefinition["type"]>,
    { value: AgentDefinition["type"]; description: string }
  >,
});

export const McpServerState = builder.enumType("McpServerState", {
  values: {
    STARTING: { value: "starting" },
    READY: { value: "ready", description: "Connected; its tools are served." },
    DOWN: { value: "down", description: "Not answering; calls give the model a tool error until it is back." },
    STOPPED: { value: "stopped", description: "Stopped with the server." },
  } as const,
});

export const InterruptState = builder.enumType("InterruptState", {
  values: {
    PENDING: { value: "pending", description: "The thread waits for an answer." },
    ANSWERED: { value: "answered", description: "A resume answered it (answeredBy)." },
    SUPERSEDED: { value: "superseded", description: "A new message went ahead without answering it." },
  } as const,
});
