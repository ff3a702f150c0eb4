import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";
import { closedPort, tempDatabaseUrl, ROOT } from "../testkit/app.ts";
import { serverCommand, startServerProcess } from "../testkit/processes.ts";

const run = promisify(execFile);

describe("configuration", () => {
  it("has the documented defaults", () => {
    const config = loadConfig({}, () => "");
    expect(config).toMatchObject({
      port: 4000,
      host: "127.0.0.1",
      databaseUrl: "file:./data/runledger.db",
      ollamaHost: "http://127.0.0.1:11434",
      ollamaModel: "qwen3",
      ollamaThink: undefined,
      recursionLimit: 25,
      apiToken: undefined,
      logLevel: "info",
      maxActiveRuns: 64,
      admissionLoopDelayMs: 0,
      eventGraceRuns: 1000,
      heapGrowingPercent: 20,
      retention: { conversationDays: null, checkpointsKeep: null, eventsDays: null, sweepMs: 60_000 },
    });
    expect(config.databasePath.endsWith("data/runledger.db")).toBe(true);
  });

  it("reads the retention settings; empty is unset", () => {
    const env = { RETENTION_CONVERSATION_DAYS: "90", RETENTION_CHECKPOINTS_KEEP: "20", RETENTION_EVENTS_DAYS: " ", RETENTION_SWEEP_MS: "5000" };
    expect(loadConfig(env, () => "").retention).toEqual({ conversationDays: 90, checkpointsKeep: 20, eventsDays: null, sweepMs: 5000 });
  });

  it.each([
    [{ PORT: "abc" }, /PORT must be a whole number/],
    [{ PORT: "70000" }, /PORT must be between 0 and 65535/],
    [{ AGENT_RECURSION_LIMIT: "0" }, /AGENT_RECURSION_LIMIT/],
    [{ MODEL_IDLE_TIMEOUT_MS: "-5" }, /MODEL_IDLE_TIMEOUT_MS/],
    [{ MAX_MESSAGE_CHARS: "1.5" }, /MAX_MESSAGE_CHARS/],
    [{ OLLAMA_THINK: "maybe" }, /OLLAMA_THINK must be true or false/],
    [{ OLLAMA_HOST: "ftp://x" }, /OLLAMA_HOST must use http or https/],
    [{ OLLAMA_HOST: "http://" }, /OLLAMA_HOST must be a URL/],
    // Not a host named "htp": a scheme mistyped.
    [{ OLLAMA_HOST: "htp:/oops" }, /OLLAMA_HOST must be a URL such as http:\/\/127\.0\.0\.1:11434 \(or a bare host:port\), got "htp:\/oops"/],
    [{ OLLAMA_HOST: "http:/127.0.0.1:11434" }, /OLLAMA_HOST must be a URL/],
    [{ DATABASE_URL: "mysql://x/db" }, /DATABASE_URL must be a SQLite file URL such as file:.* or a PostgreSQL URL/],
    [{ DATABASE_URL: "postgres://x" }, /DATABASE_URL must name a database/],
    [{ DATABASE_URL: "postgres://:5432/db" }, /DATABASE_URL must/],
    [{ REDIS_URL: "http://127.0.0.1:6379" }, /REDIS_URL must use redis:\/\/ or rediss:\/\//],
    [{ REDIS_URL: "not a url" }, /REDIS_URL must be a URL/],
    [{ MAX_CLOCK_SKEW_MS: "-1" }, /MAX_CLOCK_SKEW_MS must be a whole number/],
    [{ HEAP_GROWING_PERCENT: "-1" }, /HEAP_GROWING_PERCENT must be a whole number/],
    [{ HEAP_GROWING_PERCENT: "5000" }, /HEAP_GROWING_PERCENT must be between 0 and 1000/],
    [{ ADMISSION_LOOP_DELAY_MS: "-5" }, /ADMISSION_LOOP_DELAY_MS must be a whole number/],
    [{ EVENT_GRACE_RUNS: "0" }, /EVENT_GRACE_RUNS must be between 1 and 10000000/],
    [{ ADMISSION_LOOP_DELAY_MS: "fast" }, /ADMISSION_LOOP_DELAY_MS must be a whole number/],
    [{ DATABASE_URL: "file::memory:" }, /DATABASE_URL must name a file/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL must be one of/],
    [{ RETENTION_CONVERSATION_DAYS: "0" }, /RETENTION_CONVERSATION_DAYS must be between 1 and 36500/],
    [{ RETENTION_CONVERSATION_DAYS: "a week" }, /RETENTION_CONVERSATION_DAYS must be a whole number \(unset keeps everything\)/],
    [{ RETENTION_CHECKPOINTS_KEEP: "0" }, /RETENTION_CHECKPOINTS_KEEP must be between 1 and 1000000/],
    [{ RETENTION_EVENTS_DAYS: "-1" }, /RETENTION_EVENTS_DAYS must be a whole number/],
    [{ RETENTION_SWEEP_MS: "5" }, /RETENTION_SWEEP_MS must be between 10 and 86400000/],
    [{ API_TOKEN: "short" }, /API_TOKEN must be at least 8 characters/],
    [{ RUN_HEARTBEAT_MS: "5000", RUN_LEASE_MS: "6000" }, /RUN_LEASE_MS/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://collector:4317" }, /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http or https URL/],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json, got "grpc"/],
    [{ OTEL_TRACES_SAMPLER: "sometimes" }, /OTEL_TRACES_SAMPLER must be one of always_on, .*parentbased_traceidratio, got "sometimes"/],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }, /OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1, got "2"/],
    [{ OTEL_TRACES_EXPORTER: "zipkin" }, /OTEL_TRACES_EXPORTER must be otlp or none/],
    [{ OTEL_SDK_DISABLED: "yes" }, /OTEL_SDK_DISABLED must be true or false/],
    [{ METRICS_PORT: "0" }, /METRICS_PORT must be between 1 and 65535/],
    [{ METRICS_PORT: "4000" }, /METRICS_PORT must differ from PORT \(4000\)/],
    [{ LANGSMITH_TRACING: "True" }, /LANGSMITH_TRACING must be true or false \(LangChain reads exactly "true"\), got "True"/],
    [{ LANGSMITH_TRACING: "true" }, /LANGSMITH_TRACING is true but LANGSMITH_API_KEY is not set/],
    [{ LANGSMITH_TRACING: "true", LANGSMITH_API_KEY: "k", LANGSMITH_ENDPOINT: "smith" }, /LANGSMITH_ENDPOINT must be an http or https URL/],
  ])("refuses %j", (env, message) => {
    expect(() => loadConfig(env, () => "")).toThrow(ConfigError);
    expect(() => loadConfig(env, () => "")).toThrow(message);
  });

  it("turns tracing on with an OTLP endpoint, unless the SDK or its trace exporter is switched off", () => {
    const observability = (env: Record<string, string>) => loadConfig(env, () => "").observability;
    expect(observability({})).toEqual({ tracing: false, metricsPort: undefined, langsmith: false });
    expect(observability({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).tracing).toBe(true);
    expect(observability({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector/v1/traces" }).tracing).toBe(true);
    expect(observability({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }).tracing).toBe(false);
    expect(observability({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" }).tracing).toBe(false);
    expect(observability({ METRICS_PORT: "9464", LANGSMITH_TRACING: "true", LANGSMITH_API_KEY: "k" })).toEqual({
      tracing: false,
      metricsPort: 9464,
      langsmith: true,
    });
  });

  it("start-up on a METRICS_PORT another server holds stops with one line naming it (exit code 2)", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    try {
      const port = (holder.address() as net.AddressInfo).port;
      const database = tempDatabaseUrl("runledger-startup-");
      const error = await run(process.execPath, serverCommand(), {
        cwd: ROOT,
        env: { ...process.env, PORT: "0", METRICS_PORT: String(port), DATABASE_URL: database.url, LOG_LEVEL: "warn" },
      }).catch((e) => e);
      expect(error.code).toBe(2);
      expect(error.stderr.trim()).toBe(`runledger: METRICS_PORT: 127.0.0.1:${port} is already in use; choose another METRICS_PORT`);
    } finally {
      holder.close();
    }
  });

  it("accepts Ollama's bare host:port form and reads the system prompt from a file", () => {
    const config = loadConfig({ OLLAMA_HOST: "127.0.0.1:11500", SYSTEM_PROMPT_FILE: "/prompt" }, (p) => `from ${p}`);
    expect(config.ollamaHost).toBe("http://127.0.0.1:11500");
    expect(config.systemPrompt).toBe("from /prompt");
  });

  it("start-up stops with a one-line message on a bad value", async () => {
    const error = await run(process.execPath, serverCommand(), { cwd: ROOT, env: { ...process.env, PORT: "eighty" } }).catch((e) => e);
    expect(error.code).toBe(2);
    expect(error.stderr.trim()).toBe('runledger: PORT must be a whole number, got "eighty"');
  });

  it.each([
    [
      "an unreachable PostgreSQL",
      async () => ({ DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${await closedPort()}/runledger` }),
      /^runledger: DATABASE_URL: PostgreSQL at 127\.0\.0\.1:\d+\/runledger cannot be reached: .+$/,
    ],
    ["an unreachable Redis", async () => ({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` }), /^runledger: REDIS_URL: .+$/],
    [
      "an agents file that does not exist",
      async () => ({ RUNLEDGER_CONFIG: path.join(os.tmpdir(), "no-such-agents.json") }),
      /^runledger: RUNLEDGER_CONFIG .*no-such-agents\.json: .+$/,
    ],
  ])("start-up stops with one line naming the variable for %s (exit code 2)", async (_what, makeEnv, line) => {
    const database = tempDatabaseUrl("runledger-startup-");
    const error = await run(process.execPath, serverCommand(), {
      cwd: ROOT,
      env: { ...process.env, PORT: "0", DATABASE_URL: database.url, ...(await makeEnv()) },
    }).catch((e) => e);
    expect(error.code).toBe(2);
    expect(error.stderr.trim().split("\n")).toHaveLength(1);
    expect(error.stderr.trim()).toMatch(line);
    // The password never reaches the output.
    expect(error.stderr).not.toContain("secret");
  });

  it("start-up on a port another server holds stops with one line naming PORT (exit code 2)", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    try {
      const port = (holder.address() as net.AddressInfo).port;
      const database = tempDatabaseUrl("runledger-startup-");
      const error = await run(process.execPath, serverCommand(), {
        cwd: ROOT,
        env: { ...process.env, PORT: String(port), DATABASE_URL: database.url, LOG_LEVEL: "warn" },
      }).catch((e) => e);
      expect(error.code).toBe(2);
      expect(error.stderr.trim()).toBe(`runledger: PORT: 127.0.0.1:${port} is already in use (is another server running?); stop it or choose another PORT`);
    } finally {
      holder.close();
    }
  });

  it("says at start-up where the console is, which agents it loaded and the default agent's model", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-startup-agents-"));
    const agentsFile = path.join(dir, "agents.json");
    fs.writeFileSync(agentsFile, JSON.stringify({ agents: { default: { type: "chat", model: "llama3.2" }, terse: { type: "chat", tools: [] } } }));
    const server = await startServerProcess({
      DATABASE_URL: tempDatabaseUrl("runledger-startup-").url,
      RUNLEDGER_CONFIG: agentsFile,
      OLLAMA_HOST: `127.0.0.1:${await closedPort()}`,
    });
    try {
      const line = server
        .output()
        .split("\n")
        .map((l) => (l.startsWith("{") ? JSON.parse(l) : null))
        .find((l) => l?.msg === "runledger listening");
      expect(line).toMatchObject({
        url: `${server.url}/graphql`,
        console: `${server.url}/console`,
        model: "llama3.2",
        agents: [
          { name: "default", type: "chat", model: "llama3.2" },
          { name: "terse", type: "chat", model: "qwen3" },
        ],
      });
    } finally {
      await server.stop();
    }
  });
});

describe("authentication settings", () => {
  const spki = (key: ReturnType<typeof generateKeyPairSync>["publicKey"]) => key.export({ type: "spki", format: "pem" }).toString();
  const rsaPem = spki(generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey);
  const secret = "s".repeat(32);
  const load = (env: Record<string, string>) => loadConfig(env, () => "").auth;

  it("accept no JWTs by default, with the documented defaults for the rest", () => {
    expect(load({})).toEqual({ jwtKey: null, issuer: undefined, audience: [], userClaim: "sub", admin: null, clockToleranceS: 5, agentClaims: [] });
  });

  it("read a JWKS URL with the claims that make users, admins and agents' context", () => {
    const auth = load({
      AUTH_JWKS_URL: "https://id.example.com/.well-known/jwks.json",
      AUTH_ISSUER: "https://id.example.com/",
      AUTH_AUDIENCE: "runledger, runledger-staging",
      AUTH_USER_CLAIM: "email",
      AUTH_ADMIN_CLAIM: "https://example.com/roles",
      AUTH_ADMIN_VALUE: "runledger-admin",
      AUTH_CLOCK_TOLERANCE_S: "30",
      AUTH_AGENT_CLAIMS: "email, org_id",
    });
    expect(auth).toEqual({
      jwtKey: { kind: "jwks", url: "https://id.example.com/.well-known/jwks.json" },
      issuer: "https://id.example.com/",
      audience: ["runledger", "runledger-staging"],
      userClaim: "email",
      admin: { claim: "https://example.com/roles", value: "runledger-admin" },
      clockToleranceS: 30,
      agentClaims: ["email", "org_id"],
    });
  });

  it("take a PEM public key as its value, with literal \\n for newlines (one line in a .env file)", () => {
    expect(load({ AUTH_JWT_PUBLIC_KEY: rsaPem }).jwtKey).toEqual({ kind: "public-key", pem: rsaPem.trim() });
    expect(load({ AUTH_JWT_PUBLIC_KEY: rsaPem.trim().replace(/\n/g, "\\n") }).jwtKey).toEqual({ kind: "public-key", pem: rsaPem.trim() });
    for (const key of [
      generateKeyPairSync("ec", { namedCurve: "P-256" }),
      generateKeyPairSync("ec", { namedCurve: "P-384" }),
      generateKeyPairSync("ed25519"),
    ]) {
      expect(load({ AUTH_JWT_PUBLIC_KEY: spki(key.publicKey) }).jwtKey?.kind).toBe("public-key");
    }
  });

  it("take an HS256 secret of 32 bytes or more", () => {
    expect(load({ AUTH_JWT_SECRET: secret }).jwtKey).toEqual({ kind: "secret", secret });
  });

  const privatePem = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const secp256k1 = spki(generateKeyPairSync("ec", { namedCurve: "secp256k1" }).publicKey);
  it.each([
    [{ AUTH_JWKS_URL: "https://id.example.com/jwks", AUTH_JWT_SECRET: secret }, /^AUTH_JWKS_URL and AUTH_JWT_SECRET are both set: JWT keys come from one of/],
    [{ AUTH_JWT_PUBLIC_KEY: rsaPem, AUTH_JWT_SECRET: secret }, /^AUTH_JWT_PUBLIC_KEY and AUTH_JWT_SECRET are both set/],
    [{ AUTH_JWKS_URL: "ftp://id.example.com/jwks" }, /^AUTH_JWKS_URL must be an http or https URL/],
    [{ AUTH_JWKS_URL: "id.example.com/jwks" }, /^AUTH_JWKS_URL must be an http or https URL/],
    [{ AUTH_JWT_PUBLIC_KEY: "not a key" }, /^AUTH_JWT_PUBLIC_KEY must be a PEM public key \(SPKI\)/],
    [{ AUTH_JWT_PUBLIC_KEY: privatePem }, /^AUTH_JWT_PUBLIC_KEY must be a PEM public key \(SPKI\)/],
    [{ AUTH_JWT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----" }, /^AUTH_JWT_PUBLIC_KEY cannot be read as a public key/],
    [{ AUTH_JWT_PUBLIC_KEY: secp256k1 }, /^AUTH_JWT_PUBLIC_KEY must be an RSA, EC P-256, EC P-384 or Ed25519 key, got ec secp256k1$/],
    [{ AUTH_JWT_SECRET: "s".repeat(31) }, /^AUTH_JWT_SECRET must be at least 32 bytes/],
    [{ AUTH_JWT_SECRET: secret, AUTH_ADMIN_CLAIM: "roles" }, /^AUTH_ADMIN_CLAIM is set without AUTH_ADMIN_VALUE: set both or neither$/],
    [{ AUTH_JWT_SECRET: secret, AUTH_ADMIN_VALUE: "admin" }, /^AUTH_ADMIN_VALUE is set without AUTH_ADMIN_CLAIM: set both or neither$/],
    [{ AUTH_JWT_SECRET: secret, AUTH_USER_CLAIM: "user id" }, /^AUTH_USER_CLAIM must be a claim name/],
    [{ AUTH_JWT_SECRET: secret, AUTH_AGENT_CLAIMS: "email,org id" }, /^AUTH_AGENT_CLAIMS must list claim names/],
    [{ AUTH_JWT_SECRET: secret, AUTH_CLOCK_TOLERANCE_S: "301" }, /^AUTH_CLOCK_TOLERANCE_S must be between 0 and 300/],
    [{ AUTH_JWT_SECRET: secret, AUTH_CLOCK_TOLERANCE_S: "soon" }, /^AUTH_CLOCK_TOLERANCE_S must be a whole number/],
    // Checks with no key to apply them would leave JWTs unchecked without a word.
    [{ AUTH_ISSUER: "https://id.example.com/" }, /^AUTH_ISSUER is set but no JWT key is: set AUTH_JWKS_URL, AUTH_JWT_PUBLIC_KEY or AUTH_JWT_SECRET$/],
    [{ AUTH_AUDIENCE: "runledger" }, /^AUTH_AUDIENCE is set but no JWT key is/],
  ])("refuse %j with one line naming the variable", (env, message) => {
    expect(() => load(env)).toThrow(ConfigError);
    expect(() => load(env)).toThrow(message);
    const error = (() => {
      try {
        load(env);
      } catch (e) {
        return e as Error;
      }
    })()!;
    expect(error.message.split("\n")).toHaveLength(1);
  });

  it("start-up stops with one line when two JWT key sources are set (exit code 2)", async () => {
    const database = tempDatabaseUrl("runledger-startup-");
    const error = await run(process.execPath, serverCommand(), {
      cwd: ROOT,
      env: { ...process.env, PORT: "0", DATABASE_URL: database.url, AUTH_JWKS_URL: "https://id.example.com/jwks", AUTH_JWT_SECRET: secret },
    }).catch((e) => e);
    expect(error.code).toBe(2);
    expect(error.stderr.trim()).toMatch(
      /^runledger: AUTH_JWKS_URL and AUTH_JWT_SECRET are both set: JWT keys come from one of AUTH_JWKS_URL, AUTH_JWT_PUBLIC_KEY, AUTH_JWT_SECRET$/,
    );
    // The secret never reaches the output.
    expect(error.stderr).not.toContain(secret);
  });
});
