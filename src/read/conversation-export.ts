// A conversation written out for people and tools: JSON Lines (one line per
// checkpoint, oldest first, with the run the correlation assigns it) and a
// Markdown transcript (each message under the run it first appeared in).
import type { ConversationRecord, RunRecord } from "../domain/records.ts";
import type { CheckpointState } from "../agent/runtime.ts";
import { firstAppearances, runAt, startedBy } from "../correlation/index.ts";
import { toApiMessage, type ApiMessage } from "./messages.ts";
import type { ReadScope } from "./scope.ts";

export interface CheckpointExportLine {
  checkpoint_id: string;
  created_at: string;
  step: number;
  source: string;
  next: string[];
  message_count: number;
  last_message: ExportedMessage | null;
  run_id: string | null;
}

export interface ExportedMessage {
  id: string;
  role: ApiMessage["role"];
  content: string;
  tool_calls: ApiMessage["toolCalls"];
  tool_call_id: string | null;
  name: string | null;
}

function exported(message: ApiMessage | null): ExportedMessage | null {
  if (!message) return null;
  return { id: message.id, role: message.role, content: message.content, tool_calls: message.toolCalls, tool_call_id: message.toolCallId, name: message.name };
}

/** One object per checkpoint of the conversation, oldest first. */
export async function exportCheckpointLines(scope: ReadScope, conversationId: string): Promise<CheckpointExportLine[]> {
  const view = await scope.thread(conversationId);
  const lines: CheckpointExportLine[] = [];
  // Asked for together, so each is one read for the whole thread.
  const [states, contents] = await Promise.all([
    Promise.all(view.checkpoints.map((c) => scope.state(c))),
    Promise.all(view.checkpoints.map((c) => scope.contents(c))),
  ]);
  for (const [i, checkpoint] of view.checkpoints.entries()) {
    const state = states[i];
    const content = contents[i];
    lines.push({
      checkpoint_id: checkpoint.id,
      created_at: checkpoint.createdAt.toISOString(),
      step: checkpoint.step,
      source: checkpoint.source,
      next: state?.next ?? [],
      message_count: content?.messageCount ?? 0,
      last_message: content?.lastMessage ? exported(toApiMessage(content.lastMessage, content.messageCount - 1)) : null,
      run_id: view.runOfCheckpoint.get(checkpoint.id)?.id ?? null,
    });
  }
  return lines;
}

/** The conversation as Markdown: title, ids and dates, then each run with the messages it added. */
export async function exportMarkdown(scope: ReadScope, conversation: ConversationRecord): Promise<string> {
  const [view, history] = await Promise.all([scope.thread(conversation.id), scope.history(conversation.id)]);
  const runs = view.runs;
  const latest: CheckpointState | undefined = history.at(-1);
  const current = new Set((latest?.messages ?? []).map((m, i) => m.id ?? `#${i}`));
  const out: string[] = [];
  out.push(`# ${oneLine(conversation.title)}`, "");
  out.push(`- Conversation: \`${conversation.id}\``);
  out.push(`- Created: ${conversation.createdAt.toISOString()}`);
  out.push(`- Updated: ${conversation.updatedAt.toISOString()}`);
  out.push(`- Runs: ${runs.length} · checkpoints: ${view.checkpoints.length} · messages: ${current.size}`);
  if (latest && latest.next.length > 0) out.push(`- Pending step: ${latest.next.join(", ")} (the thread has work left)`);
  out.push("");

  let emitted = 0;
  let outside = false;
  const emitRunsStartedBy = (id: string | null) => {
    while (emitted < runs.length && (id === null || startedBy(runs[emitted]!, id))) {
      out.push(...runHeading(runs[emitted]!, emitted + 1));
      emitted += 1;
      outside = false;
    }
  };
  for (const { message, checkpointId } of firstAppearances(history)) {
    // The transcript is the thread as it stands: messages later removed are left out.
    if (message.id !== undefined && !current.has(message.id)) continue;
    const api = toApiMessage(message, 0);
    if (!api) continue;
    emitRunsStartedBy(checkpointId);
    const known = view.runOfCheckpoint.get(checkpointId);
    const run = known !== undefined ? known : runAt(runs, checkpointId);
    if (!run && !outside) {
      out.push("## Outside any run", "", "_Written by a state update, not by a run._", "");
      outside = true;
    }
    out.push(...messageBlocks(api));
  }
  emitRunsStartedBy(null);
  return out.join("\n").replace(/\n+$/, "") + "\n";
}

function runHeading(run: RunRecord, position: number): string[] {
  const lines = [`## Run ${position} · ${run.status}${run.errorCode ? ` (${run.errorCode})` : ""}`, ""];
  const span = `${run.startedAt.toISOString()} → ${run.finishedAt ? run.finishedAt.toISOString() : "running"}`;
  lines.push(`\`${run.id}\` · ${run.kind} · ${span}`, "");
  if (run.errorMessage) lines.push(`> ${oneLine(run.errorMessage)}`, "");
  return lines;
}

function messageBlocks(message: ApiMessage): string[] {
  if (message.role === "tool") {
    return [`### Tool result: ${message.name ?? "tool"}`, "", `Call \`${message.toolCallId ?? ""}\``, "", ...fenced("text", message.content), ""];
  }
  const lines = [`### ${message.role === "user" ? "User" : "Assistant"}`, ""];
  if (message.content) lines.push(message.content, "");
  for (const call of message.toolCalls) {
    lines.push(`### Tool call: ${call.name}`, "", `Call \`${call.id}\``, "", ...fenced("json", JSON.stringify(call.args, null, 2)), "");
  }
  return lines;
}

/** A code block whose fence is longer than any backtick run inside it. */
function fenced(language: string, text: string): string[] {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  return [`${fence}${language}`, text, fence];
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ");
}
