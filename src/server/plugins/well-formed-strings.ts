// Variables are JSON, and JSON can carry strings that are not Unicode text (a
// lone surrogate such as "\ud800"). No such string can be stored as UTF-8 or
// shown to anyone, so the operation is refused before it runs, on every
// transport, with a clear error instead of failing deep inside a write. (Inside
// the document itself, graphql-js already rejects such escapes as syntax errors.)
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";

/** Nesting deeper than any input type of the schema; a bound for the walk, not a limit users meet. */
const MAX_DEPTH = 64;

function firstMalformedPath(value: unknown, path: string, depth = 0): string | null {
  if (typeof value === "string") return (value as string & { isWellFormed(): boolean }).isWellFormed() ? null : path;
  if (value === null || typeof value !== "object" || depth > MAX_DEPTH) return null;
  for (const [key, item] of Object.entries(value)) {
    const found = firstMalformedPath(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, depth + 1);
    if (found) return found;
  }
  return null;
}

export function malformedStringError(variables: unknown): GraphQLError | null {
  if (variables === null || typeof variables !== "object") return null;
  for (const [name, value] of Object.entries(variables)) {
    const path = firstMalformedPath(value, `$${name}`);
    if (path) {
      return new GraphQLError(`Variable ${path} is not valid Unicode text (it holds a lone surrogate).`, {
        extensions: { code: "BAD_USER_INPUT", http: { spec: true, status: 400 } },
      });
    }
  }
  return null;
}

export function useWellFormedStrings(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const error = malformedStringError(args.variableValues);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const error = malformedStringError(args.variableValues);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}
