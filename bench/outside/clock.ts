// The clock every process of the outside benchmark stamps with: wall-clock
// milliseconds as performance.timeOrigin + performance.now(). now() is
// hrtime-based, so stamps have microsecond resolution and never step; the
// origin ties each process's reading to the same wall clock. The client checks
// the skew between its reading and the fake model's at start-up and reports it.

export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Milliseconds on CLOCK_MONOTONIC, the clock V8's CPU profiles are stamped with (µs there). */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** How the fake model streams one request; the client puts it in the user message. */
export interface Plan {
  tokens: number;
  intervalMs: number;
}

const PLAN = /outside (\{[^}]*\})/;

export function planMessage(plan: Plan): string {
  return `outside ${JSON.stringify(plan)}`;
}

export function readPlan(text: string, fallback: Plan): Plan {
  const m = PLAN.exec(text);
  if (!m) return fallback;
  const p = JSON.parse(m[1]!) as Partial<Plan>;
  return { tokens: p.tokens ?? fallback.tokens, intervalMs: p.intervalMs ?? fallback.intervalMs };
}

export interface Stamp {
  /** When the fake model wrote the chunk. */
  sentAt: number;
  /** When the fake model received the request the chunk answers. */
  requestAt: number;
  index: number;
}

/** The stamp rides inside the token's text, so every layer passes it through unchanged. */
export function stampText(stamp: Stamp): string {
  return `⟨s=${stamp.sentAt.toFixed(3)};r=${stamp.requestAt.toFixed(3)};i=${stamp.index}⟩ `;
}

const STAMP = /⟨s=([\d.]+);r=([\d.]+);i=(\d+)⟩/g;

export function readStamps(text: string): Stamp[] {
  const out: Stamp[] = [];
  for (const m of text.matchAll(STAMP)) out.push({ sentAt: Number(m[1]), requestAt: Number(m[2]), index: Number(m[3]) });
  return out;
}
