// An MCP stdio client transport that owns its server's whole process tree.
//
// The SDK's StdioClientTransport spawns the server in runledger's own process
// group and, on close, signals only that one process. A server started through
// a launcher (`npx some-server`, `uv run`, a shell script) is a tree: the
// launcher dies and the real server lives on as an orphan. This transport starts
// each server as the leader of a new process group and stops the group: end of
// stdin first (the MCP way to ask a stdio server to leave), then SIGTERM to the
// group, then SIGKILL to what is left. The wire format is the SDK's own
// (ReadBuffer, serializeMessage), and so is the default environment.
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export interface StdioServerProcess {
  command: string;
  args: string[];
  /** Added to the SDK's safe default environment (PATH, HOME, ...); runledger's own variables are not passed. */
  env: Record<string, string>;
  cwd: string;
  /** How long each stopping step (end of stdin, then SIGTERM) waits before the next; default 2000 ms. */
  stopGraceMs?: number;
  /** Each line the server writes to stderr. */
  onStderrLine?: (line: string) => void;
  /** A line on stdout that is not a JSON-RPC message (a server logging to the wrong stream); it is skipped. */
  onStdoutNoise?: (error: Error) => void;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Process groups still running, signalled if runledger exits without stopping them (a crash, process.exit). */
const liveGroups = new Set<number>();
let exitHookInstalled = false;
function trackGroup(pgid: number): void {
  liveGroups.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const group of liveGroups) signalGroup(group, "SIGTERM");
  });
}

export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  #child: ChildProcess | undefined;
  #exit: ProcessExit | undefined;
  #exited: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  readonly #readBuffer = new ReadBuffer();

  constructor(private readonly params: StdioServerProcess) {}

  /** The server's process id (and process group id) once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** How the process ended, once it has. */
  get exit(): ProcessExit | undefined {
    return this.#exit;
  }

  start(): Promise<void> {
    if (this.#child) throw new Error("the transport was already started");
    const { command, args, env, cwd } = this.params;
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, {
        env: { ...getDefaultEnvironment(), ...env },
        cwd,
        stdio: ["pipe", "pipe", "pipe"],
        // A group of its own, so the whole tree can be stopped together (see the file comment).
        detached: true,
        windowsHide: true,
      });
      this.#child = child;
      this.#exited = new Promise((done) => {
        child.once("close", (code, signal) => {
          this.#exit = { code, signal };
          if (child.pid !== undefined) liveGroups.delete(child.pid);
          done();
          this.onclose?.();
        });
      });
      child.once("error", (error: NodeJS.ErrnoException) => {
        if (child.pid === undefined) {
          // It never started: no 'close' will follow for a process that does not exist.
          reject(error.code === "ENOENT" ? new Error(`command "${command}" not found (is it installed and on PATH?)`) : error);
          return;
        }
        this.onerror?.(error);
      });
      child.once("spawn", () => {
        trackGroup(child.pid!);
        resolve();
      });
      child.stdin!.on("error", (error) => this.onerror?.(error));
      child.stdout!.on("data", (chunk: Buffer) => {
        try {
          this.#readBuffer.append(chunk);
        } catch (error) {
          // More than the SDK's 10 MB limit without a line break: nothing sane will follow.
          this.onerror?.(error as Error);
          void this.close();
          return;
        }
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.#readBuffer.readMessage();
          } catch (error) {
            // The line was consumed; skip it and keep reading.
            this.params.onStdoutNoise?.(error as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      let pending = "";
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (text: string) => {
        const lines = (pending + text).split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) if (line.trim()) this.params.onStderrLine?.(line.trimEnd());
      });
      child.stderr!.on("end", () => {
        if (pending.trim()) this.params.onStderrLine?.(pending.trimEnd());
        pending = "";
      });
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#exit || this.#stopping || stdin.writableEnded) throw new Error("the server process is not running");
    if (!stdin.write(serializeMessage(message))) await new Promise((resolve) => stdin.once("drain", resolve));
  }

  /** Stops the process group; resolves once nothing of it runs any more (or SIGKILL was sent and waited for). */
  close(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const child = this.#child;
    if (!child || child.pid === undefined) return;
    const pgid = child.pid;
    const grace = this.params.stopGraceMs ?? 2_000;
    try {
      child.stdin?.end();
    } catch {
      // Already closed: the process is on its way out.
    }
    await Promise.race([this.#exited, delay(grace)]);
    // Also when the leader has left: anything it started is still in the group.
    signalGroup(pgid, "SIGTERM");
    if (!(await waitUntil(() => !groupAlive(pgid, child), grace))) {
      signalGroup(pgid, "SIGKILL");
      await waitUntil(() => !groupAlive(pgid, child), 1_000);
    }
    await Promise.race([this.#exited, delay(1_000)]);
    liveGroups.delete(pgid);
    this.#readBuffer.clear();
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

/**
 * Whether any process of the group still runs. On Linux /proc tells it exactly;
 * elsewhere kill(-pgid, 0) does, counting zombies (processes that have ended but
 * whose parent has not collected them), which only makes the wait longer.
 */
function groupAlive(pgid: number, leader: ChildProcess): boolean {
  if (leader.exitCode === null && leader.signalCode === null) return true;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // it ended while we looked
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so read after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() >= deadline) return false;
    await delay(20);
  }
  return true;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
