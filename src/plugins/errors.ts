// What a client learns from a failure: refusals and validation errors in full,
// unexpected errors as "Unexpected error." with the cause in the server's log,
// and (in production) no "Did you mean ...?" hints that let a stranger map the
// schema field by field. Envelop hooks, so HTTP, SSE and graphql-ws agree.
import { GraphQLError, type ExecutionResult, type GraphQLFormattedError } from "graphql";
import { handleStreamOrSingleExecutionResult, maskError, type Plugin, type YogaServerOptions } from "graphql-yoga";
import type { Logger } from "../logger.ts";
import { ShuttingDownError } from "../runs/errors.ts";

type MaskedErrorsOptions = Exclude<NonNullable<YogaServerOptions<object, object>["maskedErrors"]>, boolean>;

/** The message an unexpected error becomes. */
export const UNEXPECTED_ERROR_MESSAGE = "Unexpected error.";

/**
 * yoga's `maskedErrors`: errors that are not GraphQLErrors of our own making
 * (a database failure, a bug) reach the client as UNEXPECTED_ERROR_MESSAGE with
 * code INTERNAL_SERVER_ERROR, whatever NODE_ENV says; the original is logged.
 */
export function createErrorMasking(logger: Logger): MaskedErrorsOptions {
  return {
    errorMessage: UNEXPECTED_ERROR_MESSAGE,
    isDev: false,
    maskError(error, message) {
      const cause = error instanceof GraphQLError ? error.originalError : error;
      if (cause instanceof ShuttingDownError) {
        // Expected, and the client can act on it: said in full, with 503 over HTTP.
        return new GraphQLError(cause.message, {
          nodes: (error as GraphQLError).nodes,
          path: (error as GraphQLError).path,
          extensions: { code: cause.code, http: { status: 503 } },
        });
      }
      const masked = maskError(error, message, false);
      if (masked !== error) {
        const cause = error instanceof GraphQLError && error.originalError ? error.originalError : error;
        logger.error("unexpected error in an operation", {
          error: cause instanceof Error ? cause : new Error(String(cause)),
          path: error instanceof GraphQLError ? error.path : undefined,
        });
      }
      return masked;
    },
  };
}

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

/**
 * An error as graphql-ws sends it, without yoga's internal extensions (`http`,
 * its status hints, and `unexpected`, its mark on masked errors), which yoga
 * strips from HTTP responses only. For graphql-ws's onNext and onError hooks.
 */
export function formatForWebSocket(error: GraphQLError): GraphQLFormattedError {
  const json = error.toJSON();
  if (!json.extensions) return json;
  const { http: _http, unexpected: _unexpected, ...extensions } = json.extensions;
  const { extensions: _all, ...rest } = json;
  return Object.keys(extensions).length ? { ...rest, extensions } : rest;
}
