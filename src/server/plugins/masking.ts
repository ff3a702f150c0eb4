// What a client learns from a failure: refusals and validation errors in full,
// unexpected errors as "Unexpected error." with the cause in the server's log.
// yoga applies the masking to HTTP and SSE results; graphql-ws results pass
// through formatForWebSocket.
import { GraphQLError, type GraphQLFormattedError } from "graphql";
import { maskError, type YogaServerOptions } from "graphql-yoga";
import type { Logger } from "../../logger.ts";
import { ShuttingDownError } from "../../domain/errors.ts";
import { ClockSkewError } from "../../correlation/index.ts";

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
      if (cause instanceof ShuttingDownError || cause instanceof ClockSkewError) {
        // Expected, and the client can act on it (retry on another instance): said in full, with 503 over HTTP.
        return new GraphQLError(cause.message, {
          nodes: (error as GraphQLError).nodes,
          path: (error as GraphQLError).path,
          extensions: { code: cause instanceof ClockSkewError ? "CLOCK_SKEW" : cause.code, http: { status: 503 } },
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
