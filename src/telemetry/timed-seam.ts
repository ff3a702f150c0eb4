// The database's share of /metrics, measured at the storage seams rather than
// inside each backend: every call of a run store, conversation list,
// checkpoint read or tool journal method is one transaction or one read, so its
// duration (pool or write-gate wait included) is what a caller waits for the
// database. Labels are the seam and the method name: bounded, the same on
// SQLite and PostgreSQL.
import type { Histogram } from "prom-client";

export type SeamHistogram = Histogram<"seam" | "operation">;

/** `target` with each method's duration observed in `histogram` (sync methods too; a throw or rejection counts). */
export function timedSeam<T extends object>(target: T, seam: string, histogram: SeamHistogram): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== "function" || typeof property !== "string") return value;
      let timed = wrapped.get(property);
      if (!timed) {
        const observe = histogram.labels({ seam, operation: property });
        timed = (...args: unknown[]) => {
          const started = performance.now();
          const done = () => observe.observe((performance.now() - started) / 1000);
          let result: unknown;
          try {
            result = (value as (...a: unknown[]) => unknown).apply(object, args);
          } catch (error) {
            done();
            throw error;
          }
          if (result instanceof Promise) return result.finally(done);
          done();
          return result;
        };
        wrapped.set(property, timed);
      }
      return timed;
    },
  });
}
