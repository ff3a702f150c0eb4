// Moved to src/domain/events.ts; kept while callers move.
export * from "../domain/events.ts";
