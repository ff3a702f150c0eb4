// Percentiles of one repetition, and the median of each percentile across
// repetitions (what the report shows).

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  n: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function percentiles(samples: readonly number[]): Percentiles {
  const sorted = Float64Array.from(samples).sort();
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
    n: sorted.length,
  };
}

export function median(values: readonly number[]): number {
  const sorted = Float64Array.from(values.filter((v) => Number.isFinite(v))).sort();
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The median, over repetitions, of each percentile. */
export function medianOfReps(reps: readonly Percentiles[]): Percentiles {
  return {
    p50: median(reps.map((r) => r.p50)),
    p95: median(reps.map((r) => r.p95)),
    p99: median(reps.map((r) => r.p99)),
    max: median(reps.map((r) => r.max)),
    n: reps.reduce((sum, r) => sum + r.n, 0),
  };
}
