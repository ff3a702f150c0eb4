// Moved to src/storage/event-bus/subscriber.ts; kept while callers move.
export * from "../storage/event-bus/subscriber.ts";
