// Verifying a JWT from an identity provider and turning it into a principal.
// jose checks the signature first, then the claims; every algorithm outside the
// key's own family is refused before any key is used, so `alg: none` and a
// token MACed with an RSA public key taken as an HS256 secret never verify.
import { createPublicKey } from "node:crypto";
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type KeyInput } from "jose";
import type { AuthConfig, JwtKeySource } from "../../config.ts";
import { UnauthenticatedError } from "../../domain/errors.ts";
import { withBearerToken, type Principal } from "../../domain/principal.ts";

export type JwtVerifier = (token: string) => Promise<Principal>;

/**
 * Principal ids that another source makes: `admin` is API_TOKEN's, `local` the
 * local developer's. A JWT or an API key naming one would act as that principal
 * (see its conversations, share its idempotency keys and quotas), so both are refused.
 */
export const RESERVED_PRINCIPAL_IDS: ReadonlySet<string> = new Set(["admin", "local"]);

export interface JwtVerifierOptions {
  /** After a JWKS fetch, how long a token naming an unknown `kid` waits before it may fetch the set again (jose's cooldown); default 30000. */
  jwksCooldownMs?: number;
  /** The longest a JWKS fetch may take; default 5000. */
  jwksTimeoutMs?: number;
  /**
   * Told why a token was refused, with what only the operator should read (the
   * configured issuer, audience, key URL); the caller is told the reason without them.
   */
  onRefused?: (reason: string, detail: string) => void;
}

const RSA = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"];
/** A provider's key set may hold any asymmetric key; each JWK is matched to the token's alg by jose. */
const ASYMMETRIC = [...RSA, "ES256", "ES384", "EdDSA", "Ed25519"];

interface KeyAndAlgorithms {
  key: KeyInput | JWTVerifyGetKey;
  algorithms: string[];
}

function keyFor(source: JwtKeySource, options: JwtVerifierOptions): KeyAndAlgorithms {
  switch (source.kind) {
    case "jwks":
      // Cached; a token with a kid the cache lacks fetches the set again (after the cooldown), so a provider's rotation needs no restart.
      return {
        key: createRemoteJWKSet(new URL(source.url), { cooldownDuration: options.jwksCooldownMs ?? 30_000, timeoutDuration: options.jwksTimeoutMs ?? 5_000 }),
        algorithms: ASYMMETRIC,
      };
    case "public-key": {
      const key = createPublicKey(source.pem);
      return { key, algorithms: algorithmsOf(key) };
    }
    case "secret":
      return { key: new TextEncoder().encode(source.secret), algorithms: ["HS256"] };
  }
}

/** The algorithms one public key can verify (the configuration accepts only these key types). */
function algorithmsOf(key: ReturnType<typeof createPublicKey>): string[] {
  switch (key.asymmetricKeyType) {
    case "rsa":
      return RSA;
    case "rsa-pss":
      return ["PS256", "PS384", "PS512"];
    case "ed25519":
      return ["EdDSA", "Ed25519"];
    case "ec":
      return key.asymmetricKeyDetails?.namedCurve === "secp384r1" ? ["ES384"] : ["ES256"];
    default:
      return [];
  }
}

export function createJwtVerifier(auth: AuthConfig, options: JwtVerifierOptions = {}): JwtVerifier {
  if (!auth.jwtKey) throw new Error("createJwtVerifier needs a JWT key source (AUTH_JWKS_URL, AUTH_JWT_PUBLIC_KEY or AUTH_JWT_SECRET)");
  const { key, algorithms } = keyFor(auth.jwtKey, options);
  const verifyOptions = {
    algorithms,
    issuer: auth.issuer,
    audience: auth.audience.length > 0 ? auth.audience : undefined,
    clockTolerance: auth.clockToleranceS,
    // A token that never expires cannot be taken back: refuse it.
    requiredClaims: ["exp"],
  };
  return async (token) => {
    let payload: JWTPayload;
    try {
      payload = (await jwtVerify(token, key, verifyOptions)).payload;
    } catch (error) {
      const { reason, detail } = whyRefused(error, auth);
      options.onRefused?.(reason, detail);
      throw new UnauthenticatedError(reason);
    }
    return withBearerToken(principalOf(payload, auth, options), token);
  };
}

function principalOf(payload: JWTPayload, auth: AuthConfig, options: JwtVerifierOptions): Principal {
  const id = payload[auth.userClaim];
  if (typeof id !== "string" || id.trim() === "") {
    throw new UnauthenticatedError(`the token has no ${auth.userClaim} claim naming the user (a non-empty string)`);
  }
  if (RESERVED_PRINCIPAL_IDS.has(id)) {
    const reason = "the token's user is reserved for another kind of credential";
    options.onRefused?.(
      reason,
      `${auth.userClaim} ${JSON.stringify(id)} is the id of ${id === "admin" ? "API_TOKEN" : "the local developer"}; a JWT may not act as it`,
    );
    throw new UnauthenticatedError(reason);
  }
  const granted = auth.admin ? payload[auth.admin.claim] : undefined;
  const admin = auth.admin !== null && (granted === auth.admin.value || (Array.isArray(granted) && granted.includes(auth.admin.value)));
  const claims: Record<string, unknown> = {};
  for (const name of auth.agentClaims) if (payload[name] !== undefined) claims[name] = payload[name];
  return { id, role: admin ? "admin" : "user", source: "jwt", expiresAt: typeof payload.exp === "number" ? new Date(payload.exp * 1000) : null, claims };
}

/**
 * Why jose refused a token: `reason` in words a caller can act on, never the
 * token itself nor the configuration (issuer, audience, key URL); `detail` adds
 * those, for the operator's log.
 */
function whyRefused(error: unknown, auth: AuthConfig): { reason: string; detail: string } {
  const plain = (reason: string) => ({ reason, detail: reason });
  if (error instanceof errors.JWTExpired) {
    const exp = error.payload.exp;
    return plain(`the token expired${typeof exp === "number" ? ` at ${new Date(exp * 1000).toISOString()}` : ""}`);
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case "nbf":
        return plain("the token is not valid yet (nbf is in the future)");
      case "iat":
        return plain("the token was issued in the future (iat)");
      case "iss":
        return {
          reason: "the token's issuer is not accepted",
          detail: `the token's issuer ${JSON.stringify(error.payload.iss)} is not AUTH_ISSUER ${auth.issuer}`,
        };
      case "aud":
        return {
          reason: "the token's audience is not accepted",
          detail: `the token's audience ${JSON.stringify(error.payload.aud)} is not AUTH_AUDIENCE ${auth.audience.join(" or ")}`,
        };
      case "exp":
        return plain(error.reason === "missing" ? "the token has no exp claim: tokens must expire" : "the token's exp claim is not a number");
      default:
        return plain(`the token's ${error.claim} claim is ${error.reason === "missing" ? "missing" : "invalid"}`);
    }
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return plain("the token's signature does not verify");
  if (error instanceof errors.JOSEAlgNotAllowed) return plain("the token's algorithm (alg) is not accepted for the configured key");
  if (error instanceof errors.JWKSNoMatchingKey) return plain("the token is signed with a key the identity provider does not publish (unknown kid)");
  if (error instanceof errors.JWKSMultipleMatchingKeys) return plain("the token names no kid and the identity provider publishes several keys");
  const unreachable = "the token cannot be checked: the identity provider's keys cannot be fetched";
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return { reason: unreachable, detail: `${unreachable} (${error.message})` };
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return plain(`the token is malformed: ${error.message}`);
  if (error instanceof errors.JOSENotSupported) return plain(`the token cannot be verified: ${error.message}`);
  if (error instanceof errors.JOSEError) return plain(`the token is refused: ${error.message}`);
  const cause = (error as Error)?.message ?? String(error);
  // A fetch that failed (the provider is down, the URL is wrong): not the token's fault, but it cannot be checked.
  // The fetch's own message may name the key URL: the operator's to read.
  if (auth.jwtKey?.kind === "jwks") return { reason: unreachable, detail: `${unreachable} from AUTH_JWKS_URL ${auth.jwtKey.url} (${cause})` };
  return { reason: "the token cannot be checked", detail: `the token cannot be checked: ${cause}` };
}
