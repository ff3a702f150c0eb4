// Where a conversation's live run was left: {conversationId, runId, lastSeq}
// and what the run had streamed up to that seq, kept in storage so that a new
// client (a refreshed page) rejoins with `after: lastSeq` and shows the same
// text, with no replay from the start.
import type { LiveRun } from "./run-log.js";

/** The part of the Web Storage API the client uses: sessionStorage and localStorage fit, or any store of strings. */
export interface ResumeStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface ResumePoint {
  conversationId: string;
  runId: string;
  /** The last seq the stored `live` holds. */
  lastSeq: number;
  live: LiveRun;
}

const PREFIX = "runledger:resume:";
const VERSION = 1;

/** Storage that lasts as long as the process (and the client's that share it). */
export function memoryStorage(): ResumeStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

/** The tab's sessionStorage where there is one (a browser), else memory. */
export function defaultStorage(): ResumeStorage {
  try {
    const session = (globalThis as { sessionStorage?: ResumeStorage }).sessionStorage;
    if (session) {
      // Reading it can throw (storage disabled, an opaque origin): then memory.
      session.getItem(PREFIX);
      return session;
    }
  } catch {
    // fall through
  }
  return memoryStorage();
}

export function readResume(storage: ResumeStorage, conversationId: string): ResumePoint | null {
  try {
    const text = storage.getItem(PREFIX + conversationId);
    if (!text) return null;
    const value = JSON.parse(text) as Partial<ResumePoint> & { v?: number };
    if (value.v !== VERSION || value.conversationId !== conversationId || typeof value.runId !== "string" || typeof value.lastSeq !== "number") return null;
    const live = value.live;
    if (!live || live.run?.id !== value.runId || live.run.lastSeq !== value.lastSeq || !Array.isArray(live.messages)) return null;
    return { conversationId, runId: value.runId, lastSeq: value.lastSeq, live };
  } catch {
    return null;
  }
}

export function writeResume(storage: ResumeStorage, point: ResumePoint): void {
  try {
    storage.setItem(PREFIX + point.conversationId, JSON.stringify({ v: VERSION, ...point }));
  } catch {
    // Full or refused: a rejoin then replays more, which is still exact.
  }
}

/** Forgets the conversation's resume point (of `runId` only, when given). */
export function clearResume(storage: ResumeStorage, conversationId: string, runId?: string): void {
  try {
    if (runId !== undefined && readResume(storage, conversationId)?.runId !== runId) return;
    storage.removeItem(PREFIX + conversationId);
  } catch {
    // nothing kept, or nothing to do
  }
}
