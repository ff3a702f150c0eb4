// Events and conversation changes as text, for a backend that carries them
// outside this process (the Redis bus: its streams and its pub/sub messages).
import type { ConversationChange, RunEvent } from "../../domain/events.ts";

export function encodeEvent(event: RunEvent): string {
  return JSON.stringify(event);
}

export function decodeEvent(json: string): RunEvent {
  const event = JSON.parse(json) as RunEvent;
  event.at = new Date(event.at);
  return event;
}

export function encodeChange(change: ConversationChange): string {
  return JSON.stringify(change);
}

export function decodeChange(json: string): ConversationChange {
  const change = JSON.parse(json) as ConversationChange;
  change.at = new Date(change.at);
  if (change.kind === "deleted") {
    change.snapshot.createdAt = new Date(change.snapshot.createdAt);
    change.snapshot.updatedAt = new Date(change.snapshot.updatedAt);
  }
  return change;
}
