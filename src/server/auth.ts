// Optional bearer-token auth (API_TOKEN), compared in constant time.
import crypto from "node:crypto";

export function createTokenCheck(token: string | undefined): (header: string | null | undefined) => boolean {
  if (token === undefined) return () => true;
  const expected = crypto.createHash("sha256").update(`Bearer ${token}`).digest();
  return (header) => {
    if (typeof header !== "string") return false;
    const given = crypto.createHash("sha256").update(header).digest();
    return crypto.timingSafeEqual(given, expected);
  };
}
