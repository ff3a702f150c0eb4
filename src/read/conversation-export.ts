// A conversation written out for people and tools: JSON Lines (one line per
// checkpoint, oldest first, with the run the correlation assigns it and that
// run's usage) and a Markdown transcript (each message under the run it first
// appeared in, with what each run cost and what it asked a person).
//
// Both come out in parts, as they are made. The checkpoint list (ids, times,
// steps: what the correlation needs) is read whole, but each checkpoint's state
// holds the thread's whole message list at its moment, so states are read a
// page of EXPORT_PAGE_CHECKPOINTS at a time, and each page is written before
// the next is read: an export's memory is about one page's, however long the thread.
import type { CheckpointRecord, ConversationRecord, InterruptRecord, RunRecord, Usage } from "../domain/records.ts";
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
  /** The whole usage of that run (repeated on each of its checkpoints), null outside every run and while it runs. */
  run_usage: ExportedUsage | null;
}

export interface ExportedUsage {
  input_tokens: number;
  output_tokens: number;
  model_calls: number;
  time_to_first_token_ms: number | null;
  model_duration_ms: number;
}

function exportedUsage(run: RunRecord | null | undefined): ExportedUsage | null {
  const usage = run?.usage;
  if (!usage) return null;
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    model_calls: usage.modelCalls,
    time_to_first_token_ms: usage.timeToFirstTokenMs,
    model_duration_ms: usage.modelDurationMs,
  };
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

/** Checkpoints whose states an export holds at once. */
export const EXPORT_PAGE_CHECKPOINTS = 50;

/** The thread's checkpoints in pages of `size`, oldest first. */
function* pagesOf(checkpoints: readonly CheckpointRecord[], size: number): Generator<CheckpointRecord[]> {
  for (let start = 0; start < checkpoints.length; start += size) yield checkpoints.slice(start, start + size);
}

/** One object per checkpoint of the conversation, oldest first, a page of `pageSize` at a time. */
export async function* exportCheckpointLines(
  scope: ReadScope,
  conversationId: string,
  pageSize = EXPORT_PAGE_CHECKPOINTS,
): AsyncGenerator<CheckpointExportLine[]> {
  const view = await scope.thread(conversationId);
  for (const page of pagesOf(view.checkpoints, pageSize)) {
    const [states, contents] = await Promise.all([scope.statesOfPage(conversationId, page), scope.contentsOfPage(conversationId, page)]);
    yield page.map((checkpoint, i) => {
      const state = states[i];
      const content = contents[i];
      const run = view.runOfCheckpoint.get(checkpoint.id);
      return {
        checkpoint_id: checkpoint.id,
        created_at: checkpoint.createdAt.toISOString(),
        step: checkpoint.step,
        source: checkpoint.source,
        next: state?.next ?? [],
        message_count: content?.messageCount ?? 0,
        last_message: content?.lastMessage ? exported(toApiMessage(content.lastMessage, content.messageCount - 1)) : null,
        run_id: run?.id ?? null,
        run_usage: exportedUsage(run),
      };
    });
  }
}

/**
 * Lines joined by newlines as they come, ending as the whole text would once
 * its trailing newlines were folded into one: a run of newlines is held back
 * until more text follows it.
 */
class LineWriter {
  #lines: string[] = [];
  #held = "";

  push(...lines: string[]): void {
    this.#lines.push(...lines);
  }

  /** The text of the lines pushed since the last take, less the newlines at its end (held back). */
  take(): string {
    const text = this.#lines.map((line) => `${line}\n`).join("");
    this.#lines = [];
    const body = text.replace(/\n+$/, "");
    if (body === "") {
      this.#held += text;
      return "";
    }
    const out = this.#held + body;
    this.#held = text.slice(body.length);
    return out;
  }

  /** The rest, and the one newline the text ends with. */
  end(): string {
    return `${this.take()}\n`;
  }
}

/** The conversation as Markdown (title, ids and dates, then each run with the messages it added), in parts, a page of `pageSize` checkpoints at a time. */
export async function* exportMarkdown(scope: ReadScope, conversation: ConversationRecord, pageSize = EXPORT_PAGE_CHECKPOINTS): AsyncGenerator<string> {
  const [view, interrupts, pending] = await Promise.all([
    scope.thread(conversation.id),
    scope.interruptsOf(conversation.id),
    scope.pendingInterrupts(conversation.id),
  ]);
  const runs = view.runs;
  const pendingIds = new Set(pending.map((i) => i.id));
  // The transcript is the thread as it stands: the head's state says which messages that is.
  const head = view.checkpoints.at(-1);
  const [latest] = head ? await scope.statesOfPage(conversation.id, [head]) : [];
  const current = new Set((latest?.messages ?? []).map((m, i) => m.id ?? `#${i}`));
  const out = new LineWriter();
  out.push(`# ${oneLine(conversation.title)}`, "");
  out.push(`- Conversation: \`${conversation.id}\``);
  out.push(`- Created: ${conversation.createdAt.toISOString()}`);
  out.push(`- Updated: ${conversation.updatedAt.toISOString()}`);
  out.push(`- Agent: ${conversation.agent}`);
  if (conversation.forkedFromConversationId)
    out.push(`- Forked from: \`${conversation.forkedFromConversationId}\` at checkpoint \`${conversation.forkedFromCheckpointId}\``);
  out.push(`- Runs: ${runs.length} · checkpoints: ${view.checkpoints.length} · messages: ${current.size}`);
  const total = sumUsage(runs);
  if (total.modelCalls > 0) out.push(`- Usage: ${usageLine(total)}`);
  if (latest && latest.next.length > 0) out.push(`- Pending step: ${latest.next.join(", ")} (the thread has work left)`);
  out.push("");
  yield out.take();

  let emitted = 0;
  let outside = false;
  const asked: string[] = [];
  const emitRunsStartedBy = (id: string | null) => {
    while (emitted < runs.length && (id === null || startedBy(runs[emitted]!, id))) {
      const run = runs[emitted]!;
      // A run's questions close its section, after the messages that led to them.
      out.push(...asked.splice(0), ...runHeading(run, emitted + 1));
      asked.push(
        ...questions(
          interrupts.filter((i) => i.runId === run.id),
          pendingIds,
        ),
      );
      emitted += 1;
      outside = false;
    }
  };
  const seen = new Set<string>();
  for (const page of pagesOf(view.checkpoints, pageSize)) {
    const history = (await scope.statesOfPage(conversation.id, page)).filter((state) => state !== null);
    for (const { message, checkpointId } of firstAppearances(history, seen)) {
      // Messages later removed are left out.
      if (message.id !== undefined && !current.has(message.id)) continue;
      const api = toApiMessage(message, 0);
      if (!api) continue;
      emitRunsStartedBy(checkpointId);
      const known = view.runOfCheckpoint.get(checkpointId);
      const run = known !== undefined ? known : runAt(runs, checkpointId);
      if (!run && !outside) {
        out.push(...asked.splice(0), "## Outside any run", "", "_Written by a state update, not by a run._", "");
        outside = true;
      }
      out.push(...messageBlocks(api));
    }
    yield out.take();
  }
  emitRunsStartedBy(null);
  out.push(...asked);
  yield out.end();
}

function runHeading(run: RunRecord, position: number): string[] {
  const lines = [`## Run ${position} · ${run.status}${run.errorCode ? ` (${run.errorCode})` : ""}`, ""];
  const span = `${run.startedAt.toISOString()} → ${run.finishedAt ? run.finishedAt.toISOString() : "running"}`;
  lines.push(`\`${run.id}\` · ${run.kind} · ${span}`, "");
  if (run.errorMessage) lines.push(`> ${oneLine(run.errorMessage)}`, "");
  if (run.usage && run.usage.modelCalls > 0) {
    const first = run.usage.timeToFirstTokenMs === null ? "" : ` · first token after ${run.usage.timeToFirstTokenMs} ms`;
    lines.push(`Usage: ${usageLine(run.usage)}${first}`, "");
  }
  return lines;
}

/** What a run asked a person, and what became of it. */
function questions(raised: InterruptRecord[], pendingIds: Set<string>): string[] {
  return raised.flatMap((i) => {
    const outcome = i.answeredByRunId
      ? [`Answered by \`${i.answeredByRunId}\`:`, "", ...fenced("json", JSON.stringify(i.answer, null, 2))]
      : [pendingIds.has(i.id) ? "_Waiting for an answer._" : "_Superseded by a new message._"];
    return [`### Asked (${i.node})`, "", `Interrupt \`${i.id}\``, "", ...fenced("json", JSON.stringify(i.value, null, 2)), "", ...outcome, ""];
  });
}

function sumUsage(runs: RunRecord[]): Usage {
  const total = { inputTokens: 0, outputTokens: 0, modelCalls: 0, modelDurationMs: 0 };
  for (const { usage } of runs) {
    if (!usage) continue;
    total.inputTokens += usage.inputTokens;
    total.outputTokens += usage.outputTokens;
    total.modelCalls += usage.modelCalls;
    total.modelDurationMs += usage.modelDurationMs;
  }
  return total;
}

function usageLine(usage: Usage): string {
  return `${usage.inputTokens} input and ${usage.outputTokens} output tokens in ${usage.modelCalls} model call${usage.modelCalls === 1 ? "" : "s"} (${usage.modelDurationMs} ms in the model)`;
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
