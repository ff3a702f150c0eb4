// The Apollo Client 4 setup docs/clients.md shows (Apollo Client), as the client specs run it.
// #region readme:apollo
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, type PossibleTypesMap } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { OperationTypeNode } from "graphql";
import { createClient } from "graphql-ws";
// Committed beside schema.graphql and regenerated with it (npm run schema:print).
import possibleTypes from "../../possibleTypes.json" with { type: "json" };

export function createApolloClient(
  url: string,
  options: { token?: string; webSocketImpl?: unknown; possibleTypes?: PossibleTypesMap } = {},
): ApolloClient {
  const authorization = options.token ? `Bearer ${options.token}` : undefined;
  const http = new HttpLink({ uri: `${url}/graphql`, headers: authorization ? { authorization } : {} });
  // Browsers have WebSocket; Node 20 needs one passed in (the ws package's).
  const ws = new GraphQLWsLink(
    createClient({
      url: url.replace(/^http/, "ws") + "/graphql",
      webSocketImpl: options.webSocketImpl,
      connectionParams: authorization ? { authorization } : undefined,
    }),
  );
  return new ApolloClient({
    link: ApolloLink.split((operation) => operation.operationType === OperationTypeNode.SUBSCRIPTION, ws, http),
    // Without possibleTypes the cache cannot tell that NotFoundError is an Error,
    // and `... on Error { code message }` inside a result union comes back empty.
    cache: new InMemoryCache({
      possibleTypes: options.possibleTypes ?? possibleTypes,
      // Run events have no id and each replaces the last: say so, or the cache
      // warns that it may lose data on every event.
      typePolicies: { Subscription: { fields: { runEvents: { merge: false }, conversationEvents: { merge: false } } } },
    }),
  });
}
// #endregion readme:apollo
