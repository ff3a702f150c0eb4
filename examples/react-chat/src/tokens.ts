// Short-lived JWTs for the signed-in user, signed with runledger's
// AUTH_JWT_SECRET (HS256): what an app's server would hand its page after
// checking the user's own session. node:crypto only.
import { createHmac } from "node:crypto";
import type { Token } from "./shared.ts";

const base64url = (value: string | Buffer) => Buffer.from(value).toString("base64url");

/** A JWT for `subject` that expires in `ttlSeconds`, signed with `secret` (HS256). */
export function hs256Token(secret: string, subject: string, ttlSeconds: number, claims: Record<string, unknown> = {}): Token {
  const now = Math.floor(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const payload = base64url(JSON.stringify({ ...claims, sub: subject, iat: now, exp: now + ttlSeconds }));
  const signature = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
  return { token: `${header}.${payload}.${signature}`, expiresAt: (now + ttlSeconds) * 1000 };
}
