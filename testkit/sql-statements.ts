// Counts the SQL statements this process executes, at the driver: every
// execution (all/get/run/iterate) of a prepared statement on every copy of
// better-sqlite3 in use, so Prisma's adapter, LangGraph's SqliteSaver and the
// read models are all seen. Used by the cost specs and by the benchmark's
// probe (bench/lib/probe.ts).
import { createRequire } from "node:module";

export interface StatementCounter {
  count(): number;
  /** The SQL of each execution, in order; empty unless `keepSql` (a long-running server would keep them all). */
  sql: string[];
  /** Puts the driver's methods back. */
  restore(): void;
}

export function countSqlStatements(options: { keepSql?: boolean } = {}): StatementCounter {
  const require = createRequire(import.meta.url);
  const copies = new Set<string>([require.resolve("better-sqlite3")]);
  try {
    copies.add(createRequire(require.resolve("@prisma/adapter-better-sqlite3")).resolve("better-sqlite3"));
  } catch {
    // the adapter shares the top-level copy
  }
  let count = 0;
  const sql: string[] = [];
  const restores: (() => void)[] = [];
  for (const file of copies) {
    const Database = require(file);
    const probe = new Database(":memory:");
    const prototype = Object.getPrototypeOf(probe.prepare("SELECT 1"));
    probe.close();
    for (const method of ["all", "get", "run", "iterate"]) {
      const original = prototype[method];
      prototype[method] = function (this: { source: string }, ...args: unknown[]) {
        count += 1;
        if (options.keepSql) sql.push(this.source);
        return original.apply(this, args);
      };
      restores.push(() => (prototype[method] = original));
    }
  }
  return { count: () => count, sql, restore: () => restores.forEach((r) => r()) };
}
