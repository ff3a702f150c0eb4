// The SSRF guard: a webhook may call only public addresses, unless
// WEBHOOK_ALLOW_PRIVATE is set. Checked twice: at input, on the URL as given (an
// IP literal or a localhost name is refused there, with a ValidationError),
// and at delivery, on every address the name resolves to, through the lookup
// the connection itself uses, so a name that resolves elsewhere later (DNS
// rebinding) is refused too.
import dns from "node:dns";
import type { LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { ValidationError } from "../domain/errors.ts";
import { WEBHOOK_EVENTS, type WebhookEventValue, type WebhookTarget } from "../domain/webhooks.ts";

export const WEBHOOK_URL_MAX_CHARS = 2048;

/** A webhook input as the API takes it. */
export interface WebhookInput {
  url: string;
  events?: readonly WebhookEventValue[] | null;
}

/** What validating a webhook needs to know of the deployment. */
export interface WebhookPolicy {
  /** WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  /** WEBHOOK_SECRET is set: without it nothing can be signed, so no webhook is accepted. */
  canSign: boolean;
}

/** Only global unicast addresses: no private, loopback, link-local, unique-local, carrier-grade NAT, multicast or reserved ones. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === "unicast";
}

/** Why the URL may not be called, or null. Names are checked only when they are localhost's; others wait for their addresses (publicLookup). */
export function refusalOf(url: URL, allowPrivate: boolean): string | null {
  if (url.protocol !== "https:" && url.protocol !== "http:") return `a webhook URL must be http or https, not ${url.protocol.replace(/:$/, "")}`;
  if (allowPrivate) return null;
  // "localhost." is localhost: a name's trailing dot only says it is absolute.
  const host = url.hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return `${host} is a local name; set WEBHOOK_ALLOW_PRIVATE=true to call it`;
  if (ipaddr.isValid(host) && !isPublicAddress(host)) return `${host} is not a public address; set WEBHOOK_ALLOW_PRIVATE=true to call it`;
  return null;
}

/** The webhook as the run records it: a checked URL and its events (both, when none are given). ValidationError on field `webhook`. */
export function requireWebhook(input: WebhookInput, policy: WebhookPolicy, field = "webhook"): WebhookTarget {
  if (!policy.canSign) throw new ValidationError("webhooks are signed with WEBHOOK_SECRET, which this deployment does not set", field);
  const raw = input.url.trim();
  if (raw.length > WEBHOOK_URL_MAX_CHARS) throw new ValidationError(`a webhook URL has at most ${WEBHOOK_URL_MAX_CHARS} characters`, `${field}.url`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError(`${JSON.stringify(raw.slice(0, 100))} is not an absolute URL`, `${field}.url`);
  }
  const refusal = refusalOf(url, policy.allowPrivate);
  if (refusal) throw new ValidationError(refusal, `${field}.url`);
  const events = input.events ?? WEBHOOK_EVENTS;
  if (events.length === 0) throw new ValidationError("a webhook needs at least one event (RUN_ENDED, RUN_WAITING), or none given for both", `${field}.events`);
  return { url: url.toString(), events: WEBHOOK_EVENTS.filter((e) => events.includes(e)) };
}

/** A thrown refusal at delivery: not retried, the address is the deployment's policy, not a passing failure. */
export class WebhookRefusedError extends Error {
  override name = "WebhookRefusedError";
}

/** dns.lookup, refusing a name that resolves to any address that is not public (the connection uses the addresses checked). */
export function publicLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 4);
      const list = addresses as dns.LookupAddress[];
      const bad = allowPrivate ? undefined : list.find((a) => !isPublicAddress(a.address));
      if (bad) return callback(new WebhookRefusedError(`${hostname} resolves to ${bad.address}, which is not a public address`), "", 4);
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
