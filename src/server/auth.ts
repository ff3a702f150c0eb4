// Who is calling, on every transport: HTTP's Authorization header, a graphql-ws
// connection_init payload ({"authorization": "Bearer ..."}), GraphQL over SSE,
// the REST routes. The authenticator turns a credential into a Principal
// (src/domain/principal.ts); the request keeps it for the context and routes.
import crypto from "node:crypto";
import type { IncomingMessage } from "node:http";
import { API_TOKEN_PRINCIPAL, LOCAL_PRINCIPAL, type Principal } from "../domain/principal.ts";

/** A missing, wrong, expired or revoked credential: HTTP 401, WebSocket close 4401. */
export class UnauthenticatedError extends Error {
  override name = "UnauthenticatedError";
  readonly code = "UNAUTHENTICATED" as const;
}

export interface Authenticator {
  /** False only with no authentication configured (the loopback default): a request without credentials is the local developer. */
  readonly required: boolean;
  /** The principal the Authorization value stands for; UnauthenticatedError when it stands for none. */
  authenticate(authorization: string | undefined): Promise<Principal>;
}

/** API_TOKEN alone: its holder is an admin; without it, no authentication (the local developer). Compared in constant time. */
export function createTokenAuthenticator(token: string | undefined): Authenticator {
  if (token === undefined) return { required: false, authenticate: async () => LOCAL_PRINCIPAL };
  const expected = crypto.createHash("sha256").update(`Bearer ${token}`).digest();
  return {
    required: true,
    async authenticate(authorization) {
      if (typeof authorization !== "string") throw new UnauthenticatedError("missing or wrong bearer token");
      const given = crypto.createHash("sha256").update(authorization).digest();
      if (!crypto.timingSafeEqual(given, expected)) throw new UnauthenticatedError("missing or wrong bearer token");
      return API_TOKEN_PRINCIPAL;
    },
  };
}

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
