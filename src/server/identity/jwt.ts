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

export interface JwtVerifierOptions {
  /** After a JWKS fetch, how long a token naming an unknown `kid` waits before it may fetch the set again (jose's cooldown); default 30000. */
  jwksCooldownMs?: number;
  /** The longest a JWKS fetch may take; default 5000. */
  jwksTimeoutMs?: number;
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
      throw new UnauthenticatedError(whyRefused(error, auth));
    }
    return withBearerToken(principalOf(payload, auth), token);
  };
}

function principalOf(payload: JWTPayload, auth: AuthConfig): Principal {
  const id = payload[auth.userClaim];
  if (typeof id !== "string" || id.trim() === "") {
    throw new UnauthenticatedError(`the token has no ${auth.userClaim} claim naming the user (a non-empty string)`);
  }
  const granted = auth.admin ? payload[auth.admin.claim] : undefined;
  const admin = auth.admin !== null && (granted === auth.admin.value || (Array.isArray(granted) && granted.includes(auth.admin.value)));
  const claims: Record<string, unknown> = {};
  for (const name of auth.agentClaims) if (payload[name] !== undefined) claims[name] = payload[name];
  return { id, role: admin ? "admin" : "user", source: "jwt", expiresAt: typeof payload.exp === "number" ? new Date(payload.exp * 1000) : null, claims };
}

/** Why jose refused a token, in words a caller can act on; never the token itself. */
function whyRefused(error: unknown, auth: AuthConfig): string {
  if (error instanceof errors.JWTExpired) {
    const exp = error.payload.exp;
    return `the token expired${typeof exp === "number" ? ` at ${new Date(exp * 1000).toISOString()}` : ""}`;
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case "nbf":
        return "the token is not valid yet (nbf is in the future)";
      case "iat":
        return "the token was issued in the future (iat)";
      case "iss":
        return `the token's issuer is not ${auth.issuer}`;
      case "aud":
        return `the token's audience is not ${auth.audience.join(" or ")}`;
      case "exp":
        return error.reason === "missing" ? "the token has no exp claim: tokens must expire" : "the token's exp claim is not a number";
      default:
        return `the token's ${error.claim} claim is ${error.reason === "missing" ? "missing" : "invalid"}`;
    }
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify";
  if (error instanceof errors.JOSEAlgNotAllowed) return "the token's algorithm (alg) is not accepted for the configured key";
  if (error instanceof errors.JWKSNoMatchingKey) return "the token is signed with a key the identity provider does not publish (unknown kid)";
  if (error instanceof errors.JWKSMultipleMatchingKeys) return "the token names no kid and the identity provider publishes several keys";
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return `the identity provider's keys cannot be fetched: ${error.message}`;
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return `the token is malformed: ${error.message}`;
  if (error instanceof errors.JOSENotSupported) return `the token cannot be verified: ${error.message}`;
  if (error instanceof errors.JOSEError) return `the token is refused: ${error.message}`;
  const reason = (error as Error)?.message ?? String(error);
  // A fetch that failed (the provider is down, the URL is wrong): not the token's fault, but it cannot be checked.
  if (auth.jwtKey?.kind === "jwks") return `the token cannot be checked: the identity provider's keys cannot be fetched (${reason})`;
  return `the token cannot be checked: ${reason}`;
}
