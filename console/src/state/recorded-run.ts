// A run whose snapshot has its outcome, as the thread shows it: its messages,
// each streamed one with the node its tokens came from, and its custom events
// placed among them where they streamed. Built from what the run stored
// (Run.customEvents, Run.messageNodes) and what this page saw live, the same
// way for both, so a page that watched the run and one opened later (a reload,
// after the server no longer keeps its events) show the same thread.
import type { Message } from "../api/types.ts";
import type { RunView } from "./conversation-view.ts";
import { applyEvent, emptyLiveRun, type LiveItem } from "./run-live.ts";

export type CustomItem = Extract<LiveItem, { kind: "custom" }>;

export type RecordedEntry = { kind: "messages"; key: string; messages: Message[] } | { kind: "event"; item: CustomItem };

export interface RecordedRun {
  /** Messages and custom events in the order they streamed. */
  entries: RecordedEntry[];
  /** The node each streamed message's tokens came from, by message id. */
  nodes: ReadonlyMap<string, string>;
}

export function recordedRun(run: RunView): RecordedRun {
  // Stored custom events go through the live path: the same items a subscriber's events make.
  const stored = run.customEvents.reduce((live, event) => applyEvent(live, event), emptyLiveRun(run.id)).items;
  const seenItems = run.seen?.items ?? [];
  const events = new Map<number, CustomItem>();
  for (const item of [...stored, ...seenItems]) if (item.kind === "custom" && !events.has(item.seq)) events.set(item.seq, item);
  const ordered = [...events.values()].sort((a, b) => a.seq - b.seq);

  // The seq of each streamed message's first token, and its node.
  const firstSeq = new Map<string, number>();
  const nodes = new Map<string, string>();
  for (const n of run.messageNodes) {
    firstSeq.set(n.messageId, n.seq);
    nodes.set(n.messageId, n.node);
  }
  for (const item of seenItems) {
    if (item.kind !== "text" || !item.messageId) continue;
    if (!firstSeq.has(item.messageId)) firstSeq.set(item.messageId, Number(item.key.slice(1)));
    if (!nodes.has(item.messageId)) nodes.set(item.messageId, item.node);
  }

  // Each event goes before the first streamed message whose first token came
  // after it. Without a streamed message, the events follow the user message.
  const streamed = run.messages.some((m) => firstSeq.has(m.id));
  const entries: RecordedEntry[] = [];
  let group: Message[] = [];
  let next = 0;
  const place = (before: number) => {
    const due: CustomItem[] = [];
    while (next < ordered.length && ordered[next]!.seq < before) due.push(ordered[next++]!);
    if (due.length === 0) return;
    if (group.length) entries.push({ kind: "messages", key: `m${entries.length}`, messages: group });
    group = [];
    for (const item of due) entries.push({ kind: "event", item });
  };
  const lead = run.messages[0]?.role === "USER" ? 1 : 0;
  run.messages.forEach((m, i) => {
    const seq = firstSeq.get(m.id) ?? (!streamed && i === lead ? Infinity : undefined);
    if (seq !== undefined) place(seq);
    group.push(m);
  });
  place(Infinity);
  if (group.length) entries.push({ kind: "messages", key: `m${entries.length}`, messages: group });
  return { entries, nodes };
}
