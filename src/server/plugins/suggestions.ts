// In production, no "Did you mean ...?" hints in error messages: they let a
// stranger map the schema field by field. Envelop hooks, so HTTP, SSE and
// graphql-ws agree; validation errors and variable coercion errors (which come
// from execution) both lose them. The one mechanism for this: graphql-armor's
// block-field-suggestions covers validation only.
import { GraphQLError, type ExecutionResult } from "graphql";
import { handleStreamOrSingleExecutionResult, type Plugin } from "graphql-yoga";

const SUGGESTION = /\s*Did you mean [^?]*\?/g;

function withoutSuggestion<E extends Error>(error: E): E | GraphQLError {
  if (!(error instanceof GraphQLError) || !error.message.includes("Did you mean")) return error;
  return new GraphQLError(error.message.replace(SUGGESTION, ""), {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}

function resultWithoutSuggestions({ result, setResult }: { result: ExecutionResult; setResult: (r: ExecutionResult) => void }) {
  if (result.errors?.length) setResult({ ...result, errors: result.errors.map((e) => withoutSuggestion(e) as GraphQLError) });
}

/** Drops "Did you mean ...?" from validation errors and from variable coercion errors (which come from execution). */
export function useHiddenSuggestions(): Plugin {
  return {
    onValidate() {
      return ({ valid, result, setResult }) => {
        if (!valid) setResult(result.map(withoutSuggestion));
      };
    },
    onExecute() {
      return { onExecuteDone: (payload) => handleStreamOrSingleExecutionResult(payload, resultWithoutSuggestions) };
    },
    onSubscribe() {
      return { onSubscribeResult: (payload) => handleStreamOrSingleExecutionResult(payload, resultWithoutSuggestions) };
    },
  };
}
