// A connection whose prepare() hands back the statement it already compiled for
// the same SQL text. LangGraph's SqliteSaver prepares its INSERTs and its list
// query anew on every call (about 30 µs each, ten times the insert itself).
// Safe for what it caches: run(), get() and all() finish before they return, so
// one statement is never in use twice at once.
import type Database from "better-sqlite3";

/** Distinct SQL texts kept; SqliteSaver's list() inlines its limit, so the texts are few but not fixed. */
const CAPACITY = 64;

export function withStatementCache(db: Database.Database, capacity = CAPACITY): Database.Database {
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string): Database.Statement => {
    let statement = statements.get(sql);
    if (statement) {
      // Most recently used last: the first key is the one to evict.
      statements.delete(sql);
    } else {
      statement = db.prepare(sql);
      if (statements.size >= capacity) statements.delete(statements.keys().next().value!);
    }
    statements.set(sql, statement);
    return statement;
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return prepare;
      const value = Reflect.get(target, property, target);
      // better-sqlite3's methods need the real connection as `this`.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
