// REDIS_URL as the Redis bus's messages show it: checked to be a Redis URL,
// its password hidden.

/** The URL without its password, for messages; throws when it is not a Redis URL. */
export function describeUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`REDIS_URL must be a redis:// or rediss:// URL, got "${url.replace(/:[^:@/]*@/, ":***@")}"`);
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new Error(`REDIS_URL must be a redis:// or rediss:// URL, got a ${parsed.protocol}// URL`);
  }
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}
