// Who is calling: JWTs checked against a key set this test serves over HTTP (and
// against a PEM key and a shared secret), API keys in a real database, API_TOKEN,
// and the local mode with nothing configured.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CompactSign, SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from "jose";
import { loadConfig, type Config } from "../src/config.ts";
import { UnauthenticatedError } from "../src/domain/errors.ts";
import { API_TOKEN_PRINCIPAL, LOCAL_PRINCIPAL } from "../src/domain/principal.ts";
import { openSqliteStorage } from "../src/storage/open-sqlite.ts";
import { openPostgresStorage } from "../src/storage/open-postgres.ts";
import { openSqlite } from "../src/storage/sqlite/database.ts";
import type { Storage } from "../src/storage/types.ts";
import { createApiKey, createApiKeyVerifier, generateApiKey, hashApiKey } from "../src/server/identity/api-keys.ts";
import { createAuthenticator } from "../src/server/identity/authenticate.ts";
import { createJwtVerifier } from "../src/server/identity/jwt.ts";
import { closedPort, tempDatabaseUrl } from "../testkit/app.ts";
import { postgresDatabase, SERVICES_TIMEOUT_MS } from "../testkit/services.ts";

const ISSUER = "https://id.example.test/";
const AUDIENCE = "runledger";
const now = () => Math.floor(Date.now() / 1000);

/** A JSON Web Key Set served over HTTP; keys can be added while it runs, and fetches are counted. */
async function serveJwks() {
  const keys: JWK[] = [];
  let fetches = 0;
  const server = http.createServer((_req, res) => {
    fetches += 1;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    async publish(kid: string, alg: string, publicKey: CryptoKey) {
      keys.push({ ...(await exportJWK(publicKey)), kid, alg, use: "sig" });
    },
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function sign(payload: JWTPayload, key: CryptoKey | Uint8Array, header: { alg: string; kid?: string }) {
  return new SignJWT(payload).setProtectedHeader(header).sign(key);
}

const b64 = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** The UnauthenticatedError a refused credential gives (fails the test if it is accepted or fails otherwise). */
async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    (value) => new Error(`accepted: ${JSON.stringify(value)}`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UnauthenticatedError);
  expect((error as UnauthenticatedError).code).toBe("UNAUTHENTICATED");
  return (error as Error).message;
}

describe("JWTs from a provider's key set (AUTH_JWKS_URL)", () => {
  let jwks: Awaited<ReturnType<typeof serveJwks>>;
  let rsa: { publicKey: CryptoKey; privateKey: CryptoKey };
  let ec: { publicKey: CryptoKey; privateKey: CryptoKey };
  let verify: ReturnType<typeof createJwtVerifier>;
  /** What the verifier told the operator of each refusal. */
  const refusedDetails: string[] = [];
  const claims = () => ({ sub: "alice", iss: ISSUER, aud: AUDIENCE, exp: now() + 300 });

  beforeAll(async () => {
    jwks = await serveJwks();
    rsa = await generateKeyPair("RS256");
    ec = await generateKeyPair("ES256");
    await jwks.publish("rsa-1", "RS256", rsa.publicKey);
    await jwks.publish("ec-1", "ES256", ec.publicKey);
    const config = loadConfig({
      AUTH_JWKS_URL: jwks.url,
      AUTH_ISSUER: ISSUER,
      AUTH_AUDIENCE: `other, ${AUDIENCE}`,
      AUTH_ADMIN_CLAIM: "roles",
      AUTH_ADMIN_VALUE: "runledger-admin",
      AUTH_AGENT_CLAIMS: "email,org",
    });
    // No cooldown: a token naming a key published a moment ago fetches the set again at once.
    verify = createJwtVerifier(config.auth, { jwksCooldownMs: 0, onRefused: (_reason, detail) => refusedDetails.push(detail) });
  });
  afterAll(() => jwks?.close());

  it("accepts a token signed by either published key, fetching the set once for both", async () => {
    const before = jwks.fetches();
    const exp = now() + 300;
    const byRsa = await verify(await sign({ ...claims(), exp, email: "alice@example.test", secret: "x" }, rsa.privateKey, { alg: "RS256", kid: "rsa-1" }));
    expect(byRsa).toEqual({ id: "alice", role: "user", source: "jwt", expiresAt: new Date(exp * 1000), claims: { email: "alice@example.test" } });
    const byEc = await verify(await sign({ ...claims(), sub: "bob" }, ec.privateKey, { alg: "ES256", kid: "ec-1" }));
    expect(byEc.id).toBe("bob");
    expect(jwks.fetches() - before).toBeLessThanOrEqual(1);
  });

  it("makes an admin of a token whose admin claim is the value, or an array holding it", async () => {
    const roleOf = async (roles: unknown) => (await verify(await sign({ ...claims(), roles }, rsa.privateKey, { alg: "RS256", kid: "rsa-1" }))).role;
    expect(await roleOf("runledger-admin")).toBe("admin");
    expect(await roleOf(["reader", "runledger-admin"])).toBe("admin");
    expect(await roleOf(["reader"])).toBe("user");
    expect(await roleOf("runledger-administrator")).toBe("user");
  });

  it("accepts a key the provider publishes after start-up (rotation), and refuses it before", async () => {
    const next = await generateKeyPair("RS256");
    const token = await sign(claims(), next.privateKey, { alg: "RS256", kid: "rsa-2" });
    expect(await refusal(verify(token))).toBe("the token is signed with a key the identity provider does not publish (unknown kid)");
    await jwks.publish("rsa-2", "RS256", next.publicKey);
    expect((await verify(token)).id).toBe("alice");
  });

  it.each([
    ["expired", { exp: now() - 60 }, /^the token expired at \d{4}-\d\d-\d\dT/],
    ["not yet valid", { nbf: now() + 120 }, /^the token is not valid yet/],
    ["from another issuer", { iss: "https://evil.example.test/" }, /^the token's issuer is not accepted$/],
    ["for another audience", { aud: "someone-else" }, /^the token's audience is not accepted$/],
    ["naming API_TOKEN's principal", { sub: "admin" }, /^the token's user is reserved for another kind of credential$/],
    ["naming the local developer", { sub: "local" }, /^the token's user is reserved for another kind of credential$/],
    ["without a user claim", { sub: undefined }, /^the token has no sub claim naming the user/],
    ["with an empty user claim", { sub: "" }, /^the token has no sub claim naming the user/],
    ["without exp", { exp: undefined }, /^the token has no exp claim: tokens must expire$/],
  ])("refuses a token %s", async (_what, overrides, message) => {
    const payload = { ...claims(), ...overrides } as JWTPayload;
    for (const key of Object.keys(payload)) if (payload[key] === undefined) delete payload[key];
    expect(await refusal(verify(await sign(payload, rsa.privateKey, { alg: "RS256", kid: "rsa-1" })))).toMatch(message);
  });

  it("tells the caller that the issuer or audience is wrong, and only the operator what was configured", async () => {
    refusedDetails.length = 0;
    const issuer = await refusal(verify(await sign({ ...claims(), iss: "https://evil.example.test/" }, rsa.privateKey, { alg: "RS256", kid: "rsa-1" })));
    const audience = await refusal(verify(await sign({ ...claims(), aud: "someone-else" }, rsa.privateKey, { alg: "RS256", kid: "rsa-1" })));
    for (const told of [issuer, audience]) expect(told).not.toMatch(/id\.example\.test|runledger|other/);
    expect(refusedDetails).toEqual([
      'the token\'s issuer "https://evil.example.test/" is not AUTH_ISSUER https://id.example.test/',
      'the token\'s audience "someone-else" is not AUTH_AUDIENCE other or runledger',
    ]);
  });

  it("allows the configured clock tolerance on exp", async () => {
    expect((await verify(await sign({ ...claims(), exp: now() - 2 }, rsa.privateKey, { alg: "RS256", kid: "rsa-1" }))).id).toBe("alice");
  });

  it("refuses a token signed by another key under a published kid", async () => {
    const other = await generateKeyPair("RS256");
    expect(await refusal(verify(await sign(claims(), other.privateKey, { alg: "RS256", kid: "rsa-1" })))).toBe("the token's signature does not verify");
  });

  it("refuses alg none, and an HS256 token whatever its secret", async () => {
    const none = `${b64({ alg: "none", typ: "JWT" })}.${b64(claims())}.`;
    expect(await refusal(verify(none))).toBe("the token's algorithm (alg) is not accepted for the configured key");
    const hs = await sign(claims(), new TextEncoder().encode("s".repeat(32)), { alg: "HS256", kid: "rsa-1" });
    expect(await refusal(verify(hs))).toBe("the token's algorithm (alg) is not accepted for the configured key");
  });

  it("refuses a malformed header or payload", async () => {
    expect(await refusal(verify(`${b64("{not json")}.${b64(claims())}.c2ln`))).toMatch(/^the token is malformed: /);
    const notClaims = await new CompactSign(new TextEncoder().encode("not json")).setProtectedHeader({ alg: "RS256", kid: "rsa-1" }).sign(rsa.privateKey);
    expect(await refusal(verify(notClaims))).toMatch(/^the token is malformed: /);
    expect(await refusal(verify("not-a-jwt"))).toMatch(/^the token is malformed: /);
  });
});

describe("a key set that cannot be fetched", () => {
  it("refuses every token, saying the provider's keys cannot be fetched", async () => {
    const verify = createJwtVerifier(loadConfig({ AUTH_JWKS_URL: `http://127.0.0.1:${await closedPort()}/jwks.json` }).auth, { jwksTimeoutMs: 2_000 });
    const { privateKey } = await generateKeyPair("RS256");
    const token = await sign({ sub: "alice", exp: now() + 60 }, privateKey, { alg: "RS256", kid: "rsa-1" });
    expect(await refusal(verify(token))).toBe("the token cannot be checked: the identity provider's keys cannot be fetched");
  });
});

describe("JWTs checked with one PEM public key (AUTH_JWT_PUBLIC_KEY)", () => {
  it("accepts the key's algorithm and refuses an HS256 token MACed with the PEM itself (algorithm confusion)", async () => {
    const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
    const pem = await exportSPKI(publicKey);
    // One line, as in a .env file.
    const verify = createJwtVerifier(loadConfig({ AUTH_JWT_PUBLIC_KEY: pem.trim().replace(/\n/g, "\\n"), AUTH_AUDIENCE: AUDIENCE }).auth);
    const claims = { sub: "carol", aud: AUDIENCE, exp: now() + 60 };
    expect((await verify(await sign(claims, privateKey, { alg: "RS256" }))).id).toBe("carol");
    for (const secret of [pem, pem.trim()]) {
      const forged = await sign(claims, new TextEncoder().encode(secret), { alg: "HS256" });
      expect(await refusal(verify(forged))).toBe("the token's algorithm (alg) is not accepted for the configured key");
    }
  });

  it("takes an Ed25519 key (EdDSA)", async () => {
    const { publicKey, privateKey } = await generateKeyPair("EdDSA", { extractable: true });
    const verify = createJwtVerifier(loadConfig({ AUTH_JWT_PUBLIC_KEY: await exportSPKI(publicKey) }).auth);
    expect((await verify(await sign({ sub: "dora", exp: now() + 60 }, privateKey, { alg: "EdDSA" }))).id).toBe("dora");
  });
});

describe("JWTs checked with a shared secret (AUTH_JWT_SECRET)", () => {
  const secret = "a-shared-secret-of-at-least-32-bytes!";
  const verify = createJwtVerifier(loadConfig({ AUTH_JWT_SECRET: secret, AUTH_USER_CLAIM: "email" }).auth);

  it("accepts HS256 with the secret and names the user by the configured claim", async () => {
    const principal = await verify(
      await sign({ sub: "1234", email: "erin@example.test", exp: now() + 60 }, new TextEncoder().encode(secret), { alg: "HS256" }),
    );
    expect(principal).toMatchObject({ id: "erin@example.test", role: "user", source: "jwt", claims: {} });
  });

  it("refuses another secret, another HMAC and any public-key algorithm", async () => {
    const claims = { email: "erin@example.test", exp: now() + 60 };
    expect(await refusal(verify(await sign(claims, new TextEncoder().encode(`${secret}?`), { alg: "HS256" })))).toBe("the token's signature does not verify");
    expect(await refusal(verify(await sign(claims, new TextEncoder().encode(secret), { alg: "HS512" })))).toMatch(/algorithm \(alg\) is not accepted/);
    const { privateKey } = await generateKeyPair("RS256");
    expect(await refusal(verify(await sign(claims, privateKey, { alg: "RS256" })))).toMatch(/algorithm \(alg\) is not accepted/);
  });
});

/** Two openings of one database: what two instances (or the server and the keys CLI) see. */
const databases: { name: string; open(): Promise<{ first: Storage; second: Storage; close(): Promise<void> }> }[] = [
  {
    name: "SQLite",
    async open() {
      const { file } = tempDatabaseUrl("runledger-identity-");
      const first = await openSqliteStorage(file);
      const second = await openSqliteStorage(file);
      return { first, second, close: async () => void (await Promise.all([first.close(), second.close()])) };
    },
  },
  {
    name: "PostgreSQL",
    async open() {
      const database = await postgresDatabase();
      const first = await openPostgresStorage(database.url);
      const second = await openPostgresStorage(database.url);
      return { first, second, close: async () => (await Promise.all([first.close(), second.close()]), await database.drop()) };
    },
  },
];

for (const database of databases) {
  describe(`API keys on ${database.name}`, () => {
    let opened: Awaited<ReturnType<(typeof database)["open"]>>;
    beforeAll(async () => {
      opened = await database.open();
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => opened?.close());

    it("look like rlk_ and 43 base64url characters, and only their SHA-256 is stored", async () => {
      const { key, hash } = generateApiKey();
      expect(key).toMatch(/^rlk_[A-Za-z0-9_-]{43}$/);
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
      expect(hashApiKey(key)).toBe(hash);
      expect(generateApiKey().key).not.toBe(key);
      const created = await createApiKey(opened.first.apiKeys, { userId: "frank", role: "admin", label: "ci" });
      expect(created.record).toMatchObject({ userId: "frank", role: "admin", label: "ci", hash: hashApiKey(created.key) });
      expect(JSON.stringify(await opened.second.apiKeys.list())).not.toContain(created.key);
    });

    it("open requests as their user, and are refused on every instance as soon as they are revoked", async () => {
      const verifyOnA = createApiKeyVerifier(opened.first.apiKeys);
      const verifyOnB = createApiKeyVerifier(opened.second.apiKeys);
      const { key, record } = await createApiKey(opened.first.apiKeys, { userId: "grace", role: "user", label: null });
      expect(await verifyOnA(key)).toEqual({ id: "grace", role: "user", source: "api-key", expiresAt: null, claims: {} });
      expect((await verifyOnB(key)).id).toBe("grace");
      await opened.second.apiKeys.revoke(record.id, new Date());
      expect(await refusal(verifyOnA(key))).toMatch(new RegExp(`^the API key ${record.id} was revoked at `));
      expect(await refusal(verifyOnB(key))).toMatch(/was revoked at/);
    });

    it("refuse an unknown or malformed key without a word about the key itself", async () => {
      const verify = createApiKeyVerifier(opened.first.apiKeys);
      const unknown = generateApiKey().key;
      const message = await refusal(verify(unknown));
      expect(message).toBe("the API key is unknown");
      expect(await refusal(verify("rlk_short"))).toBe("the API key is malformed (rlk_ followed by 43 characters)");
    });

    it("record their last use at most once a minute per key", async () => {
      let clock = new Date("2026-12-01T21:00:00.000Z");
      const verify = createApiKeyVerifier(opened.first.apiKeys, { now: () => clock });
      const { key, record } = await createApiKey(opened.first.apiKeys, { userId: "heidi", role: "user", label: null });
      const lastUsed = async () => {
        // The write happens in the background: wait until it has landed (or not).
        await new Promise((resolve) => setTimeout(resolve, 50));
        return (await opened.second.apiKeys.findByHash(record.hash))?.lastUsedAt?.toISOString() ?? null;
      };
      await verify(key);
      expect(await lastUsed()).toBe("2026-12-01T21:00:00.000Z");
      clock = new Date("2026-12-01T21:00:59.000Z");
      await verify(key);
      expect(await lastUsed()).toBe("2026-12-01T21:00:00.000Z");
      clock = new Date("2026-12-01T21:01:00.000Z");
      await verify(key);
      expect(await lastUsed()).toBe("2026-12-01T21:01:00.000Z");
    });
  });
}

describe("an API key whose last use cannot be recorded", () => {
  it("still opens the request, and the failure is told", async () => {
    const { file } = tempDatabaseUrl("runledger-identity-");
    const storage = await openSqliteStorage(file);
    const admin = openSqlite(file);
    try {
      // The database itself refuses the write.
      admin.exec(`CREATE TRIGGER refuse_last_use BEFORE UPDATE OF last_used_at ON api_keys BEGIN SELECT RAISE(ABORT, 'the disk is full'); END`);
      const failures: unknown[] = [];
      const verify = createApiKeyVerifier(storage.apiKeys, { onTouchError: (error) => failures.push(error) });
      const { key } = await createApiKey(storage.apiKeys, { userId: "ivan", role: "user", label: null });
      expect((await verify(key)).id).toBe("ivan");
      await expect.poll(() => failures.length).toBe(1);
      expect(String(failures[0])).toMatch(/the disk is full/);
    } finally {
      admin.close();
      await storage.close();
    }
  });
});

describe("the authenticator", () => {
  let storage: Storage;
  let jwks: Awaited<ReturnType<typeof serveJwks>>;
  let rsa: { publicKey: CryptoKey; privateKey: CryptoKey };
  const configOf = (env: Record<string, string>): Pick<Config, "apiToken" | "auth"> => loadConfig(env);
  beforeAll(async () => {
    storage = await openSqliteStorage(tempDatabaseUrl("runledger-identity-").file);
    jwks = await serveJwks();
    rsa = await generateKeyPair("RS256");
    await jwks.publish("rsa-1", "RS256", rsa.publicKey);
  });
  afterAll(async () => {
    await jwks?.close();
    await storage?.close();
  });

  it("refuses an API key for API_TOKEN's or the local developer's id, made before ids were reserved, and tells the operator", async () => {
    const logged: unknown[] = [];
    const authenticator = createAuthenticator({
      config: configOf({ API_TOKEN: "the token" }),
      apiKeys: storage.apiKeys,
      logger: { warn: (...line) => logged.push(line) },
    });
    for (const userId of ["admin", "local"]) {
      await expect(createApiKey(storage.apiKeys, { userId, role: "user", label: null })).rejects.toThrow(`user id "${userId}" is reserved`);
      // As a key stored by an earlier version: written straight to the table.
      const { key, hash } = generateApiKey();
      await storage.apiKeys.create({ id: crypto.randomUUID(), hash, userId, role: "admin", label: null, createdAt: new Date() });
      expect(await refusal(authenticator.authenticate(`Bearer ${key}`))).toMatch(
        /^the API key [0-9a-f-]+ is for a reserved user id; ask the operator for a new key$/,
      );
    }
    expect(logged).toEqual([
      [
        "an API key for a reserved user id was refused",
        { keyId: expect.any(String), why: expect.stringContaining('user id "admin" is reserved for API_TOKEN') },
      ],
      [
        "an API key for a reserved user id was refused",
        { keyId: expect.any(String), why: expect.stringContaining('user id "local" is reserved for the local developer') },
      ],
    ]);
    // The token itself is still the admin.
    expect(await authenticator.authenticate("Bearer the token")).toBe(API_TOKEN_PRINCIPAL);
  });

  it("with nothing configured requires nothing: no header is the local developer, a credential sent is still checked", async () => {
    const authenticator = createAuthenticator({ config: configOf({}), apiKeys: storage.apiKeys });
    expect(authenticator.required).toBe(false);
    expect(await authenticator.authenticate(undefined)).toBe(LOCAL_PRINCIPAL);
    expect(await authenticator.authenticate("")).toBe(LOCAL_PRINCIPAL);
    const { key } = await createApiKey(storage.apiKeys, { userId: "judy", role: "user", label: null });
    expect(await authenticator.authenticate(`Bearer ${key}`)).toMatchObject({ id: "judy", source: "api-key" });
    expect(await refusal(authenticator.authenticate(`Bearer ${generateApiKey().key}`))).toBe("the API key is unknown");
    expect(await refusal(authenticator.authenticate(`Bearer ${await sign({ sub: "x", exp: now() + 60 }, rsa.privateKey, { alg: "RS256" })}`))).toMatch(
      /^JWTs are not accepted by this server$/,
    );
    expect(await refusal(authenticator.authenticate("Bearer whatever"))).toBe("the bearer credential is neither an API key (rlk_...) nor a JWT");
  });

  it("with API_TOKEN requires a credential: the token is an admin, API keys still work, anything else is refused", async () => {
    const authenticator = createAuthenticator({ config: configOf({ API_TOKEN: "a token with spaces" }), apiKeys: storage.apiKeys });
    expect(authenticator.required).toBe(true);
    expect(await authenticator.authenticate("Bearer a token with spaces")).toBe(API_TOKEN_PRINCIPAL);
    expect(await refusal(authenticator.authenticate(undefined))).toMatch(/^authentication is required: send Authorization: Bearer/);
    expect(await refusal(authenticator.authenticate("Bearer wrong-token"))).toBe("the bearer credential is neither API_TOKEN, an API key (rlk_...) nor a JWT");
    expect(await refusal(authenticator.authenticate("Basic YWxhZGRpbjpvcGVuc2VzYW1l"))).toBe("the Authorization header must be Bearer <credential>");
    const { key, record } = await createApiKey(storage.apiKeys, { userId: "ken", role: "admin", label: null });
    expect(await authenticator.authenticate(`Bearer ${key}`)).toMatchObject({ id: "ken", role: "admin", source: "api-key" });
    await storage.apiKeys.revoke(record.id, new Date());
    expect(await refusal(authenticator.authenticate(`Bearer ${key}`))).toMatch(/was revoked at/);
  });

  it("with a JWT key source sends JWTs to it and API keys to the database", async () => {
    const authenticator = createAuthenticator({
      config: configOf({ AUTH_JWKS_URL: jwks.url, AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: AUDIENCE }),
      apiKeys: storage.apiKeys,
      jwt: { jwksCooldownMs: 0 },
    });
    expect(authenticator.required).toBe(true);
    const token = await sign({ sub: "leo", iss: ISSUER, aud: AUDIENCE, exp: now() + 60 }, rsa.privateKey, { alg: "RS256", kid: "rsa-1" });
    expect(await authenticator.authenticate(`Bearer ${token}`)).toMatchObject({ id: "leo", role: "user", source: "jwt" });
    expect(await authenticator.authenticate(`bearer  ${token}`)).toMatchObject({ id: "leo" });
    const expired = await sign({ sub: "leo", iss: ISSUER, aud: AUDIENCE, exp: now() - 60 }, rsa.privateKey, { alg: "RS256", kid: "rsa-1" });
    expect(await refusal(authenticator.authenticate(`Bearer ${expired}`))).toMatch(/^the token expired at /);
    expect(await refusal(authenticator.authenticate(undefined))).toMatch(/^authentication is required/);
    const { key } = await createApiKey(storage.apiKeys, { userId: "mia", role: "user", label: null });
    expect(await authenticator.authenticate(`Bearer ${key}`)).toMatchObject({ id: "mia", source: "api-key" });
  });
});
