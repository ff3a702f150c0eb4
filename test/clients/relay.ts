// The Relay environment docs/clients.md shows (Relay), as the client specs run it.
// #region readme:relay
import { Environment, Network, Observable, RecordSource, Store, type FetchFunction, type GraphQLResponse, type SubscribeFunction } from "relay-runtime";
import { createClient } from "graphql-ws";

export function createRelayEnvironment(url: string, options: { token?: string; webSocketImpl?: unknown } = {}): Environment {
  const authorization = options.token ? `Bearer ${options.token}` : undefined;
  // Queries and mutations: one POST per operation (runledger takes no batches).
  const fetchFn: FetchFunction = async (request, variables) => {
    const response = await fetch(`${url}/graphql`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/graphql-response+json",
        ...(authorization ? { authorization } : {}),
      },
      body: JSON.stringify({ query: request.text, variables }),
    });
    return (await response.json()) as GraphQLResponse;
  };
  // Subscriptions over graphql-ws on the same path. Browsers have WebSocket;
  // Node 20 needs one passed in (the ws package's).
  const ws = createClient({
    url: url.replace(/^http/, "ws") + "/graphql",
    webSocketImpl: options.webSocketImpl,
    connectionParams: authorization ? { authorization } : undefined,
  });
  const subscribeFn: SubscribeFunction = (request, variables) =>
    Observable.create<GraphQLResponse>((sink) =>
      ws.subscribe(
        { query: request.text!, variables },
        { next: (result) => sink.next(result as GraphQLResponse), error: (error) => sink.error(error as Error), complete: () => sink.complete() },
      ),
    );
  return new Environment({ network: Network.create(fetchFn, subscribeFn), store: new Store(new RecordSource()) });
}
// #endregion readme:relay
