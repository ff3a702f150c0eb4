// A real PostgreSQL and Redis for the scenarios that run several instances,
// started by the script the specs use (scripts/services.mjs) in a temporary
// folder, and their CPU time from /proc, so that the work runledger hands to
// them is counted beside its own.
//
// They stop with stop(), and also when the harness ends otherwise: an exit or
// signal handler while they run, and the script's watchdog process if the
// harness is killed outright.
import fs from "node:fs";
import path from "node:path";
import { spawnWatchdog, start, stop as stopServices } from "../../scripts/services.mjs";
import { processTree } from "../outside/proc.ts";

export interface BenchServices {
  postgresUrl: string;
  redisUrl: string;
  /** CPU time (user + system) PostgreSQL (postmaster, its workers and backends, those already gone included) and Redis have used so far, in ms. */
  cpuMs(): { postgres: number; redis: number };
  stop(): void;
}

/** USER_HZ: 100 on every Linux build Node supports. */
const TICKS_PER_SECOND = 100;

/** utime + stime of the process and its live descendants, plus cutime + cstime of the root: the backends it has reaped. */
function treeTicksWithReaped(root: number): number {
  const live = processTree(root).reduce((sum, s) => sum + s.ticks, 0);
  let reaped = 0;
  try {
    const stat = fs.readFileSync(`/proc/${root}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    reaped = Number(fields[13]) + Number(fields[14]);
  } catch {
    // gone: nothing more to count
  }
  return live + reaped;
}

function pidIn(dir: string, file: string): number {
  const { pid } = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as { pid: number | null };
  if (!pid) throw new Error(`no pid in ${file}`);
  return pid;
}

export async function startServices(log: (message: string) => void): Promise<BenchServices> {
  const { dir, postgresUrl, redisUrl } = await start({ log });
  const watchdog = spawnWatchdog(dir, process.pid);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    process.off("exit", stop);
    for (const [signal, handler] of handlers) process.off(signal, handler);
    try {
      stopServices(dir);
    } finally {
      try {
        process.kill(watchdog);
      } catch {
        // it saw the folder go and left already
      }
    }
  };
  // Ctrl+C or a SIGTERM to the harness ends it without its finally blocks:
  // exit as the signal would, and the exit handlers (this one, and the one
  // that kills the child processes) still run.
  const handlers = (["SIGINT", "SIGTERM"] as const).map((signal) => {
    const handler = () => process.exit(signal === "SIGINT" ? 130 : 143);
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  process.on("exit", stop);
  try {
    const postgresPid = pidIn(dir, "postgres.json");
    const redisPid = pidIn(dir, "redis.json");
    return {
      postgresUrl,
      redisUrl,
      cpuMs: () => ({
        postgres: (treeTicksWithReaped(postgresPid) * 1000) / TICKS_PER_SECOND,
        redis: (treeTicksWithReaped(redisPid) * 1000) / TICKS_PER_SECOND,
      }),
      stop,
    };
  } catch (error) {
    stop();
    throw error;
  }
}
