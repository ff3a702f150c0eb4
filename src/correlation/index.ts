// The run ↔ checkpoint correlation: marks, the window rule (in TypeScript and
// SQL), the merge and failed-task attribution. Nothing else in runledger mints
// marks or compares them with checkpoint ids.
export { mintMark } from "./marks.ts";
export { holds, holdsSql, OPEN_WINDOW_END, startedBy, windowEndSql, type RunWindow } from "./window.ts";
export { correlate, firstAppearances, runAt } from "./merge.ts";
export { attributeFailures, type AttemptWindow } from "./failures.ts";
