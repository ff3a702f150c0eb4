// The parsing every setting shares: whole numbers in a range, booleans, and the
// one-line error that stops start-up naming the variable.

export class ConfigError extends Error {
  override name = "ConfigError";
}

export type Env = Record<string, string | undefined>;

export function intVar(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** `true` or `false` (default false). */
export function booleanVar(env: Env, name: string): boolean {
  const raw = (env[name] ?? "").trim().toLowerCase();
  if (raw === "" || raw === "false") return false;
  if (raw === "true") return true;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}
