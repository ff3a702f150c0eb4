// The words of the config file's problems: paths as `agents.support.tools[1]`,
// zod's issues said the way a person editing the file reads them, and the key a
// misspelt one was probably meant to be.
import { distance } from "fastest-levenshtein";
import { z } from "zod";
import type { JsonPath } from "./json-locations.ts";

/** agents.support.mcpServers.files.command, agents.support.tools[1], agents["my agent"]. */
export function formatPath(at: JsonPath): string {
  let out = "";
  for (const part of at) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(part)) out += out === "" ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

/**
 * A zod issue (other than an unknown key) as one phrase; `kinds` are the values "type" takes.
 * Not z.prettifyError: it writes zod's own words on lines of their own ("Invalid input: expected
 * boolean, received string"), and the specs hold these to one line naming the value found.
 */
export function zodProblem(issue: z.core.$ZodIssue, raw: unknown, kinds: readonly string[]): string {
  const value = valueAt(raw, issue.path);
  switch (issue.code) {
    case "invalid_union": {
      const options = (issue as { options?: unknown[] }).options ?? kinds;
      return `expected ${options.map((o) => JSON.stringify(o)).join(" or ")}, ${value === undefined ? "but it is missing" : `got ${describe(value)}`}`;
    }
    case "invalid_type":
      return value === undefined ? "is required" : `expected ${article(issue.expected)}, got ${describe(value)}`;
    case "invalid_value":
      return `expected ${issue.values.map((v) => JSON.stringify(v)).join(" or ")}, got ${describe(value)}`;
    case "too_small":
      return `must be at least ${String(issue.minimum)}, got ${describe(value)}`;
    case "too_big":
      return `must be at most ${String(issue.maximum)}, got ${describe(value)}`;
    default:
      return issue.message;
  }
}

/** An unknown key in the object at `at`: the key it is probably a typo of, and the keys that object takes. */
export function unknownKeyProblem(key: string, schema: z.ZodType, at: JsonPath, raw: unknown): string {
  const known = Object.keys(objectSchemaAt(schema, at, raw)?.shape ?? {});
  const suggestion = closest(key, known);
  return `unknown key${suggestion ? ` (did you mean "${suggestion}"?)` : ""}; known keys: ${known.join(", ")}`;
}

/** The object schema the value at `at` is checked against (a union's option by the value's "type", else its first). */
function objectSchemaAt(schema: z.ZodType, at: JsonPath, raw: unknown): z.ZodObject | undefined {
  let current: z.ZodType = schema;
  let value = raw;
  for (let i = 0; ; i++) {
    if (current instanceof z.ZodOptional) current = current.unwrap() as z.ZodType;
    if (current instanceof z.ZodDiscriminatedUnion) {
      const options = current.options as z.ZodObject[];
      const type = (value as { type?: unknown } | null | undefined)?.type;
      current = options.find((option) => (option.shape.type as z.ZodLiteral).values.has(type as never)) ?? options[0]!;
    }
    if (i === at.length) return current instanceof z.ZodObject ? current : undefined;
    const part = at[i]!;
    value = valueAt(value, [part]);
    if (current instanceof z.ZodObject) current = current.shape[part] as z.ZodType;
    else if (current instanceof z.ZodRecord) current = current.valueType as z.ZodType;
    else return undefined;
    if (current === undefined) return undefined;
  }
}

function valueAt(root: unknown, at: readonly PropertyKey[]): unknown {
  let value = root;
  for (const part of at) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[part];
  }
  return value;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
  if (typeof value === "number") return `${Number.isInteger(value) ? "the number" : "the fraction"} ${value}`;
  return String(value);
}

function article(expected: string): string {
  const names: Record<string, string> = {
    string: "a string",
    number: "a number",
    int: "a whole number",
    boolean: "true or false",
    object: "an object",
    record: "an object",
    array: "an array",
  };
  return names[expected] ?? expected;
}

/** The known key nearest to a misspelt one, when it is near enough to be a typo. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(best.length / 3)) ? best : undefined;
}
