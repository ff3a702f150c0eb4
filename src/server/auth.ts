// Who is calling, on every transport: HTTP's Authorization header, a graphql-ws
// connection_init payload ({"authorization": "Bearer ..."}), GraphQL over SSE,
// the REST routes. The authenticator (identity/authenticate.ts) turns a
// credential into a Principal (src/domain/principal.ts); the request keeps it for
// the context and the routes.
import type { IncomingMessage } from "node:http";
import type { Principal } from "../domain/principal.ts";
import { UnauthenticatedError } from "../domain/errors.ts";

export { UnauthenticatedError };

export type { Authenticator } from "./identity/authenticate.ts";

/** A principal that sees nothing: what an operation gets on a path that authenticates no one (GraphiQL's page, say). */
export const NOBODY: Principal = Object.freeze({ id: "", role: "user", source: "local", expiresAt: null, claims: Object.freeze({}) }) as Principal;

const principals = new WeakMap<IncomingMessage, Principal>();

/** Records who sent the request (the HTTP request, or a WebSocket's upgrade request). */
export function setPrincipal(req: IncomingMessage, principal: Principal): void {
  principals.set(req, principal);
}

/** Who sent the request; NOBODY when it was not authenticated. */
export function principalOf(req: IncomingMessage | undefined): Principal {
  return (req && principals.get(req)) ?? NOBODY;
}
