// A logical dump of every table, to prove that a refused request wrote nothing.
import Database from "better-sqlite3";

export function snapshotDatabase(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('run_owners') ORDER BY name").all() as { name: string }[];
    const dump: Record<string, unknown[]> = {};
    for (const { name } of tables) dump[name] = db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all();
    return JSON.stringify(dump, (_k, v) => (Buffer.isBuffer(v) ? v.toString("base64") : typeof v === "bigint" ? String(v) : v));
  } finally {
    db.close();
  }
}
