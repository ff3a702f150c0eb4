// The urql setup docs/clients.md shows (urql), as the client specs run it.
// #region readme:urql
import { Client, fetchExchange, subscriptionExchange } from "@urql/core";
import { createClient } from "graphql-ws";

export function createUrqlClient(url: string, options: { token?: string; webSocketImpl?: unknown } = {}): Client {
  const authorization = options.token ? `Bearer ${options.token}` : undefined;
  // Browsers have WebSocket; Node 20 needs one passed in (the ws package's).
  const ws = createClient({
    url: url.replace(/^http/, "ws") + "/graphql",
    webSocketImpl: options.webSocketImpl,
    connectionParams: authorization ? { authorization } : undefined,
  });
  return new Client({
    url: `${url}/graphql`,
    fetchOptions: () => (authorization ? { headers: { authorization } } : {}),
    exchanges: [
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? "" }, sink) }),
        }),
      }),
    ],
  });
}
// #endregion readme:urql
