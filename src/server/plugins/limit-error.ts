// The one error every operation limit answers with, on every transport.
import { GraphQLError, type ASTNode } from "graphql";

/** `extensions.code` of an operation refused by a limit. */
export const LIMIT_EXCEEDED = "LIMIT_EXCEEDED";

/**
 * A refused operation: `extensions.code` is LIMIT_EXCEEDED and `extensions.limit`
 * names the environment variable that sets the limit, so a client (or its
 * operator) knows what to change. Over HTTP it answers like a validation failure
 * (GraphQL over HTTP): 400 with application/graphql-response+json, 200 with
 * application/json; yoga strips the `http` extension before sending.
 */
export function limitError(message: string, limit: string, max: number, nodes?: readonly ASTNode[]): GraphQLError {
  return new GraphQLError(message, {
    nodes,
    extensions: { code: LIMIT_EXCEEDED, limit, max, http: { spec: true, status: 400 } },
  });
}
