// What a WAITING thread asks and how it was answered: the answer form above
// the composer (every pending interrupt answered in one resumeRun), and the
// words the thread and the runs panel use for questions and answers.
import { useState } from "preact/hooks";
import type { Interrupt } from "../api/types.ts";
import {
  approvalCalls,
  decisionsOf,
  draftAnswer,
  draftAsJson,
  inDoubtCall,
  initialDraft,
  parseArgs,
  parseJson,
  type CallDraft,
  type CallOutcome,
  type Decision,
  type DoubtDecision,
  type DoubtDraft,
  type InDoubtCall,
  type InterruptDraft,
} from "../state/interrupts.ts";
import { compactJson, formatTime, plural, prettyJson } from "./format.ts";

/** A run's number when the page lists it, else its short id. */
export type RunLabel = (runId: string) => string;

/** The question in a few words: the calls a tool approval asks about, or a custom graph's value. */
export function describeQuestion(interrupt: Interrupt): string {
  const doubt = inDoubtCall(interrupt.value);
  if (doubt) return `a decision on ${doubt.tool} ${compactJson(doubt.args, 80)}, which was cut off and may have run`;
  const calls = approvalCalls(interrupt.value);
  if (!calls) return compactJson(interrupt.value);
  return `approval of ${calls.map((c) => `${c.name} ${compactJson(c.args, 80)}`).join(", ")}`;
}

export function describeOutcome(name: string, outcome: CallOutcome): string {
  switch (outcome.decision) {
    case "approve":
      return `${name} approved`;
    case "reject":
      return `${name} rejected${outcome.reason ? `: “${outcome.reason}”` : ""}`;
    case "edit":
      return `${name} edited to ${compactJson(outcome.args, 80)}`;
    default:
      return `${name}: ${outcome.decision}`;
  }
}

/** The recorded answer in a few words. */
export function describeAnswer(interrupt: Interrupt): string {
  const doubt = inDoubtCall(interrupt.value);
  if (doubt) {
    const { decision, result } = (interrupt.answer ?? {}) as { decision?: unknown; result?: unknown };
    const said = typeof result === "string" ? `: “${result}”` : "";
    return decision === "retry" ? `${doubt.tool} run again` : decision === "skip" ? `${doubt.tool} skipped${said}` : `${doubt.tool} failed${said}`;
  }
  const calls = approvalCalls(interrupt.value);
  if (!calls) return compactJson(interrupt.answer);
  const decisions = decisionsOf(interrupt);
  return calls
    .map((call) => {
      const outcome = decisions.get(call.id);
      return outcome ? describeOutcome(call.name, outcome) : `${call.name}: no decision`;
    })
    .join("; ");
}

export function InterruptStateBadge({ state }: { state: string }) {
  return <span class={`badge badge-interrupt-${state.toLowerCase()}`}>{state}</span>;
}

/** One interrupt as the runs panel lists it: who asked what, and who answered how. */
export function InterruptRecord({ interrupt, runLabel }: { interrupt: Interrupt; runLabel: RunLabel }) {
  return (
    <li class="interrupt" aria-label={`Interrupt from ${interrupt.node}`} title={interrupt.id}>
      <div>
        <InterruptStateBadge state={interrupt.state} /> <code>{interrupt.node}</code> asked <span class="question-text">{describeQuestion(interrupt)}</span>
      </div>
      {interrupt.state === "ANSWERED" && (
        <div>
          answered by {interrupt.answeredBy ? runLabel(interrupt.answeredBy.id) : "a run no longer listed"}
          {interrupt.answeredAt && <span class="hint"> at {formatTime(interrupt.answeredAt)}</span>}:{" "}
          <span class="answer-text" title={compactJson(interrupt.answer, 10_000)}>
            {describeAnswer(interrupt)}
          </span>
        </div>
      )}
      {interrupt.state === "SUPERSEDED" && <div class="hint">A later message went ahead without answering it.</div>}
      {interrupt.state === "PENDING" && <div class="hint">Waiting for an answer.</div>}
    </li>
  );
}

export interface Response {
  interruptId: string;
  value: unknown;
}

/**
 * The answer form for every pending interrupt of the thread. Keyed by the
 * interrupts' ids, so a new question starts from a blank form.
 */
export function AnswerPanel(props: { pending: Interrupt[]; runLabel: RunLabel; disabled: boolean; onSend: (responses: Response[]) => Promise<boolean> }) {
  const { pending, runLabel } = props;
  const [drafts, setDrafts] = useState<Record<string, InterruptDraft>>(() => Object.fromEntries(pending.map((i) => [i.id, initialDraft(i)])));
  const [sending, setSending] = useState(false);
  const update = (id: string, change: (draft: InterruptDraft) => InterruptDraft) => setDrafts((all) => ({ ...all, [id]: change(all[id]!) }));

  const answers = pending.map((interrupt) => ({ interrupt, answer: draftAnswer(interrupt, drafts[interrupt.id]!) }));
  const problem = answers.find((a) => !a.answer.ok);
  const runs = [...new Set(pending.map((i) => runLabel(i.run.id)))];
  const who = runs.join(", ");

  const submit = async () => {
    if (problem || sending) return;
    setSending(true);
    await props.onSend(answers.map(({ interrupt, answer }) => ({ interruptId: interrupt.id, value: answer.ok ? answer.value : null })));
    setSending(false);
  };

  return (
    <section class="answer-panel" aria-labelledby="answer-heading">
      <h3 id="answer-heading">
        {who.charAt(0).toUpperCase() + who.slice(1)} {runs.length === 1 ? "is" : "are"} waiting for{" "}
        {pending.length === 1 ? "an answer" : `${pending.length} answers`}
      </h3>
      <form
        aria-label="Answer the waiting run"
        onSubmit={(event) => {
          event.preventDefault();
          void submit();
        }}
      >
        {pending.map((interrupt) => (
          <Question key={interrupt.id} interrupt={interrupt} draft={drafts[interrupt.id]!} onChange={(change) => update(interrupt.id, change)} />
        ))}
        <div class="composer-foot">
          <span class="hint">
            {problem && !problem.answer.ok
              ? `Before sending: ${problem.answer.problem}.`
              : "The answers go in one resume; a new message instead leaves the question unanswered."}
          </span>
          <button type="submit" disabled={props.disabled || sending || problem !== undefined}>
            Send {pending.length === 1 ? "answer" : "answers"}
          </button>
        </div>
      </form>
    </section>
  );
}

function Question({
  interrupt,
  draft,
  onChange,
}: {
  interrupt: Interrupt;
  draft: InterruptDraft;
  onChange: (change: (draft: InterruptDraft) => InterruptDraft) => void;
}) {
  const calls = approvalCalls(interrupt.value);
  const doubt = inDoubtCall(interrupt.value);
  if (doubt && !draft.raw) return <DoubtFields call={doubt} draft={draft.doubt} onChange={(next) => onChange((d) => ({ ...d, doubt: next }))} />;
  const raw = draft.raw ? parseJson(draft.text) : null;
  return (
    <div role="group" aria-label={calls ? `Approval asked by ${interrupt.node}` : `Question from ${interrupt.node}`} class="question" title={interrupt.id}>
      {calls ? (
        <p>
          <code>{interrupt.node}</code> asks before it runs {calls.length === 1 ? "this tool call" : `these ${plural(calls.length, "tool call")}`}:
        </p>
      ) : (
        <>
          <p>
            <code>{interrupt.node}</code> asks:
          </p>
          <pre class="question-value">{prettyJson(interrupt.value)}</pre>
        </>
      )}
      {calls &&
        !draft.raw &&
        calls.map((call, index) => (
          <CallFields
            key={call.id}
            label={calls.filter((c) => c.name === call.name).length > 1 ? `${call.name} (call ${index + 1})` : call.name}
            call={call}
            draft={draft.calls[call.id]!}
            onChange={(next) => onChange((d) => ({ ...d, calls: { ...d.calls, [call.id]: next } }))}
          />
        ))}
      {calls && (
        <label class="raw-toggle">
          <input
            type="checkbox"
            checked={draft.raw}
            onChange={(e) => {
              const on = e.currentTarget.checked;
              onChange((d) => ({ ...d, raw: on, text: on ? draftAsJson(interrupt, d) : d.text }));
            }}
          />{" "}
          Write the answer as JSON
        </label>
      )}
      {draft.raw && (
        <label class="json-field">
          Answer (JSON)
          <textarea
            aria-label="Answer (JSON)"
            rows={calls ? 6 : 3}
            spellcheck={false}
            value={draft.text}
            placeholder={calls ? undefined : 'for example {"name": "Ada"}'}
            onInput={(e) => {
              const text = e.currentTarget.value;
              onChange((d) => ({ ...d, text }));
            }}
          />
          {raw && !raw.ok && draft.text.trim() !== "" && <span class="error-text">{raw.problem}</span>}
        </label>
      )}
    </div>
  );
}

const DECISIONS: { value: Decision; label: string }[] = [
  { value: "approve", label: "Approve" },
  { value: "reject", label: "Reject" },
  { value: "edit", label: "Edit arguments" },
];

function CallFields({
  label,
  call,
  draft,
  onChange,
}: {
  label: string;
  call: { id: string; name: string; args: unknown };
  draft: CallDraft;
  onChange: (draft: CallDraft) => void;
}) {
  const args = draft.decision === "edit" ? parseArgs(draft.argsText) : null;
  return (
    <fieldset class="call-decision" aria-label={`Decision on ${label}`} title={`tool call ${call.id}`}>
      <legend>
        <code class="tool-name">{label}</code> <code class="tool-args">{compactJson(call.args)}</code>
      </legend>
      <div class="decisions">
        {DECISIONS.map(({ value, label: text }) => (
          <label key={value}>
            <input
              type="radio"
              name={`decision-${call.id}`}
              value={value}
              checked={draft.decision === value}
              onChange={() => onChange({ ...draft, decision: value })}
            />{" "}
            {text}
          </label>
        ))}
      </div>
      {draft.decision === "reject" && (
        <label class="json-field">
          Reason (optional, the model reads it as the tool's result)
          <input aria-label="Reason" value={draft.reason} onInput={(e) => onChange({ ...draft, reason: e.currentTarget.value })} />
        </label>
      )}
      {draft.decision === "edit" && (
        <label class="json-field">
          Arguments (JSON)
          <textarea
            aria-label="Arguments (JSON)"
            rows={3}
            spellcheck={false}
            value={draft.argsText}
            onInput={(e) => onChange({ ...draft, argsText: e.currentTarget.value })}
          />
          {args && !args.ok && <span class="error-text">{args.problem}</span>}
        </label>
      )}
    </fieldset>
  );
}

const DOUBT_DECISIONS: { value: DoubtDecision; label: string }[] = [
  { value: "retry", label: "Run it again" },
  { value: "skip", label: "Skip it (it went through)" },
  { value: "fail", label: "Fail it" },
];

/** A tool call cut off before its outcome was recorded: it may have run, so it runs again only if a person says so. */
function DoubtFields({ call, draft, onChange }: { call: InDoubtCall; draft: DoubtDraft; onChange: (draft: DoubtDraft) => void }) {
  return (
    <fieldset class="question call-decision" aria-label={`Tool call in doubt: ${call.tool}`} title={`tool call ${call.toolCallId}`}>
      <legend>
        <code class="tool-name">{call.tool}</code> <code class="tool-args">{compactJson(call.args)}</code>
      </legend>
      <p>
        This call {call.attempt > 1 ? `(attempt ${call.attempt}) ` : ""}was cut off
        {call.startedAt ? ` after it started at ${formatTime(call.startedAt)}` : ""} and may or may not have taken effect. Nothing runs until you decide.
      </p>
      <div class="decisions">
        {DOUBT_DECISIONS.map(({ value, label }) => (
          <label key={value}>
            <input
              type="radio"
              name={`doubt-${call.toolCallId}`}
              value={value}
              checked={draft.decision === value}
              onChange={() => onChange({ ...draft, decision: value })}
            />{" "}
            {label}
          </label>
        ))}
      </div>
      {(draft.decision === "skip" || draft.decision === "fail") && (
        <label class="json-field">
          Result (optional, the model reads it as the tool's result)
          <input aria-label="Result" value={draft.result} onInput={(e) => onChange({ ...draft, result: e.currentTarget.value })} />
        </label>
      )}
    </fieldset>
  );
}
