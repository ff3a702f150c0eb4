// Stand-in: the shared test services module will replace this file. It keeps
// the same export: a throwaway Redis (`redis-server` from the system packages)
// on a free loopback port, started once per test process and stopped when the
// process exits. Tests share it: every key a test writes must be unique to it.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

let redis: Promise<{ url: string }> | null = null;

export function redisServer(): Promise<{ url: string }> {
  redis ??= startRedis();
  return redis;
}

async function startRedis(): Promise<{ url: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "runledger-redis-"));
  // A port can be taken between the probe and redis-server's bind: try again.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(
      "redis-server",
      ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no"],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code, signal) => reject(new Error(`redis-server exited (${code ?? signal}) before answering: ${stderr.trim()}`))),
    );
    exited.catch(() => {});
    try {
      await Promise.race([untilAnswers(port, 5000), exited]);
    } catch (error) {
      child.kill("SIGKILL");
      if (attempt < 3) continue;
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    stopAtExit(child, dir);
    return { url: `redis://127.0.0.1:${port}` };
  }
}

function stopAtExit(child: ChildProcess, dir: string) {
  // Nothing of the server may keep this process alive.
  child.unref();
  child.stderr!.destroy();
  process.once("exit", () => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  // A test worker can also be ended by a signal, and then "exit" handlers do
  // not run: a watchdog stops the server once this process is gone.
  const watchdog = spawn(
    "sh",
    ["-c", 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 0.5; done; kill -9 "$2" 2>/dev/null; rm -rf "$3"', "watchdog", String(process.pid), String(child.pid), dir],
    { stdio: "ignore", detached: true },
  );
  watchdog.unref();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once the server answers PING with PONG; polls, since it needs a few milliseconds to listen. */
async function untilAnswers(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ping(port)) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.setTimeout(500);
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}
