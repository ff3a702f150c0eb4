// A strict JSON reader for hand-written config files. JSON.parse is right about
// what is valid but not helpful about where: V8 names a position for some errors
// and none for others, and it silently keeps the last of two equal keys (a
// copied agent block whose name was not changed would replace the first). This
// reader parses standard JSON (RFC 8259) only, reports line and column for every
// error, refuses duplicate keys, and remembers where each value starts so later
// validation errors can point into the file too.

export type JsonPath = readonly (string | number)[];

export interface JsonLocation {
  line: number;
  column: number;
}

export class JsonSyntaxError extends Error {
  override name = "JsonSyntaxError";
  constructor(
    readonly problem: string,
    readonly location: JsonLocation,
    /** The value being read when the error was found; for a duplicate key, that key's path. */
    readonly path: JsonPath,
    /** "duplicate": valid JSON syntax with a key given twice (JSON.parse would keep the last silently). */
    readonly kind: "syntax" | "duplicate" = "syntax",
  ) {
    super(`${problem} (line ${location.line}, column ${location.column})`);
  }
}

export interface LocatedJson {
  value: unknown;
  /** Where the value at `path` starts, or undefined when there is no such value. */
  locate(path: JsonPath): JsonLocation | undefined;
}

export function parseJsonWithLocations(text: string): LocatedJson {
  const starts = new Map<string, number>();
  let pos = 0;
  // A leading byte order mark is what some editors write; JSON.parse rejects it, people do not see it.
  if (text.charCodeAt(0) === 0xfeff) pos = 1;

  const locationOf = (offset: number): JsonLocation => {
    let line = 1;
    let lineStart = 0;
    for (let i = 0; i < offset && i < text.length; i++) {
      if (text[i] === "\n") {
        line += 1;
        lineStart = i + 1;
      }
    }
    return { line, column: offset - lineStart + 1 };
  };
  const fail = (problem: string, offset: number, path: JsonPath, kind: "syntax" | "duplicate" = "syntax"): never => {
    throw new JsonSyntaxError(problem, locationOf(offset), path, kind);
  };
  const describeAt = (offset: number): string => {
    if (offset >= text.length) return "end of file";
    const ch = text[offset]!;
    return /[\x00-\x1f]/.test(ch) ? `control character U+${ch.charCodeAt(0).toString(16).padStart(4, "0")}` : `"${ch}"`;
  };
  const skipWhitespace = () => {
    while (pos < text.length && (text[pos] === " " || text[pos] === "\t" || text[pos] === "\n" || text[pos] === "\r")) pos += 1;
  };

  const readString = (path: JsonPath): string => {
    const start = pos;
    pos += 1; // opening quote
    while (pos < text.length) {
      const ch = text[pos]!;
      if (ch === '"') {
        pos += 1;
        return JSON.parse(text.slice(start, pos)) as string;
      }
      if (ch === "\\") {
        const next = text[pos + 1];
        if (next === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(pos + 2, pos + 6))) fail("invalid \\u escape in a string", pos, path);
          pos += 6;
        } else if (next !== undefined && '"\\/bfnrt'.includes(next)) {
          pos += 2;
        } else {
          fail(`invalid escape ${next === undefined ? "at end of file" : `"\\${next}"`} in a string`, pos, path);
        }
        continue;
      }
      if (ch < " ") fail(ch === "\n" ? "unterminated string (a line break inside a string must be written \\n)" : `${describeAt(pos)} inside a string`, pos, path);
      pos += 1;
    }
    return fail("unterminated string", start, path);
  };

  const readValue = (path: JsonPath): unknown => {
    skipWhitespace();
    starts.set(pathKey(path), pos);
    const ch = text[pos];
    if (ch === "{") return readObject(path);
    if (ch === "[") return readArray(path);
    if (ch === '"') return readString(path);
    const number = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(pos, pos + 400));
    if (number && (ch === "-" || (ch !== undefined && ch >= "0" && ch <= "9"))) {
      pos += number[0].length;
      return Number(number[0]);
    }
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return value;
      }
    }
    if (ch === "'") return fail("strings must use double quotes", pos, path);
    return fail(`expected a value, found ${describeAt(pos)}`, pos, path);
  };

  const readObject = (path: JsonPath): Record<string, unknown> => {
    const result: Record<string, unknown> = {};
    const seen = new Set<string>();
    pos += 1;
    skipWhitespace();
    if (text[pos] === "}") {
      pos += 1;
      return result;
    }
    for (;;) {
      skipWhitespace();
      if (text[pos] !== '"') {
        fail(text[pos] === "}" ? "trailing comma before }" : `expected a key in double quotes, found ${describeAt(pos)}`, pos, path);
      }
      const keyAt = pos;
      const key = readString(path);
      if (seen.has(key)) fail(`the key "${key}" appears twice`, keyAt, [...path, key], "duplicate");
      seen.add(key);
      skipWhitespace();
      if (text[pos] !== ":") fail(`expected ":" after key "${key}", found ${describeAt(pos)}`, pos, path);
      pos += 1;
      // Defined, not assigned: a key "__proto__" must stay a plain key, as JSON.parse keeps it.
      Object.defineProperty(result, key, { value: readValue([...path, key]), enumerable: true, writable: true, configurable: true });
      skipWhitespace();
      if (text[pos] === ",") {
        pos += 1;
        continue;
      }
      if (text[pos] === "}") {
        pos += 1;
        return result;
      }
      fail(`expected "," or "}" after the value of "${key}", found ${describeAt(pos)}`, pos, path);
    }
  };

  const readArray = (path: JsonPath): unknown[] => {
    const result: unknown[] = [];
    pos += 1;
    skipWhitespace();
    if (text[pos] === "]") {
      pos += 1;
      return result;
    }
    for (;;) {
      skipWhitespace();
      if (text[pos] === "]") fail("trailing comma before ]", pos, path);
      result.push(readValue([...path, result.length]));
      skipWhitespace();
      if (text[pos] === ",") {
        pos += 1;
        continue;
      }
      if (text[pos] === "]") {
        pos += 1;
        return result;
      }
      fail(`expected "," or "]" after an array item, found ${describeAt(pos)}`, pos, path);
    }
  };

  skipWhitespace();
  if (pos >= text.length) fail("the file is empty", pos, []);
  const value = readValue([]);
  skipWhitespace();
  if (pos < text.length) fail(`unexpected ${describeAt(pos)} after the end of the JSON value`, pos, []);

  return {
    value,
    locate(path) {
      const offset = starts.get(pathKey(path));
      return offset === undefined ? undefined : locationOf(offset);
    },
  };
}

function pathKey(path: JsonPath): string {
  return JSON.stringify(path);
}
