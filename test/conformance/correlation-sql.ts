// The correlation rule exists once, in TypeScript (holds) and as SQL (holdsSql,
// windowEndSql) for backends that select windows in the database. On the same
// random marks, each backend's engine must answer as the TypeScript does:
// equal marks, shared prefixes, sub-millisecond neighbours and open windows.
import { describe, expect, it } from "vitest";
import { v6 } from "@langchain/core/utils/uuid";
import { holds, holdsSql, mintMark, windowEndSql } from "../../src/correlation/index.ts";
import type { StorageBackend } from "./backends.ts";

/** A deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function marks(count: number, next: () => number): string[] {
  const node = Uint8Array.from([1, 2, 3, 4, 5, 6]);
  const base = Date.parse("2026-11-30T14:02:00.000Z");
  const pool: string[] = [mintMark(), mintMark()];
  while (pool.length < count) {
    const r = next();
    if (r < 0.1 && pool.length)
      pool.push(pool[Math.floor(next() * pool.length)]!); // an equal mark
    else pool.push(v6({ msecs: base + Math.floor(next() * 4), nsecs: Math.floor(next() * 10_000), clockseq: Math.floor(next() * 4), node }));
  }
  return pool;
}

export function describeCorrelationSqlConformance(backend: StorageBackend) {
  describe(`the correlation rule in SQL: ${backend.name}`, () => {
    it("answers as the TypeScript rule does on the same random marks", async () => {
      const opened = await backend.open();
      try {
        const p = (n: number) => (opened.dialect === "postgres" ? `$${n}::text` : `@p${n}`);
        const expression = holdsSql(opened.dialect, p(1), p(2), windowEndSql(opened.dialect, p(3)));
        const next = random(20261130);
        const pool = marks(60, next);
        let holding = 0;
        for (let i = 0; i < 600; i++) {
          const pick = () => pool[Math.floor(next() * pool.length)]!;
          const window = { startMark: pick(), endMark: next() < 0.25 ? null : pick() };
          const id = pick();
          const expected = holds(window, id);
          const answer = Boolean(Number(await opened.evaluate(expression, [id, window.startMark, window.endMark])));
          expect(answer, JSON.stringify({ id, ...window })).toBe(expected);
          if (expected) holding += 1;
        }
        // Both answers occur often enough to mean something.
        expect(holding).toBeGreaterThan(60);
        expect(holding).toBeLessThan(540);
      } finally {
        await opened.close();
      }
    });
  });
}
