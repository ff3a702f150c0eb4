// Who is calling: one Authorization header in, one principal out, whichever way
// the caller proves it. `Bearer <API_TOKEN>` is the admin the token has always
// been; `Bearer rlk_...` an API key; `Bearer <a JWT>` a user of the identity
// provider. With neither API_TOKEN nor a JWT key configured nothing is required,
// and a request without a credential is the one local developer's.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Config } from "../../config.ts";
import { UnauthenticatedError } from "../../domain/errors.ts";
import { API_TOKEN_PRINCIPAL, LOCAL_PRINCIPAL, type Principal } from "../../domain/principal.ts";
import type { ApiKeyStore } from "../../storage/api-keys/types.ts";
import type { Logger } from "../../logger.ts";
import { apiKeyHashOf, createApiKeyVerifier, isApiKey, type ApiKeyVerifierOptions } from "./api-keys.ts";
import { createJwtVerifier, type JwtVerifierOptions } from "./jwt.ts";

export interface Authenticator {
  /** Whether a request must carry a credential: API_TOKEN or a JWT key is configured. */
  required: boolean;
  /** The principal of an Authorization header's value (undefined when absent); throws UnauthenticatedError when it proves nothing. */
  authenticate(authorization: string | undefined): Promise<Principal>;
  /**
   * Whether the credential a principal was verified from still holds: false once
   * its JWT has expired or its API key was revoked (on any instance: the key is
   * read again). Live streams ask this before each operation and periodically.
   */
  stillValid(principal: Principal): Promise<boolean>;
}

export interface AuthenticatorOptions {
  config: Pick<Config, "apiToken" | "auth">;
  apiKeys: ApiKeyStore;
  /** Tuning of the JWKS cache (tests shorten its cooldown). */
  jwt?: JwtVerifierOptions;
  /** How API keys' last use is recorded, and where a failure to record it is told. */
  apiKeyOptions?: ApiKeyVerifierOptions;
  /** Where refusals are explained to the operator (with the configuration the caller is not told). */
  logger?: Pick<Logger, "warn">;
}

const BEARER = /^Bearer +(\S+) *$/i;
/** Three base64url parts; the last (the signature) is empty for `alg: none`, which the verifier then refuses by name. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { apiToken, auth } = options.config;
  const { logger } = options;
  const verifyJwt = auth.jwtKey
    ? createJwtVerifier(auth, { onRefused: (reason, detail) => logger?.warn("a JWT was refused", { reason, detail }), ...options.jwt })
    : null;
  const verifyApiKey = createApiKeyVerifier(options.apiKeys, {
    onReserved: (record, why) => logger?.warn("an API key for a reserved user id was refused", { keyId: record.id, why }),
    ...options.apiKeyOptions,
  });
  // The whole header, as API_TOKEN has always been compared (a token may hold spaces).
  const isApiToken = apiToken === undefined ? () => false : constantTimeEquals(`Bearer ${apiToken}`);
  const required = apiToken !== undefined || verifyJwt !== null;

  return {
    required,
    async authenticate(authorization) {
      if (authorization === undefined || authorization.trim() === "") {
        if (!required) return LOCAL_PRINCIPAL;
        throw new UnauthenticatedError("authentication is required: send Authorization: Bearer <API key, JWT or API_TOKEN>");
      }
      // A credential sent is checked even when none is required, so the caller learns who it is (or that it is wrong).
      if (isApiToken(authorization)) return API_TOKEN_PRINCIPAL;
      const credential = BEARER.exec(authorization)?.[1];
      if (credential === undefined) throw new UnauthenticatedError("the Authorization header must be Bearer <credential>");
      if (isApiKey(credential)) return verifyApiKey(credential);
      if (JWT_SHAPE.test(credential)) {
        if (verifyJwt) return verifyJwt(credential);
        throw new UnauthenticatedError("JWTs are not accepted by this server");
      }
      throw new UnauthenticatedError(
        apiToken === undefined
          ? "the bearer credential is neither an API key (rlk_...) nor a JWT"
          : "the bearer credential is neither API_TOKEN, an API key (rlk_...) nor a JWT",
      );
    },
    async stillValid(principal) {
      if (principal.expiresAt && principal.expiresAt.getTime() <= Date.now()) return false;
      const hash = apiKeyHashOf(principal);
      if (hash === undefined) return true;
      const record = await options.apiKeys.findByHash(hash);
      return record !== null && record.revokedAt === null;
    },
  };
}

/** Compares against the expected value in constant time: both sides are hashed to one length first. */
function constantTimeEquals(expected: string): (given: string) => boolean {
  const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();
  const want = digest(expected);
  return (given) => timingSafeEqual(digest(given), want);
}
