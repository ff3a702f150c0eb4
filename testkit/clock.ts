// One clock for every process of a benchmark, and for the fake Ollama's stamped
// tokens. process.hrtime reads Linux's CLOCK_MONOTONIC, which is system-wide: a
// stamp taken in the fake Ollama's process and a reading taken in a client
// process are directly comparable, with nanosecond resolution and no
// wall-clock steps. (Date.now() has only millisecond resolution;
// performance.timeOrigin + performance.now() mixes in each process's own
// estimate of the wall clock at start-up.)

/** Milliseconds on the shared monotonic clock, with sub-millisecond precision. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export interface TokenStamp {
  /** When the fake Ollama wrote this chunk. */
  sentAt: number;
  /** When the fake Ollama received the chat request that produced it. */
  requestAt: number;
  /** 0-based position of the chunk in its stream. */
  index: number;
}

/** The text of one streamed token: the stamp rides inside it, so it survives every layer unchanged. */
export function stampToken(stamp: TokenStamp): string {
  return `⟨t=${stamp.sentAt.toFixed(3)},rq=${stamp.requestAt.toFixed(3)},i=${stamp.index}⟩ `;
}

const STAMP = /⟨t=([\d.]+),rq=([\d.]+),i=(\d+)⟩/g;

/** Every stamp in a piece of text (a relay may in principle merge chunks). */
export function readStamps(text: string): TokenStamp[] {
  const stamps: TokenStamp[] = [];
  for (const m of text.matchAll(STAMP)) stamps.push({ sentAt: Number(m[1]), requestAt: Number(m[2]), index: Number(m[3]) });
  return stamps;
}
