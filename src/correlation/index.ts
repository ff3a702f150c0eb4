// The run ↔ checkpoint correlation: marks, the window rule (in TypeScript and
// SQL), the other ordering rules as SQL, the clock check, the merge and
// failed-task attribution. Nothing else in runledger mints marks or compares
// them with checkpoint ids; every module outside this folder imports it from here.
export { ClockSkewError, mintCheckpointId, mintMark, mintMarkAfter } from "./marks.ts";
export { holds, OPEN_WINDOW_END, startedBy, type RunWindow } from "./window.ts";
export { holdsSql, lastMarkSql, laterEndMarkSql, recoveredEndMarkSql, threadHeadSql, windowEndSql, type SqlDialect } from "./sql.ts";
export { checkClockAgainstDatabase } from "./clock.ts";
export { correlate, firstAppearances, runAt } from "./merge.ts";
export { attributeFailures, type AttemptWindow } from "./failures.ts";
