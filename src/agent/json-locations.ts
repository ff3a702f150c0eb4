// Strict JSON for hand-written config files, with positions. JSON.parse is right
// about what is valid but not helpful about where, and it silently keeps the last
// of two equal keys (a copied agent block whose name was not changed would
// replace the first). jsonc-parser (comments and trailing commas disallowed)
// finds the errors and where each value starts; this file says the first error
// in words a person editing the file reads, refuses duplicate keys, and turns
// offsets into line and column.
import { findNodeAtLocation, getLocation, parseTree, ParseErrorCode, type Node, type ParseError } from "jsonc-parser";

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
    /** For a duplicate key, that key's path; else the root's. */
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

export function parseJsonWithLocations(source: string): LocatedJson {
  // A leading byte order mark is what some editors write; JSON.parse rejects it, people do not see it.
  // A space in its place keeps every offset (and column) where it was.
  const text = source.charCodeAt(0) === 0xfeff ? ` ${source.slice(1)}` : source;
  const locationOf = lineColumn(text);
  const fail = (problem: string, offset: number, path: JsonPath = [], kind: "syntax" | "duplicate" = "syntax"): never => {
    throw new JsonSyntaxError(problem, locationOf(offset), path, kind);
  };

  if (text.trim() === "") fail("the file is empty", text.length);
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  if (errors.length > 0 || !tree) {
    const { problem, offset } = describeError(text, tree, errors[0]!);
    fail(problem, offset);
  }
  const duplicate = firstDuplicateKey(tree!, []);
  if (duplicate) fail(`the key "${duplicate.key}" appears twice`, duplicate.offset, duplicate.path, "duplicate");

  return {
    // Valid, duplicate-free JSON: JSON.parse reads it as jsonc-parser does, and keeps a "__proto__" key a plain key.
    value: JSON.parse(text) as unknown,
    locate(path) {
      const node = findNodeAtLocation(tree!, [...path]);
      return node === undefined ? undefined : locationOf(node.offset);
    },
  };
}

/** Offset → 1-based line and column. */
function lineColumn(text: string): (offset: number) => JsonLocation {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") lineStarts.push(i + 1);
  return (offset) => {
    let line = lineStarts.length - 1;
    while (lineStarts[line]! > offset) line -= 1;
    return { line: line + 1, column: offset - lineStarts[line]! + 1 };
  };
}

/** The first duplicate key in document order, at its second occurrence. */
function firstDuplicateKey(node: Node, path: JsonPath): { key: string; offset: number; path: JsonPath } | undefined {
  const seen = new Set<string>();
  for (const [index, child] of (node.children ?? []).entries()) {
    if (node.type === "object") {
      const [keyNode, valueNode] = child.children ?? [];
      const key = String(keyNode?.value);
      if (seen.has(key)) return { key, offset: keyNode!.offset, path: [...path, key] };
      seen.add(key);
      const inner = valueNode && firstDuplicateKey(valueNode, [...path, key]);
      if (inner) return inner;
    } else if (node.type === "array") {
      const inner = firstDuplicateKey(child, [...path, index]);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** jsonc-parser's first error in our words, at the offset a person should look at. */
function describeError(text: string, tree: Node | undefined, error: ParseError): { problem: string; offset: number } {
  const { offset } = error;
  const found = describeAt(text, offset);
  const end = tree ? tree.offset + tree.length : 0;
  switch (error.error) {
    case ParseErrorCode.EndOfFileExpected:
      return { problem: `unexpected ${found} after the end of the JSON value`, offset };
    case ParseErrorCode.PropertyNameExpected:
    case ParseErrorCode.ValueExpected:
      if ((text[offset] === "}" || text[offset] === "]") && text.slice(0, offset).trimEnd().endsWith(",")) {
        return { problem: `trailing comma before ${text[offset]}`, offset };
      }
      return error.error === ParseErrorCode.PropertyNameExpected || getLocation(text, offset).isAtPropertyKey
        ? { problem: `expected a key in double quotes, found ${found}`, offset }
        : { problem: `expected a value, found ${found}`, offset };
    case ParseErrorCode.InvalidSymbol:
      if (tree && offset >= end) return { problem: `unexpected ${found} after the end of the JSON value`, offset };
      if (getLocation(text, offset).isAtPropertyKey) return { problem: `expected a key in double quotes, found ${found}`, offset };
      return { problem: text[offset] === "'" ? "strings must use double quotes" : `expected a value, found ${found}`, offset };
    case ParseErrorCode.CommaExpected:
    case ParseErrorCode.CloseBraceExpected:
    case ParseErrorCode.CloseBracketExpected: {
      const container = tree && innermostContainer(tree, offset, offset >= text.length);
      // Nothing in it yet: what is missing is its first item.
      if (container?.children?.length === 0)
        return { problem: container.type === "array" ? `expected a value, found ${found}` : `expected a key in double quotes, found ${found}`, offset };
      if (container?.type === "array") return { problem: `expected "," or "]" after an array item, found ${found}`, offset };
      const key = container && lastKeyBefore(container, offset);
      return { problem: `expected "," or "}" after ${key === undefined ? "a value" : `the value of "${key}"`}, found ${found}`, offset };
    }
    case ParseErrorCode.ColonExpected: {
      const container = tree && innermostContainer(tree, offset, offset >= text.length);
      const key = container && lastKeyBefore(container, offset, true);
      return { problem: `expected ":" after ${key === undefined ? "a key" : `key "${key}"`}, found ${found}`, offset };
    }
    case ParseErrorCode.UnexpectedEndOfString: {
      const lineBreak = text.indexOf("\n", offset);
      return lineBreak !== -1 && lineBreak < offset + error.length + 1
        ? { problem: "unterminated string (a line break inside a string must be written \\n)", offset: lineBreak }
        : { problem: "unterminated string", offset };
    }
    case ParseErrorCode.InvalidEscapeCharacter:
    case ParseErrorCode.InvalidUnicode: {
      const string = text.slice(offset, offset + error.length);
      const bad = /\\(?!["\\/bfnrt]|u[0-9a-fA-F]{4})(.?)/.exec(string);
      const at = offset + (bad?.index ?? 0);
      if (bad?.[1] === "u" || error.error === ParseErrorCode.InvalidUnicode) return { problem: "invalid \\u escape in a string", offset: at };
      return { problem: `invalid escape ${bad?.[1] ? `"\\${bad[1]}"` : "at end of file"} in a string`, offset: at };
    }
    case ParseErrorCode.InvalidCharacter: {
      const control = /[\x00-\x1f]/.exec(text.slice(offset, offset + error.length));
      const at = offset + (control?.index ?? 0);
      return { problem: `${describeAt(text, at)} inside a string`, offset: at };
    }
    case ParseErrorCode.InvalidCommentToken:
    case ParseErrorCode.UnexpectedEndOfComment:
      return { problem: "comments are not allowed in JSON", offset };
    default:
      return { problem: `invalid number ${text.slice(offset, offset + error.length)}`, offset };
  }
}

function describeAt(text: string, offset: number): string {
  if (offset >= text.length) return "end of file";
  const ch = text[offset]!;
  return /[\x00-\x1f]/.test(ch) ? `control character U+${ch.charCodeAt(0).toString(16).padStart(4, "0")}` : `"${ch}"`;
}

/** The innermost object or array that `offset` lies in (at the end of the file: that is still open there). */
function innermostContainer(root: Node, offset: number, atEnd: boolean): Node | undefined {
  let container: Node | undefined;
  let node: Node | undefined = root;
  while (node) {
    if (node.type === "object" || node.type === "array") container = node;
    node = node.children?.find(
      (child) =>
        child.offset <= offset && (atEnd ? offset <= child.offset + child.length : offset < child.offset + child.length) && child.children !== undefined,
    );
  }
  return container;
}

/** The key of the last property of `object` that ends before `offset` (or, for a colon, starts before it). */
function lastKeyBefore(object: Node, offset: number, startsBefore = false): string | undefined {
  const before = (object.children ?? []).filter((p) => (startsBefore ? p.offset < offset : p.offset + p.length <= offset));
  const key = before.at(-1)?.children?.[0]?.value as unknown;
  return typeof key === "string" ? key : undefined;
}
