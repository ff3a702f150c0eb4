// Trusted operations (TRUSTED_OPERATIONS_FILE): a caller sends an operation's id,
// and only the operations of the manifest run. graphql-yoga's persisted operations
// plugin does it over HTTP and SSE, in yoga's onParams hook. graphql-ws operations
// never pass through that hook (ws.ts parses and runs them through yoga.getEnveloped),
// so ws.ts runs the same hooks on each operation's payload: one rule on every transport.
//
// Admins may still send any document: API_TOKEN holders, and the local developer
// when no authentication is configured, so GraphiQL keeps working for them.
import type { IncomingMessage } from "node:http";
import { createGraphQLError, type GraphQLParams, type OnParamsEventPayload, type Plugin } from "graphql-yoga";
import { defaultExtractPersistedOperationId, usePersistedOperations } from "@graphql-yoga/plugin-persisted-operations";
import { isAdmin, type Principal } from "../../domain/principal.ts";
import { principalOf } from "../auth.ts";
import type { TrustedManifest } from "../trusted-manifest.ts";

/** Whether the principal may send a document rather than a trusted operation's id: admins only. */
export function mayRunArbitrary(principal: Principal): boolean {
  return isAdmin(principal);
}

// The plugin's reading of the extension, which looks at nothing but the params.
const fromExtension = defaultExtractPersistedOperationId as (params: GraphQLParams) => string | null;

/**
 * The operation id, as each kind of client sends it: Apollo's and urql's persisted
 * query extension (`extensions.persistedQuery.sha256Hash`), `documentId` (the GraphQL
 * over HTTP draft's persisted documents), relay's `doc_id`.
 */
export function trustedOperationId(params: GraphQLParams & { documentId?: unknown; doc_id?: unknown }): string | null {
  const id = fromExtension(params) ?? params.documentId ?? params.doc_id;
  return typeof id === "string" ? id : null;
}

// The plugin's own codes, with messages that say what to do. Over HTTP they answer
// as a validation error does: 400 with application/graphql-response+json, 200 with application/json.
const http = { spec: true, status: 400 };
const customErrors = {
  notFound: {
    message: "This operation is not one of the server's trusted operations (TRUSTED_OPERATIONS_FILE).",
    extensions: { code: "PERSISTED_QUERY_NOT_IN_LIST", http },
  },
  keyNotFound: {
    message: "This server runs only trusted operations: send the operation's id (extensions.persistedQuery.sha256Hash, documentId or doc_id).",
    extensions: { code: "PERSISTED_QUERY_ID_REQUIRED", http },
  },
  persistedQueryOnly: {
    message: "This server runs only trusted operations: send the operation's id instead of its document.",
    extensions: { code: "CANNOT_SEND_PQ_ID_AND_BODY", http },
  },
};

export interface TrustedOperations {
  /** For yoga: HTTP and SSE. */
  plugins: Plugin[];
  /** For graphql-ws: the payload with the trusted operation's document in place of its id; throws the same GraphQLError as over HTTP. */
  resolve(params: GraphQLParams, req: IncomingMessage): Promise<GraphQLParams>;
}

export function useTrustedOperations(manifest: TrustedManifest): TrustedOperations {
  // The plugin decides from the Fetch Request alone, which does not say who sent it;
  // the principal is on the node request in the server context. So this hook refuses
  // a non-admin's document first, and the plugin lets through what is left.
  const principalRule: Plugin = {
    onParams({ params, context }) {
      if (params.query && !mayRunArbitrary(principalOf((context as { req?: IncomingMessage }).req))) {
        throw createGraphQLError(customErrors.persistedQueryOnly.message, { extensions: customErrors.persistedQueryOnly.extensions });
      }
    },
  };
  const persisted = usePersistedOperations({
    allowArbitraryOperations: true,
    extractPersistedOperationId: trustedOperationId,
    getPersistedOperation: (id) => manifest.get(id) ?? null,
    customErrors,
  });
  const plugins = [principalRule, persisted] as Plugin[];
  return {
    plugins,
    async resolve(params, req) {
      let resolved = params;
      // These hooks read only params and context and call setParams: nothing else of yoga's request exists here.
      const payload = { params, context: { req }, setParams: (next: GraphQLParams) => (resolved = next) } as unknown as OnParamsEventPayload<object>;
      for (const plugin of plugins) {
        await plugin.onParams?.({ ...payload, params: resolved });
      }
      return resolved;
    },
  };
}
