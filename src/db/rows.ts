// runledger's rows as SQLite holds them, and the records the rest of the code
// uses (the shapes Prisma's client returns), for the code that reads and writes
// the file with prepared statements instead of through Prisma.
import type { Conversation, Run, RunOwner } from "./generated/client.ts";

/** A stored DATETIME: Prisma writes ISO 8601 text; SQLite's CURRENT_TIMESTAMP default writes "YYYY-MM-DD HH:MM:SS" in UTC. */
export function parseSqliteDate(value: string | number): Date {
  if (typeof value === "number") return new Date(value);
  return new Date(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$/.test(value) ? `${value.replace(" ", "T")}Z` : value);
}

/**
 * A DATETIME written exactly as Prisma writes it ("2026-11-30T14:02:00.000+00:00"):
 * one format in the column keeps text comparison and ORDER BY chronological,
 * whichever code wrote the row.
 */
export function formatSqliteDate(date: Date): string {
  return `${date.toISOString().slice(0, -1)}+00:00`;
}

export interface ConversationRow {
  id: string;
  title: string;
  created_at: string | number;
  updated_at: string | number;
  message_count: number;
}

export function toConversationRecord(row: ConversationRow): Conversation {
  return {
    id: row.id,
    title: row.title,
    createdAt: parseSqliteDate(row.created_at),
    updatedAt: parseSqliteDate(row.updated_at),
    messageCount: row.message_count,
  };
}

export interface RunRow {
  id: string;
  conversation_id: string;
  kind: string;
  status: string;
  input: string | null;
  error_code: string | null;
  error_message: string | null;
  partial_output: string | null;
  started_at: string | number;
  finished_at: string | number | null;
  start_mark: string;
  end_mark: string | null;
  last_event_seq: number;
  owner_id: string | null;
}

export const RUN_COLUMNS = `id, conversation_id, kind, status, input, error_code, error_message, partial_output,
  started_at, finished_at, start_mark, end_mark, last_event_seq, owner_id`;

export function toRunRecord(row: RunRow): Run {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    kind: row.kind,
    status: row.status,
    input: row.input,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    partialOutput: row.partial_output,
    startedAt: parseSqliteDate(row.started_at),
    finishedAt: row.finished_at === null ? null : parseSqliteDate(row.finished_at),
    startMark: row.start_mark,
    endMark: row.end_mark,
    lastEventSeq: row.last_event_seq,
    ownerId: row.owner_id,
  };
}

export interface RunOwnerRow {
  id: string;
  pid: number;
  host: string;
  started_at: string | number;
  heartbeat_at: string | number;
}

export function toRunOwnerRecord(row: RunOwnerRow): RunOwner {
  return { id: row.id, pid: row.pid, host: row.host, startedAt: parseSqliteDate(row.started_at), heartbeatAt: parseSqliteDate(row.heartbeat_at) };
}
