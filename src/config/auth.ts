// The AUTH_* settings (docs/users.md): who may call, through JWTs from an
// identity provider. API keys need no setting.
import { createPublicKey } from "node:crypto";
import { ConfigError, intVar, type Env } from "./vars.ts";

/** Where the keys that sign JWTs come from: at most one of the three variables. */
export type JwtKeySource =
  /** `AUTH_JWKS_URL`: the provider's JSON Web Key Set (http or https), fetched and cached; fetched again when a token names an unknown key. */
  | { kind: "jwks"; url: string }
  /** `AUTH_JWT_PUBLIC_KEY`: one PEM public key (SPKI, `-----BEGIN PUBLIC KEY-----`; a literal `\n` stands for a newline): RSA, EC P-256/P-384 or Ed25519. */
  | { kind: "public-key"; pem: string }
  /** `AUTH_JWT_SECRET`: a shared secret of at least 32 bytes, for HS256 tokens. */
  | { kind: "secret"; secret: string };

export interface AuthConfig {
  /** The JWT key source; null: no JWT is accepted. */
  jwtKey: JwtKeySource | null;
  /** `AUTH_ISSUER`: the `iss` every JWT must carry; unset: not checked. */
  issuer: string | undefined;
  /** `AUTH_AUDIENCE`: comma-separated; a JWT's `aud` must name one of them. Empty: not checked. */
  audience: string[];
  /** `AUTH_USER_CLAIM`, default `sub`: the claim whose value (a non-empty string) is the user's id, the owner of what they create. */
  userClaim: string;
  /** `AUTH_ADMIN_CLAIM` and `AUTH_ADMIN_VALUE` (both or neither): a JWT whose claim equals the value, or is an array holding it, is an admin's. Null: every JWT is a user's. */
  admin: { claim: string; value: string } | null;
  /** `AUTH_CLOCK_TOLERANCE_S`, default 5 (0 to 300): seconds of clock difference allowed when checking `exp` and `nbf`. */
  clockToleranceS: number;
  /** `AUTH_AGENT_CLAIMS`: comma-separated claim names copied from a JWT into the principal's claims, for agents to read. Empty: none. */
  agentClaims: string[];
}

const JWT_KEY_VARIABLES = ["AUTH_JWKS_URL", "AUTH_JWT_PUBLIC_KEY", "AUTH_JWT_SECRET"] as const;
/** A claim name: no spaces or commas (a URL such as https://example.com/roles is one). */
const CLAIM_NAME = /^[^\s,]{1,200}$/;

export function authConfig(env: Env): AuthConfig {
  const value = (name: string) => {
    const raw = (env[name] ?? "").trim();
    return raw === "" ? undefined : raw;
  };
  const set = JWT_KEY_VARIABLES.filter((name) => value(name) !== undefined);
  if (set.length > 1) throw new ConfigError(`${set.join(" and ")} are both set: JWT keys come from one of AUTH_JWKS_URL, AUTH_JWT_PUBLIC_KEY, AUTH_JWT_SECRET`);
  const jwtKey = jwtKeySource(set[0], set[0] === undefined ? "" : value(set[0])!);

  const claimVar = (name: string, fallback?: string) => {
    const raw = value(name) ?? fallback;
    if (raw !== undefined && !CLAIM_NAME.test(raw)) throw new ConfigError(`${name} must be a claim name (no spaces or commas), got "${raw}"`);
    return raw;
  };
  const adminClaim = claimVar("AUTH_ADMIN_CLAIM");
  const adminValue = value("AUTH_ADMIN_VALUE");
  if ((adminClaim === undefined) !== (adminValue === undefined)) {
    throw new ConfigError(
      `${adminClaim === undefined ? "AUTH_ADMIN_VALUE" : "AUTH_ADMIN_CLAIM"} is set without ${adminClaim === undefined ? "AUTH_ADMIN_CLAIM" : "AUTH_ADMIN_VALUE"}: set both or neither`,
    );
  }
  const agentClaims = commaList(env.AUTH_AGENT_CLAIMS);
  for (const claim of agentClaims)
    if (!CLAIM_NAME.test(claim)) throw new ConfigError(`AUTH_AGENT_CLAIMS must list claim names separated by commas, got "${claim}"`);
  const auth: AuthConfig = {
    jwtKey,
    issuer: value("AUTH_ISSUER"),
    audience: commaList(env.AUTH_AUDIENCE),
    userClaim: claimVar("AUTH_USER_CLAIM", "sub")!,
    admin: adminClaim === undefined ? null : { claim: adminClaim, value: adminValue! },
    clockToleranceS: intVar(env, "AUTH_CLOCK_TOLERANCE_S", 5, 0, 300),
    agentClaims,
  };
  // Settings for JWTs with no key to check them by are a mistake that would leave them unchecked: say so.
  if (jwtKey === null) {
    const dangling = [
      "AUTH_ISSUER",
      "AUTH_AUDIENCE",
      "AUTH_USER_CLAIM",
      "AUTH_ADMIN_CLAIM",
      "AUTH_ADMIN_VALUE",
      "AUTH_CLOCK_TOLERANCE_S",
      "AUTH_AGENT_CLAIMS",
    ].find((name) => value(name) !== undefined);
    if (dangling) throw new ConfigError(`${dangling} is set but no JWT key is: set AUTH_JWKS_URL, AUTH_JWT_PUBLIC_KEY or AUTH_JWT_SECRET`);
  }
  return auth;
}

function jwtKeySource(name: (typeof JWT_KEY_VARIABLES)[number] | undefined, raw: string): JwtKeySource | null {
  switch (name) {
    case undefined:
      return null;
    case "AUTH_JWKS_URL": {
      let url: URL | undefined;
      try {
        url = new URL(raw);
      } catch {
        url = undefined;
      }
      if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
        throw new ConfigError(`AUTH_JWKS_URL must be an http or https URL such as https://id.example.com/.well-known/jwks.json, got "${raw}"`);
      }
      return { kind: "jwks", url: url.href };
    }
    case "AUTH_JWT_PUBLIC_KEY": {
      const pem = raw.replace(/\\n/g, "\n");
      if (!/^-----BEGIN PUBLIC KEY-----\s[\s\S]+\s-----END PUBLIC KEY-----$/.test(pem)) {
        throw new ConfigError("AUTH_JWT_PUBLIC_KEY must be a PEM public key (SPKI): -----BEGIN PUBLIC KEY----- ... -----END PUBLIC KEY-----");
      }
      let type: string | undefined;
      let curve: string | undefined;
      try {
        const key = createPublicKey(pem);
        type = key.asymmetricKeyType;
        curve = key.asymmetricKeyDetails?.namedCurve;
      } catch (error) {
        throw new ConfigError(`AUTH_JWT_PUBLIC_KEY cannot be read as a public key: ${(error as Error).message}`);
      }
      const supported = type === "rsa" || type === "rsa-pss" || type === "ed25519" || (type === "ec" && (curve === "prime256v1" || curve === "secp384r1"));
      if (!supported) throw new ConfigError(`AUTH_JWT_PUBLIC_KEY must be an RSA, EC P-256, EC P-384 or Ed25519 key, got ${type}${curve ? ` ${curve}` : ""}`);
      return { kind: "public-key", pem };
    }
    case "AUTH_JWT_SECRET":
      if (Buffer.byteLength(raw, "utf8") < 32) throw new ConfigError("AUTH_JWT_SECRET must be at least 32 bytes (HS256 needs a secret as long as its hash)");
      return { kind: "secret", secret: raw };
  }
}

function commaList(raw: string | undefined): string[] {
  return (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
