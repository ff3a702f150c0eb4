// What it costs a run's events to cross from where a run executes to where
// its subscribers are, for the two layouts the every-core design weighed: a
// worker thread (postMessage) or a cluster's worker process (node's IPC with
// the "advanced" serialization, as src/cluster/primary.ts sets it). The same
// peer (bench/lib/crossing-peer.mjs) sends token events as the event bus
// carries them, 2,500 a second over 50 runs (the concurrent scenario's rate),
// and this process receives them. Measured per layout: the time from send to
// receipt, how busy each side's event loop was per event, and the memory one
// more executing context costs once it has loaded LangGraph, LangChain and
// the Ollama client. A prototype of the crossing, not of the whole layout.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { repetitions, sleep, type Scenario } from "./scenario.ts";

const PEER = fileURLToPath(new URL("../lib/crossing-peer.mjs", import.meta.url));
const RATE_PER_MS = 2.5;
const RUNS = 50;

type Layout = "thread" | "process";

interface PeerMessage {
  kind: string;
  sentAt?: number;
  activeMs?: number;
  rss?: number;
}

/** The peer in a worker thread or a child process, with one way to send to it and to wait for its answers. */
interface Peer {
  send(message: object): void;
  next(kind: string): Promise<PeerMessage>;
  onEvent(handler: (message: PeerMessage) => void): void;
  close(): Promise<void>;
}

function startPeer(layout: Layout): Peer {
  const waiting = new Map<string, (message: PeerMessage) => void>();
  let eventHandler: (message: PeerMessage) => void = () => {};
  const receive = (message: PeerMessage) => {
    if (message.kind === "event") return eventHandler(message);
    const resolve = waiting.get(message.kind);
    waiting.delete(message.kind);
    resolve?.(message);
  };
  const next = (kind: string) => new Promise<PeerMessage>((resolve) => waiting.set(kind, resolve));
  if (layout === "thread") {
    const worker = new Worker(PEER);
    worker.on("message", receive);
    return {
      send: (message) => worker.postMessage(message),
      next,
      onEvent: (handler) => (eventHandler = handler),
      close: async () => void (await worker.terminate()),
    };
  }
  const child: ChildProcess = fork(PEER, [], { serialization: "advanced", stdio: ["ignore", "ignore", "inherit", "ipc"] });
  child.on("message", (message) => receive(message as PeerMessage));
  return {
    send: (message) => child.send(message),
    next,
    onEvent: (handler) => (eventHandler = handler),
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      }),
  };
}

interface Crossing {
  latency: Percentiles;
  senderUsPerEvent: number;
  receiverUsPerEvent: number;
  /** MiB that one more context costs with the packages loaded. */
  contextMiB: number;
}

async function measure(layout: Layout, count: number): Promise<Crossing> {
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const peer = startPeer(layout);
  // Its messages arrive on a later turn: waiting now catches the first.
  await peer.next("ready");
  try {
    const latencies: number[] = [];
    let received = 0;
    peer.onEvent((message) => {
      latencies.push(performance.timeOrigin + performance.now() - message.sentAt!);
      received++;
    });
    peer.send({ type: "elu" });
    await peer.next("elu");
    const eluBefore = performance.eventLoopUtilization();
    peer.send({ type: "send", count, perMs: RATE_PER_MS, runs: RUNS });
    await peer.next("sent");
    const deadline = Date.now() + 10_000;
    while (received < count && Date.now() < deadline) await sleep(5);
    const receiver = performance.eventLoopUtilization(eluBefore);
    peer.send({ type: "elu" });
    const sender = await peer.next("elu");
    if (received < count) throw new Error(`${layout}: ${received} of ${count} events arrived`);

    peer.send({ type: "load" });
    const loaded = await peer.next("loaded");
    await sleep(200);
    const contextBytes = layout === "thread" ? process.memoryUsage().rss - rssBefore : loaded.rss!;
    return {
      latency: percentiles(latencies),
      senderUsPerEvent: (sender.activeMs! * 1000) / count,
      receiverUsPerEvent: (receiver.active * 1000) / count,
      contextMiB: contextBytes / 2 ** 20,
    };
  } finally {
    await peer.close();
  }
}

export const crossing: Scenario = {
  name: "crossing",
  title: "Events crossing from an executing thread or process",
  async run(options) {
    const reps = repetitions(options, 3, 1);
    const count = options.quick ? 2_500 : 10_000;
    const results: Record<Layout, Crossing[]> = { thread: [], process: [] };
    for (let rep = 0; rep < reps; rep++) {
      // Alternated, so a noisy moment does not fall on one layout only.
      for (const layout of rep % 2 === 0 ? (["thread", "process"] as const) : (["process", "thread"] as const)) {
        options.log(`crossing: ${layout}, repetition ${rep + 1} of ${reps}`);
        results[layout].push(await measure(layout, count));
      }
    }
    const label = "child process, node IPC (the cluster's way)";
    const caseText = `${count.toLocaleString("en")} token events, ${RATE_PER_MS * 1000}/s over ${RUNS} runs; worker thread`;
    const rows: Row[] = [
      {
        scenario: "crossing",
        case: caseText,
        metric: "send → receipt",
        runledger: dist(
          "ms",
          results.thread.map((r) => r.latency),
        ),
        baseline: {
          label,
          measure: dist(
            "ms",
            results.process.map((r) => r.latency),
          ),
        },
      },
      {
        scenario: "crossing",
        case: caseText,
        metric: "sender's event loop busy per event",
        runledger: scalar(
          "µs",
          results.thread.map((r) => r.senderUsPerEvent),
        ),
        baseline: {
          label,
          measure: scalar(
            "µs",
            results.process.map((r) => r.senderUsPerEvent),
          ),
        },
      },
      {
        scenario: "crossing",
        case: caseText,
        metric: "receiver's event loop busy per event",
        runledger: scalar(
          "µs",
          results.thread.map((r) => r.receiverUsPerEvent),
        ),
        baseline: {
          label,
          measure: scalar(
            "µs",
            results.process.map((r) => r.receiverUsPerEvent),
          ),
        },
      },
      {
        scenario: "crossing",
        case: "one more executing context with LangGraph, LangChain and the Ollama client loaded; worker thread",
        metric: "memory (thread: the process's RSS growth; process: its RSS)",
        runledger: scalar(
          "MiB",
          results.thread.map((r) => r.contextMiB),
        ),
        baseline: {
          label,
          measure: scalar(
            "MiB",
            results.process.map((r) => r.contextMiB),
          ),
        },
      },
    ];
    return {
      rows,
      notes: [
        "The crossing alone: the peer sends events as the event bus carries them and this process receives them; neither executes runs nor serves clients.",
        "A whole cluster worker also holds runledger's HTTP, GraphQL and storage modules, which a thread layout would keep on the main thread only.",
      ],
    };
  },
};
