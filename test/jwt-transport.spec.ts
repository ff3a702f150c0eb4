// A JWT on every transport of a real server: accepted over HTTP while valid,
// refused once expired (401) or when not yet valid; a WebSocket opened with it is
// closed with 4401 when it expires, and `me` says whose it is. Tokens are signed
// here with the server's HS256 secret (AUTH_JWT_SECRET).
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { gql } from "../testkit/graphql.ts";
import { openRawSocket, operationResult, subscribe } from "../testkit/protocol.ts";
import type { App } from "../src/app.ts";

const SECRET = "a shared secret of at least thirty-two bytes!";
const ISSUER = "https://id.example.test";

async function token(claims: { sub: string; expiresInS: number; notBeforeS?: number; admin?: boolean }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  let jwt = new SignJWT({ roles: claims.admin ? ["runledger-admin"] : ["reader"] })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(claims.sub)
    .setIssuer(ISSUER)
    .setAudience("runledger")
    .setIssuedAt(now)
    .setExpirationTime(now + claims.expiresInS);
  if (claims.notBeforeS !== undefined) jwt = jwt.setNotBefore(now + claims.notBeforeS);
  return jwt.sign(new TextEncoder().encode(SECRET));
}

let fake: FakeOllama;
let app: App;

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({
    ollamaUrl: fake.url,
    env: {
      AUTH_JWT_SECRET: SECRET,
      AUTH_ISSUER: ISSUER,
      AUTH_AUDIENCE: "runledger",
      AUTH_ADMIN_CLAIM: "roles",
      AUTH_ADMIN_VALUE: "runledger-admin",
      AUTH_CLOCK_TOLERANCE_S: "0",
    },
  });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

describe("a JWT on HTTP and WebSocket", () => {
  it("is the user it names, or an admin by its claim; expired or not yet valid, 401 and nothing runs", async () => {
    const me = async (jwt?: string) => gql(app.url, "{ me { id role } }", {}, jwt ? { authorization: `Bearer ${jwt}` } : {});
    expect((await me(await token({ sub: "alice", expiresInS: 60 }))).data.me).toEqual({ id: "alice", role: "USER" });
    expect((await me(await token({ sub: "ops", expiresInS: 60, admin: true }))).data.me).toEqual({ id: "ops", role: "ADMIN" });
    for (const [what, jwt] of [
      ["expired", await token({ sub: "alice", expiresInS: -5 })],
      ["not yet valid", await token({ sub: "alice", expiresInS: 120, notBeforeS: 60 })],
      ["absent", undefined],
    ] as const) {
      const response = await fetch(`${app.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(jwt ? { authorization: `Bearer ${jwt}` } : {}) },
        body: JSON.stringify({ query: `mutation { startRun(input: { message: "hi" }) { __typename } }` }),
      });
      expect(response.status, what).toBe(401);
      expect((await response.json()).errors[0].extensions.code, what).toBe("UNAUTHENTICATED");
    }
    // Only the two valid principals asked; none of the refused ones started anything.
    const listed = await gql(
      app.url,
      "{ conversations(first: 5) { totalCount } }",
      {},
      { authorization: `Bearer ${await token({ sub: "ops", expiresInS: 60, admin: true })}` },
    );
    expect(listed.data.conversations.totalCount).toBe(0);
  });

  it("closes a WebSocket with 4401 when its token expires, after serving it until then", async () => {
    const jwt = await token({ sub: "alice", expiresInS: 2 });
    const socket = await openRawSocket(app.url, { init: { authorization: `Bearer ${jwt}` } });
    socket.send(subscribe("1", "{ me { id } }"));
    expect((await operationResult(socket, "1")).next).toEqual([{ data: { me: { id: "alice" } } }]);
    const closed = await socket.closed;
    expect(closed).toEqual({ code: 4401, reason: "Unauthorized" });

    // An expired token does not open one at all.
    const late = await openRawSocket(app.url);
    late.send({ type: "connection_init", payload: { authorization: `Bearer ${await token({ sub: "alice", expiresInS: -1 })}` } });
    expect(await late.closed).toEqual({ code: 4401, reason: "Unauthorized" });
  });
});
