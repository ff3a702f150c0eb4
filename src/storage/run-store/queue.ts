// Which queued runs a claim takes: shared by every backend, which only read the
// candidates and write the choice inside their claim transaction. Each pick
// goes, round robin, to the starter with the fewest runs executing (the picks
// of this claim counted), then to the one served least recently (whose latest
// admitted run was asked for earliest; never served comes first), then to the
// oldest run: one principal's burst waits behind everyone else's next run
// instead of in front of it.
import type { QueueReasonValue } from "../../domain/records.ts";

/** What a claim asks for. */
export interface ClaimRequest {
  /** The instance that will execute what it claims. */
  ownerId: string;
  /** How many more runs it can execute now (MAX_ACTIVE_RUNS minus its active ones). */
  room: number;
  /** The model endpoints it can run, each with its concurrency (runs executing at once, on every instance together). */
  endpoints: ReadonlyMap<string, number>;
  at: Date;
  /**
   * The queued runs this instance took the requests of: it knows their callers
   * fully (claims, a JWT to forward), so it gets the first chance at them; other
   * instances leave a run alone for `preferOwnMs` after it was queued. A run
   * this instance holds (paused after a 503) is taken only when listed here:
   * its backoff is over.
   */
  own?: ReadonlySet<string>;
  preferOwnMs?: number;
}

/** How many queued runs one claim looks at, oldest first. */
export const CLAIM_SCAN = 200;

export interface QueueCandidate {
  id: string;
  queuedAt: Date;
  endpoint: string | null;
  /** Whose turn it is: the starter, or the conversation for runs started by no one. */
  fairnessKey: string;
  queueReason: string | null;
  /** The instance whose paused run this is (requeueHeld): only it may admit it again. */
  heldBy: string | null;
}

export interface ClaimChoice {
  claim: string[];
  /** Runs left queued whose stored reason is no longer why they wait. */
  reasons: { id: string; reason: QueueReasonValue }[];
}

/**
 * `candidates` oldest first; `runningByEndpoint` and `runningByKey` count the
 * runs executing now (every instance).
 */
export function chooseClaims(
  request: Pick<ClaimRequest, "ownerId" | "room" | "endpoints" | "at" | "own" | "preferOwnMs">,
  candidates: readonly QueueCandidate[],
  runningByEndpoint: ReadonlyMap<string, number>,
  runningByKey: ReadonlyMap<string, number>,
  /** When each starter's latest admitted run was queued (ms since the epoch); absent: never served. */
  lastServedByKey: ReadonlyMap<string, number> = new Map(),
): ClaimChoice {
  const free = new Map<string, number>();
  for (const [endpoint, limit] of request.endpoints) free.set(endpoint, limit - (runningByEndpoint.get(endpoint) ?? 0));
  const load = new Map(runningByKey);
  const served = new Map(lastServedByKey);
  const before = (a: QueueCandidate, b: QueueCandidate) => {
    const byLoad = (load.get(a.fairnessKey) ?? 0) - (load.get(b.fairnessKey) ?? 0);
    if (byLoad !== 0) return byLoad < 0;
    return (served.get(a.fairnessKey) ?? -Infinity) < (served.get(b.fairnessKey) ?? -Infinity);
  };
  const othersFrom = request.at.getTime() - (request.preferOwnMs ?? 0);
  const pending = candidates.filter(
    (c) =>
      c.endpoint !== null &&
      request.endpoints.has(c.endpoint) &&
      (c.heldBy === null ? request.own?.has(c.id) || c.queuedAt.getTime() <= othersFrom : c.heldBy === request.ownerId && request.own?.has(c.id) === true),
  );
  const taken = new Set<string>();
  while (taken.size < request.room) {
    let pick: QueueCandidate | undefined;
    for (const c of pending) {
      if (taken.has(c.id) || (free.get(c.endpoint!) ?? 0) <= 0) continue;
      if (!pick || before(c, pick)) pick = c; // candidates come oldest first: a tie keeps the older
    }
    if (!pick) break;
    taken.add(pick.id);
    free.set(pick.endpoint!, free.get(pick.endpoint!)! - 1);
    load.set(pick.fairnessKey, (load.get(pick.fairnessKey) ?? 0) + 1);
    served.set(pick.fairnessKey, Infinity);
  }
  const reasons: ClaimChoice["reasons"] = [];
  for (const c of pending) {
    if (taken.has(c.id)) continue;
    const reason: QueueReasonValue = (free.get(c.endpoint!) ?? 0) > 0 ? "INSTANCE_FULL" : "MODEL_BUSY";
    if (c.queueReason !== reason) reasons.push({ id: c.id, reason });
  }
  return { claim: [...taken], reasons };
}
