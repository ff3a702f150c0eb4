// Whom a run works for, as its graph and its tools see it. The caller's JWT,
// when there is one, stays beside the object in memory (for MCP servers set to
// forward it), never in the object: configurable values can reach logs and
// LangSmith, and a token must reach neither.
import { bearerTokenOf, type Principal } from "../domain/principal.ts";

/** The principal a run works for, as a graph sees it in `config.configurable.user`: its id, role and the JWT claims AUTH_AGENT_CLAIMS lists. */
export interface RunUser {
  id: string;
  role: "user" | "admin";
  claims: Record<string, unknown>;
}

const tokens = new WeakMap<RunUser, string>();

/** The run's user for a principal, its JWT (if any) kept aside for forwardToken servers. */
export function runUserOf(principal: Principal): RunUser {
  const user: RunUser = { id: principal.id, role: principal.role, claims: principal.claims };
  const token = bearerTokenOf(principal);
  if (token !== undefined) tokens.set(user, token);
  return user;
}

/** The JWT the run's caller signed in with, when it signed in with one. */
export function tokenOf(user: RunUser): string | undefined {
  return tokens.get(user);
}
