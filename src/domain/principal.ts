// Who is calling: the principal every read and write is scoped to. It comes from
// a verified JWT, an API key, API_TOKEN, or, with no authentication configured on
// a loopback address, the one local developer.

export type PrincipalRole = "user" | "admin";

export interface Principal {
  /** The id conversations record as their owner: a JWT's user claim, an API key's user, "admin" for API_TOKEN, "local" with no auth. */
  id: string;
  /** Admins see and act on every conversation; users only on their own. */
  role: PrincipalRole;
  /** How the caller proved it. */
  source: "jwt" | "api-key" | "api-token" | "local" | "queue";
  /** When the credential stops being valid (a JWT's exp); null when it does not expire. A WebSocket is closed with 4401 then. */
  expiresAt: Date | null;
  /** The JWT's claims the configuration passes on to agents (AUTH_AGENT_CLAIMS); empty for other sources. */
  claims: Record<string, unknown>;
}

/** The principal of a server with no authentication configured, on loopback: one local developer, who sees everything. */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({
  id: "local",
  role: "admin",
  source: "local",
  expiresAt: null,
  claims: Object.freeze({}),
}) as Principal;

/** The principal API_TOKEN stands for: an admin (as the token has always opened everything). */
export const API_TOKEN_PRINCIPAL: Principal = Object.freeze({
  id: "admin",
  role: "admin",
  source: "api-token",
  expiresAt: null,
  claims: Object.freeze({}),
}) as Principal;

// A JWT as the caller sent it, kept beside its principal in memory only, for the
// MCP servers configured to receive it ("forwardToken"): never a field, so a
// principal that is logged or serialized never carries it.
const bearerTokens = new WeakMap<Principal, string>();

/** Records the JWT a principal was verified from (see bearerTokens). */
export function withBearerToken<P extends Principal>(principal: P, token: string): P {
  bearerTokens.set(principal, token);
  return principal;
}

/** The JWT the principal was verified from, when it came from one. */
export function bearerTokenOf(principal: Principal): string | undefined {
  return bearerTokens.get(principal);
}

/**
 * Whom a queued run works for on an instance that claimed it from the queue
 * without having taken its request: the starter's id and role from the run's
 * row (claims and tokens are never stored, so there are none).
 */
export function queuedRunPrincipal(id: string, role: PrincipalRole): Principal {
  return { id, role, source: "queue", expiresAt: null, claims: {} };
}

export function isAdmin(principal: Principal): boolean {
  return principal.role === "admin";
}

/**
 * Whether the principal may see and act on a conversation: an admin, every one;
 * a user, their own. Rows from before owners were recorded (owner null) are
 * admins' only. Everything else (its runs, checkpoints, events) follows the
 * conversation; one that cannot be seen answers as one that does not exist.
 */
export function canSee(principal: Principal, conversation: { owner: string | null }): boolean {
  return principal.role === "admin" || (conversation.owner !== null && conversation.owner === principal.id);
}
