// Limits on the GraphQL document itself: length, tokens, depth, aliases,
// directives and estimated cost. They hook envelop's parse and validate, which
// run for HTTP, SSE and graphql-ws alike (src/server/ws.ts runs WebSocket
// operations through yoga.getEnveloped), so one client cannot dodge a limit by
// changing transport.
import type { ValidationContext } from "graphql";
import type { Plugin } from "graphql-yoga";
import { maxTokensPlugin } from "@escape.tech/graphql-armor-max-tokens";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDirectivesRule } from "@escape.tech/graphql-armor-max-directives";
import { costLimitRule } from "@escape.tech/graphql-armor-cost-limit";
import type { Limits } from "../../config.ts";
import { limitError } from "./limit-error.ts";

export type OperationLimits = Pick<Limits, "queryChars" | "queryTokens" | "queryDepth" | "queryAliases" | "queryDirectives" | "queryCost">;

/** graphql-armor prefixes every message with "Syntax Error: " even for validation rules; ours say what they are. */
function message(armorMessage: string): string {
  return armorMessage.replace(/^Syntax Error: /, "");
}

/**
 * An armor validation rule that reports its refusal as a validation error
 * (instead of throwing out of validate()), so it reaches the client like any
 * other validation failure, with our code and the limit's variable.
 */
function reporting(limit: string, max: number) {
  return {
    exposeLimits: true,
    propagateOnRejection: false,
    onReject: [(context: ValidationContext | null, error: Error) => context?.reportError(limitError(message(error.message), limit, max))],
  };
}

export function useOperationLimits(limits: OperationLimits): Plugin[] {
  return [
    {
      // Before the parser (and before yoga's document cache keeps the text).
      onParse({ params }) {
        const length = typeof params.source === "string" ? params.source.length : params.source.body.length;
        if (length > limits.queryChars) {
          throw limitError(`Document of ${length} characters is longer than ${limits.queryChars}.`, "MAX_QUERY_CHARS", limits.queryChars);
        }
      },
    },
    maxTokensPlugin({
      n: limits.queryTokens,
      exposeLimits: true,
      // Thrown from inside the lexer, so a huge document stops at the first token past the limit.
      onReject: [
        (_context: unknown, error: Error) => {
          throw limitError(message(error.message), "MAX_QUERY_TOKENS", limits.queryTokens);
        },
      ],
    }) as Plugin,
    {
      onValidate({ addValidationRule }) {
        addValidationRule(maxDepthRule({ n: limits.queryDepth, ...reporting("MAX_QUERY_DEPTH", limits.queryDepth) }));
        addValidationRule(maxAliasesRule({ n: limits.queryAliases, ...reporting("MAX_QUERY_ALIASES", limits.queryAliases) }));
        addValidationRule(maxDirectivesRule({ n: limits.queryDirectives, ...reporting("MAX_QUERY_DIRECTIVES", limits.queryDirectives) }));
        addValidationRule(costLimitRule({ maxCost: limits.queryCost, ...reporting("MAX_QUERY_COST", limits.queryCost) }));
      },
    },
  ];
}
