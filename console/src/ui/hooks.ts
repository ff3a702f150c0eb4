// The console's data: the connection's state, the conversation list and one
// conversation, each kept current by subscriptions (never by polling), on the
// client SDK: its list store, and its run follower with exact resume.
import { createConversationList, followRunEvents, type ConversationListSnapshot, type ConversationListStore, type RunEventsDocument } from "@runledger/client";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Api, ConnectionState, Outcome } from "../api/client.ts";
import { AGENTS, CONVERSATION, ME, RUN_EVENTS } from "../api/documents.ts";
import type { Agent, ConversationDetails, ConversationRow, Principal, RunEvent } from "../api/types.ts";
import { applyEvent, emptyLiveRun, isEnded, type LiveRun } from "../state/run-live.ts";
import type { StartedRun } from "../state/conversation-view.ts";

const LIST_PAGE = 50;
// A conversation's latest runs and checkpoints; older ones are summarized. Each
// snapshot reads every listed run's messages, which costs in proportion.
const RUN_PAGE = 20;
const CHECKPOINT_PAGE = 50;

export function useConnection(api: Api): ConnectionState {
  const [state, setState] = useState(api.getState());
  useEffect(() => {
    setState(api.getState());
    return api.onState(() => setState(api.getState()));
  }, [api]);
  return state;
}

/** The current time, updated while `active` (a running run's duration ticks). */
export function useNow(active: boolean, intervalMs = 200): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [active, intervalMs]);
  return now;
}

/** The agents the server offers (read once per page: they change only when the server restarts). */
export function useAgents(api: Api): { agents: Agent[] | null; error: string | null } {
  const [agents, setAgents] = useState<Agent[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    api.query(AGENTS, {}).then(
      (data) => current && setAgents(data.agents),
      (e: Error) => current && setError(`Could not read the agents: ${e.message}`),
    );
    return () => {
      current = false;
    };
  }, [api]);
  return { agents, error };
}

/**
 * Who the credential stands for, read once per Api (a new credential is a new
 * Api); a failed read is tried again after the next reconnection.
 */
export function usePrincipal(api: Api, reconnects: number): { principal: Principal | null; error: string | null } {
  const [principal, setPrincipal] = useState<Principal | null>(null);
  const [error, setError] = useState<string | null>(null);
  const known = principal !== null;
  useEffect(() => {
    if (known) return;
    let current = true;
    api.query(ME, {}).then(
      (data) => {
        if (!current) return;
        setPrincipal(data.me);
        setError(null);
      },
      (e: Error) => current && setError(`Could not read who is signed in: ${e.message}`),
    );
    return () => {
      current = false;
    };
  }, [api, reconnects, known]);
  return { principal, error };
}

const NO_LIST: ConversationListSnapshot = { phase: "loading", rows: [], hasMore: false, loadingMore: false, attached: false, error: null, deleted: new Set() };

/** What the list shows: the SDK's snapshot, and the owner it lists (null: every one the caller may see). */
export interface ListView extends ConversationListSnapshot {
  owner: string | null;
}

/**
 * The conversation list: the SDK's list store, one per owner filter. It reads
 * the first page, merges conversationsChanged notices, and reads the first
 * page again whenever the notices start over (a reconnection, a server restart).
 */
export function useConversationList(api: Api, owner: string | null) {
  const store = useRef<ConversationListStore | null>(null);
  const [snapshot, setSnapshot] = useState<ConversationListSnapshot>(NO_LIST);
  useEffect(() => {
    const list = createConversationList(api.client, { owner, pageSize: LIST_PAGE });
    store.current = list;
    setSnapshot(list.getSnapshot());
    const off = list.subscribe(() => setSnapshot(list.getSnapshot()));
    return () => {
      off();
      list.close();
      if (store.current === list) store.current = null;
    };
  }, [api, owner]);
  const loadMore = useCallback(() => void store.current?.loadMore(), []);
  const list: ListView = { ...snapshot, owner };
  const error = snapshot.error
    ? `Could not read the conversations: ${snapshot.error.message.replace(/^could not read (more )?the conversations: /, "")}`
    : null;
  return { list, error, loadMore, loadingMore: snapshot.loadingMore };
}

export interface Notice {
  id: number;
  text: string;
}

/**
 * One conversation: its snapshot (re-read whenever the list is told it changed,
 * when one of its runs ends, and after a reconnection) and the live events of
 * its running runs (runEvents, replayed from the last seq the console has).
 */
export function useConversation(api: Api, id: string, row: ConversationRow | undefined, reconnects: number, handoff: StartedRun | null) {
  const [details, setDetails] = useState<ConversationDetails | null>(null);
  const [missing, setMissing] = useState(false);
  const [notices, setNotices] = useState<Notice[]>([]);
  const [live, setLive] = useState<ReadonlyMap<string, LiveRun>>(new Map());
  const [started, setStarted] = useState<StartedRun[]>(handoff ? [handoff] : []);
  const following = useRef(new Map<string, () => void>());
  const readState = useRef({ busy: false, again: false });
  const noticeIds = useRef(0);

  const notify = useCallback((text: string) => setNotices((list) => [...list, { id: ++noticeIds.current, text }]), []);
  const dismiss = useCallback((noticeId: number) => setNotices((list) => list.filter((n) => n.id !== noticeId)), []);
  // A failed read's notice says the page may be out of date, which the next read
  // that succeeds undoes (a restart fails a read or two, then the page reads
  // again): that read takes it away, a later failure replaces it. Refusals of the
  // user's own actions stay until dismissed.
  const readNotice = useRef<number | null>(null);
  const readFailed = useCallback((text: string) => {
    const previous = readNotice.current;
    const notice = { id: ++noticeIds.current, text };
    readNotice.current = notice.id;
    setNotices((list) => [...list.filter((n) => n.id !== previous), notice]);
  }, []);
  const readSucceeded = useCallback(() => {
    const shown = readNotice.current;
    if (shown === null) return;
    readNotice.current = null;
    setNotices((list) => list.filter((n) => n.id !== shown));
  }, []);

  // One read at a time, and one more if asked meanwhile: urql shares a query
  // with an identical one in flight, so a read asked for after a change could
  // otherwise be answered by one that started before it.
  const refetch = useCallback(() => {
    const reads = readState.current;
    if (reads.busy) {
      reads.again = true;
      return;
    }
    reads.busy = true;
    const read = () => {
      reads.again = false;
      api
        .query(CONVERSATION, { id, runs: RUN_PAGE, checkpoints: CHECKPOINT_PAGE })
        .then(
          (data) => {
            setDetails(data.conversation);
            setMissing(data.conversation === null);
            readSucceeded();
          },
          (e: Error) => readFailed(`Could not read the conversation: ${e.message}`),
        )
        .finally(() => {
          if (reads.again) read();
          else reads.busy = false;
        });
    };
    read();
  }, [api, id, readFailed, readSucceeded]);

  // The last seq applied per run, kept apart from the rendered state so a resubscription reads it at once.
  const lastSeqs = useRef(new Map<string, number>());
  // Runs whose terminal event has been applied, known at once rather than at the
  // next render: a snapshot or a started run's answer that still names one must
  // not follow it again (its stream, asked after that seq, ends at once, again
  // and again, and the badge would say "catching up…" for good).
  const endedRuns = useRef(new Set<string>());

  const follow = useCallback(
    (runId: string) => {
      if (following.current.has(runId) || endedRuns.current.has(runId)) return;
      // The SDK's follower: each event once and in seq order, resumed after the
      // last seq applied on every new subscription (a reconnection, a restart,
      // a slow-subscriber cut); a skipped seq comes with its gap.
      const stop = followRunEvents(api.client, runId, {
        after: lastSeqs.current.get(runId) ?? 0,
        document: RUN_EVENTS as RunEventsDocument<RunEvent>,
        onEvent: (event, gap) => {
          lastSeqs.current.set(runId, event.seq);
          setLive((previous) => {
            const run = previous.get(runId) ?? emptyLiveRun(runId);
            const next = applyEvent(run, event, gap);
            return next === run ? previous : new Map(previous).set(runId, next);
          });
        },
        onEnd: (end) => {
          following.current.delete(runId);
          if (end.reason === "terminal") endedRuns.current.add(runId);
          // Refused (a deleted run, another user's): given up, and said so.
          else notify(`Live events of a run stopped: ${end.error.message}`);
          refetch();
        },
      });
      following.current.set(runId, stop);
    },
    [api, notify, refetch],
  );

  // Stop following when the conversation is left.
  useEffect(
    () => () => {
      for (const stop of following.current.values()) stop();
      following.current.clear();
    },
    [],
  );

  useEffect(() => {
    if (handoff) follow(handoff.id);
  }, [handoff, follow]);

  // Every notice about this conversation (run started or ended, renamed) means the snapshot is stale.
  useEffect(() => {
    if (row?.activeRun) follow(row.activeRun.id);
    refetch();
  }, [row, follow, refetch]);

  useEffect(() => {
    if (reconnects > 0) refetch();
  }, [reconnects, refetch]);

  useEffect(() => {
    if (details?.activeRun) follow(details.activeRun.id);
  }, [details, follow]);

  /** A run started from this page: shown at once and followed before the snapshot has it. */
  const track = useCallback(
    (run: StartedRun) => {
      setStarted((list) => [...list, run]);
      follow(run.id);
      refetch();
    },
    [follow, refetch],
  );

  /** Reports a refusal or failure of an action; true when it succeeded. */
  const report = useCallback(
    <T>(action: string, outcome: Outcome<T>): outcome is { ok: true; value: T } => {
      if (!outcome.ok) notify(`${action}: ${outcome.refusal.code} — ${outcome.refusal.message}`);
      return outcome.ok;
    },
    [notify],
  );

  return { details, missing, live, started, notices, dismiss, notify, report, refetch, track };
}
