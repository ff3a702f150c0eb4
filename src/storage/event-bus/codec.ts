// Events and conversation changes as text, for a backend that carries them
// outside this process (the Redis bus: its streams and its pub/sub messages).
//
// JSON turns a Date into a string and cannot tell it from a string when read
// back, and events carry Dates at any depth (`at`, an interrupt's `createdAt`,
// whatever a graph put in a custom event). So the text is the value's plain
// JSON plus one more top-level key, DATES_KEY, listing the path of every Date;
// decoding turns exactly those back into Dates. Top-level keys are runledger's
// own (the data of a graph or tool is nested below them), so the key cannot
// meet a caller's, and nothing a caller wrote needs escaping. Text written
// before DATES_KEY existed has only the dates its readers knew: decoding
// revives those.
import type { ConversationChange, RunEvent } from "../../domain/events.ts";

const DATES_KEY = "$dates";

type Path = (string | number)[];

export function encodeEvent(event: RunEvent): string {
  return encode(event);
}

export function decodeEvent(json: string): RunEvent {
  const event = JSON.parse(json) as RunEvent & { [DATES_KEY]?: Path[] };
  if (reviveDates(event)) return event;
  event.at = new Date(event.at);
  if (event.type === "interrupt") event.interrupt.createdAt = new Date(event.interrupt.createdAt);
  return event;
}

export function encodeChange(change: ConversationChange): string {
  return encode(change);
}

export function decodeChange(json: string): ConversationChange {
  const change = JSON.parse(json) as ConversationChange & { [DATES_KEY]?: Path[] };
  if (reviveDates(change)) return change;
  change.at = new Date(change.at);
  if (change.kind === "deleted") {
    change.snapshot.createdAt = new Date(change.snapshot.createdAt);
    change.snapshot.updatedAt = new Date(change.snapshot.updatedAt);
    if (change.snapshot.expiresAt != null) change.snapshot.expiresAt = new Date(change.snapshot.expiresAt);
  }
  return change;
}

function encode(value: object): string {
  // Stringified first: it throws on what JSON cannot hold (a cycle), before the walk would loop on it.
  const json = JSON.stringify(value);
  const paths: Path[] = [];
  findDates(value, [], paths);
  // The value is a non-empty object, so its JSON ends with "}" after at least
  // one key. The list goes last: deleting the last key JSON.parse added keeps
  // the decoded object in V8's fast mode.
  return `${json.slice(0, -1)},"${DATES_KEY}":${JSON.stringify(paths)}}`;
}

/** Adds the path of every Date JSON.stringify would write (as a string) to `out`. */
function findDates(value: unknown, path: Path, out: Path[]): void {
  if (typeof value !== "object" || value === null) return;
  if (value instanceof Date) {
    // An invalid Date is written as null: nothing to revive.
    if (!Number.isNaN(value.getTime())) out.push([...path]);
    return;
  }
  // What has its own toJSON is written as toJSON makes it, not walked.
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      findDates(value[i], path, out);
      path.pop();
    }
    return;
  }
  for (const key of Object.keys(value)) {
    path.push(key);
    findDates((value as Record<string, unknown>)[key], path, out);
    path.pop();
  }
}

/** Turns the listed paths back into Dates and drops the list; false when the text has none (written before it existed). */
function reviveDates(value: { [DATES_KEY]?: Path[] }): boolean {
  const paths = value[DATES_KEY];
  if (!Array.isArray(paths)) return false;
  delete value[DATES_KEY];
  for (const path of paths) {
    let holder = value as Record<string | number, unknown>;
    for (let i = 0; i < path.length - 1; i++) holder = holder[path[i]!] as Record<string | number, unknown>;
    const last = path[path.length - 1]!;
    holder[last] = new Date(holder[last] as string);
  }
  return true;
}
