// Vitest global setup: the PostgreSQL and Redis servers of one `vitest run`,
// in one temporary folder, stopped and removed when the run ends.
//
// Servers whose programs are installed start here, in the background: the
// setup returns at once with their URLs (ports chosen up front), and the
// servers come up (about a second) while vitest starts its workers and loads
// the spec files. testkit/services.ts waits, if needed, until a server
// answers before it hands out its URL; specs should use it rather than inject().
//
// A missing program is not installed here, so a run whose specs need neither
// server never waits for apt: the first spec that asks for it installs and
// starts it in the same folder, under a lock, and the rest of the run shares it.
//
// Whatever started them, the end of the run stops them: the teardown normally,
// an exit or signal handler when the run is interrupted (vitest answers SIGINT
// and SIGTERM with process.exit() and skips teardowns), and a detached watchdog
// process if this process dies without running either (SIGKILL).
import type { TestProject } from "vitest/node";
import { ensureServer, findPostgresBin, findRedisServer, freePort, prepareDir, spawnWatchdog, stop } from "../../scripts/services.mjs";

export interface ProvidedServices {
  /** The folder holding this run's servers, their logs and state files. */
  dir: string;
  /**
   * Where the server listens once started (it may still be starting); null when
   * its program is missing and the first spec that needs it installs it.
   */
  postgresUrl: string | null;
  redisUrl: string | null;
}

declare module "vitest" {
  export interface ProvidedContext {
    testServices: ProvidedServices;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = prepareDir(undefined);
  const watchdog = spawnWatchdog(dir, process.pid);

  let stopped = false;
  const stopAll = () => {
    if (stopped) return;
    stopped = true;
    process.off("exit", stopAll);
    for (const [signal, handler] of signalHandlers) process.off(signal, handler);
    try {
      stop(dir);
    } finally {
      try {
        if (watchdog) process.kill(watchdog);
      } catch {
        // it saw the folder go and left already
      }
    }
  };
  const signalHandlers = (["SIGINT", "SIGTERM"] as const).map((signal) => {
    const handler = () => {
      stopAll();
      // With no other listener left, this one kept the process alive: end it as the signal would have.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  process.on("exit", stopAll);

  const postgresPort = findPostgresBin() ? await freePort() : null;
  let redisPort = findRedisServer() ? await freePort() : null;
  while (redisPort !== null && redisPort === postgresPort) redisPort = await freePort();

  // Each call takes the server's lock before it returns, so a spec asking
  // meanwhile waits for this start instead of starting another server.
  const starting = Promise.allSettled([
    postgresPort && ensureServer(dir, "postgres", { install: false, port: postgresPort }),
    redisPort && ensureServer(dir, "redis", { install: false, port: redisPort }),
  ]).then((results) => {
    // The first spec that needs a server that failed here tries again and fails with the reason.
    results.forEach((result, i) => {
      if (result.status === "rejected") console.warn(`test services: ${i ? "Redis" : "PostgreSQL"} did not start: ${(result.reason as Error).message}`);
    });
  });

  project.provide("testServices", {
    dir,
    postgresUrl: postgresPort ? `postgres://postgres@127.0.0.1:${postgresPort}/postgres` : null,
    redisUrl: redisPort ? `redis://127.0.0.1:${redisPort}` : null,
  });
  return async () => {
    await starting;
    stopAll();
  };
}
