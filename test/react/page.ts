// The browser side of the React specs: a page (served apart from runledger,
// which it reaches at ?api=) that renders the chat (chat.ts) with React, or with Preact through preact/compat
// when bundled that way, and hands the spec a handle on window.sdkPage. With
// a state from a server render (window.__RUNLEDGER_STATE__) it hydrates the
// server's markup instead of rendering afresh.
import { createElement as h, useState, type ReactNode } from "react";
import { createRoot, hydrateRoot } from "react-dom/client";
import { createRunledgerClient, syncScheduler, type ConversationState, type RunEvent } from "@runledger/client";
import { RunledgerProvider } from "@runledger/react";
import { Chat, Checkpoints, ConversationList, Interrupts, RunPanel, stats } from "./chat.ts";

declare global {
  interface Window {
    __RUNLEDGER_STATE__?: ConversationState;
    sdkPage: SdkPage;
  }
}

export interface SdkPage {
  stats: typeof stats;
  /** When each animation frame's callbacks began to run, since the page loaded (performance.now()). */
  frames: number[];
  /** Shows another conversation (null: a new one). */
  show(conversationId: string | null): void;
  submit(message: string, agent?: string): Promise<{ ok: boolean; runId?: string; conversationId?: string; error?: string }>;
  stop(): Promise<boolean>;
  /** The conversation view's loadOlder(): how many older messages it showed. */
  loadOlder(): Promise<number>;
  /** The checkpoint list's loadOlder() (?checkpoints): how many it added. */
  loadOlderCheckpoints(): Promise<number>;
  /** Shows another run in the run panel (?run). */
  showRun(runId: string | null): void;
  /** Approves every tool call of the first interrupt listed (?interrupts), through useInterrupts' respond(). */
  approve(): Promise<{ ok: boolean; runId?: string; error?: string }>;
  /** Every run event the shown store applied, in order (seq and run). */
  events: { runId: string; seq: number; type: string }[];
  /** Errors React reported (a hydration mismatch among them). */
  errors: string[];
}

const params = new URLSearchParams(location.search);
// ?sync: the store tells of every change at once (the benchmark's baseline), rather than once per frame.
const client = createRunledgerClient({ url: params.get("api") ?? location.origin, ...(params.has("sync") ? { schedule: syncScheduler } : {}) });
const errors: string[] = [];
const events: SdkPage["events"] = [];
// When each frame's callbacks ran (performance.now() in the first of them), not the frame's start time that
// requestAnimationFrame passes: a busy frame runs its callbacks late, and a render from them belongs to it.
const frames: number[] = [];
const tick = () => {
  frames.push(performance.now());
  requestAnimationFrame(tick);
};
requestAnimationFrame(tick);

let setShown: (id: string | null) => void = () => {};
let setRun: (id: string | null) => void = () => {};
const initial = window.__RUNLEDGER_STATE__ ?? null;

// ?pageSize=<n>: the chat shows the newest n stored messages; ?checkpoints[=<n>]: the checkpoint list too, n a page.
const pageSize = params.has("pageSize") ? Number(params.get("pageSize")) : undefined;
const checkpointPage = params.get("checkpoints") ? Number(params.get("checkpoints")) : undefined;

function App(): ReactNode {
  const [shown, set] = useState<string | null>(initial?.conversationId ?? params.get("c"));
  setShown = set;
  // ?run[=<id>]: the run panel (useRun); ?interrupts: the shown conversation's interrupts (useInterrupts).
  const [run, setRunShown] = useState<string | null>(params.get("run") || null);
  setRun = setRunShown;
  return h(
    RunledgerProvider,
    { client },
    h(Chat, { conversationId: shown, initial, pageSize }),
    params.has("list") ? h(ConversationList, null) : null,
    params.has("checkpoints") ? h(Checkpoints, { conversationId: shown, pageSize: checkpointPage }) : null,
    params.has("run") ? h(RunPanel, { runId: run }) : null,
    params.has("interrupts") ? h(Interrupts, { conversationId: shown }) : null,
  );
}

let watched: object | null = null;
/** Notes the events of whichever store the chat shows. */
function watchEvents(): void {
  const store = stats.view?.store;
  if (!store || store === watched) return;
  watched = store;
  store.onEvent((event: RunEvent) => events.push({ runId: event.runId, seq: event.seq, type: event.__typename }));
}
const root = document.getElementById("root")!;
const onRecoverableError = (error: unknown) => errors.push(String((error as Error)?.message ?? error));
/** ?connectedFirst: hydrate only once the client's connection is up (its live state then differs from the server's). */
async function connectedFirst(): Promise<void> {
  if (!params.has("connectedFirst")) return;
  await new Promise<void>((resolve) => {
    const check = () => client.connection.getSnapshot().status === "connected" && (off(), resolve());
    const off = client.connection.subscribe(check);
    check();
  });
}
if (initial) void connectedFirst().then(() => hydrateRoot(root, h(App, null), { onRecoverableError }));
else createRoot(root, { onRecoverableError }).render(h(App, null));
window.addEventListener("error", (event) => errors.push(event.message));

window.sdkPage = {
  stats,
  frames,
  show: (id) => setShown(id),
  async submit(message, agent) {
    const sent = await stats.view!.submit(message, agent ? { agent } : {});
    return sent.ok ? { ok: true, ...sent.value } : { ok: false, error: `${sent.error.code}: ${sent.error.message}` };
  },
  async stop() {
    return (await stats.view!.stop()).ok;
  },
  loadOlder: () => stats.view!.loadOlder(),
  loadOlderCheckpoints: () => stats.checkpoints!.loadOlder(),
  showRun: (id) => setRun(id),
  async approve() {
    const view = stats.interrupts!;
    const first = view.interrupts[0];
    if (!first || first.kind !== "tool_approval") return { ok: false, error: "no tool approval waits" };
    const answered = await view.respond(
      { toolCalls: first.value.toolCalls.map((c) => ({ id: c.id, decision: "approve" as const })) },
      { interruptId: first.id },
    );
    return answered.ok ? { ok: true, runId: answered.value.id } : { ok: false, error: answered.error.message };
  },
  events,
  errors,
};
// The store can change with each render (a switch): note the new one's events from its first.
const poll = () => {
  watchEvents();
  requestAnimationFrame(poll);
};
poll();
