// The primary's half of the cluster bus (cluster.ts): it holds no event and no
// log, only the workers' channels. A request from one worker goes to every
// other one, and the first that has the run answers (or null when none has it);
// a watch is answered once every worker knows of it; a run's events go from
// the worker executing it to the workers that follow it, each worker's in the
// order it sent them; conversation changes go to every worker, in the one order
// the relay receives them. When a worker goes, every other one is told, and
// what it was asked is answered for it.
import type { BusMessage, BusPort, Request } from "./cluster-protocol.ts";

interface Asked {
  /** The worker that asked, and its request's id. */
  from: number;
  id: number;
  /** "any": the first answer that is not null wins (a run has one owner); "all": every worker must answer. */
  mode: "any" | "all";
  waiting: Set<number>;
  answered: boolean;
}

export class ClusterRelay {
  /** Every attached worker; `ready` once its bus said hello (a worker still starting is asked nothing). */
  readonly #ports = new Map<number, { port: BusPort; stop: () => void; ready: boolean }>();
  readonly #asked = new Map<number, Asked>();
  /** Who watches which conversation, for a worker whose bus says hello later. */
  readonly #watches = new Map<string, Set<number>>();
  #nextWorker = 1;
  #nextKey = 1;

  /** Relays a worker's bus; `id` names it (a cluster worker's id), else one is chosen. Returns its id. */
  attach(port: BusPort, id = this.#nextWorker++): number {
    if (this.#ports.has(id)) throw new Error(`worker ${id} is already attached`);
    this.#nextWorker = Math.max(this.#nextWorker, id + 1);
    const stop = port.onMessage((message) => this.#onMessage(id, message));
    this.#ports.set(id, { port, stop, ready: false });
    return id;
  }

  /** The worker is gone (it exited, or its bus closed): what it was asked is answered for it, and the others are told. */
  detach(id: number): void {
    const entry = this.#ports.get(id);
    if (!entry) return;
    entry.stop();
    this.#ports.delete(id);
    for (const conversationId of [...this.#watches.keys()]) this.#unwatch(conversationId, id);
    for (const [key, asked] of this.#asked) {
      if (asked.from === id) this.#asked.delete(key);
      else if (asked.waiting.has(id)) this.#answer(key, asked, id, null);
    }
    for (const other of this.#ports.values()) other.port.post({ bus: "gone", worker: id });
  }

  /** The workers relayed now. */
  get workers(): number[] {
    return [...this.#ports.keys()];
  }

  close(): void {
    for (const id of [...this.#ports.keys()]) {
      this.#ports.get(id)!.stop();
      this.#ports.delete(id);
    }
    this.#asked.clear();
    this.#watches.clear();
  }

  #post(to: number, message: BusMessage) {
    this.#ports.get(to)?.port.post(message);
  }

  /** The workers whose bus listens, but `from`. */
  #others(from: number): number[] {
    return [...this.#ports].filter(([id, entry]) => id !== from && entry.ready).map(([id]) => id);
  }

  #onMessage(from: number, message: BusMessage) {
    switch (message.bus) {
      case "ev":
      case "fend":
        return this.#post(message.to, message);
      case "unfollow":
        return this.#post(message.to, { ...message, from });
      case "cev":
        for (const to of message.to) this.#post(to, message);
        return;
      case "req":
        return this.#ask(from, message);
      case "res": {
        const asked = this.#asked.get(message.id);
        if (asked) this.#answer(message.id, asked, from, message.value);
        return;
      }
      case "unwatch":
        this.#unwatch(message.conversationId, from);
        for (const to of this.#others(from)) this.#post(to, { bus: "unwatch", conversationId: message.conversationId, from });
        return;
      case "change":
        this.#post(from, message);
        for (const to of this.#others(from)) this.#post(to, { bus: "change", change: message.change });
        return;
      case "cancel":
        for (const to of this.#others(from)) this.#post(to, message);
        return;
      case "hello": {
        const entry = this.#ports.get(from);
        if (!entry) return;
        entry.ready = true;
        // What the others watch, before anything it publishes (its answers go nowhere: key 0 is never asked).
        for (const [conversationId, watchers] of this.#watches) {
          for (const watcher of watchers) if (watcher !== from) this.#post(from, { bus: "watch", id: 0, conversationId, from: watcher });
        }
        return;
      }
      case "bye":
        return this.detach(from);
      default:
        return;
    }
  }

  #ask(from: number, message: { id: number } & Request) {
    if (message.op === "ping") return this.#post(from, { bus: "res", id: message.id, value: true });
    if (message.op === "watch") this.#watch(message.conversationId, from);
    const others = this.#others(from);
    const mode = message.op === "watch" ? "all" : "any";
    if (others.length === 0) return this.#post(from, { bus: "res", id: message.id, value: mode === "all" ? true : null });
    const key = this.#nextKey++;
    this.#asked.set(key, { from, id: message.id, mode, waiting: new Set(others), answered: false });
    const forwarded: BusMessage =
      message.op === "watch" ? { bus: "watch", id: key, conversationId: message.conversationId, from } : { ...message, bus: "req", id: key, from };
    for (const to of others) this.#post(to, forwarded);
  }

  #watch(conversationId: string, worker: number) {
    let watchers = this.#watches.get(conversationId);
    if (!watchers) this.#watches.set(conversationId, (watchers = new Set()));
    watchers.add(worker);
  }

  #unwatch(conversationId: string, worker: number) {
    const watchers = this.#watches.get(conversationId);
    if (!watchers) return;
    watchers.delete(worker);
    if (watchers.size === 0) this.#watches.delete(conversationId);
  }

  #answer(key: number, asked: Asked, by: number, value: unknown) {
    if (!asked.waiting.delete(by)) return;
    if (asked.mode === "any" && value !== null && !asked.answered) {
      asked.answered = true;
      this.#post(asked.from, { bus: "res", id: asked.id, value, owner: by });
    }
    if (asked.waiting.size > 0) return;
    this.#asked.delete(key);
    if (!asked.answered) this.#post(asked.from, { bus: "res", id: asked.id, value: asked.mode === "all" ? true : null });
  }
}
