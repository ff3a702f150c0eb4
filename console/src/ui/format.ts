// Words and numbers for people: durations, times, JSON.

export function formatDuration(ms: number): string {
  const clamped = Math.max(0, ms);
  if (clamped < 1_000) return `${Math.round(clamped)} ms`;
  if (clamped < 60_000) return `${(clamped / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(clamped / 60_000);
  const seconds = Math.floor((clamped % 60_000) / 1_000);
  return `${minutes} min ${String(seconds).padStart(2, "0")} s`;
}

/** How long a run took, or has taken so far (from the browser's clock, which may differ from the server's). */
export function runDuration(startedAt: string, finishedAt: string | null, now: number): number {
  return (finishedAt ? Date.parse(finishedAt) : now) - Date.parse(startedAt);
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function formatTime(iso: string): string {
  return timeFormat.format(new Date(iso));
}

export function formatDateTime(iso: string): string {
  return dateTimeFormat.format(new Date(iso));
}

export function formatJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** JSON on one line, cut to `max` characters (the whole of it belongs in a title). */
export function compactJson(value: unknown, max = 160): string {
  const text = formatJson(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** Tokens, model calls and model time, in one line; time to first token when the run has one. */
export function formatUsage(usage: {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  modelDurationMs: number;
  timeToFirstTokenMs?: number | null;
}): string {
  const parts = [`${usage.inputTokens} in / ${usage.outputTokens} out tokens`, plural(usage.modelCalls, "model call")];
  if (usage.timeToFirstTokenMs != null) parts.push(`first token ${formatDuration(usage.timeToFirstTokenMs)}`);
  parts.push(`model time ${formatDuration(usage.modelDurationMs)}`);
  return parts.join(" · ");
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}
