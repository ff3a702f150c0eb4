// Types for scripts/services.mjs, which stays plain JavaScript so it runs uncompiled.

export type ServiceName = "postgres" | "redis" | "chromium";
type Log = (line: string) => void;

export class ServiceError extends Error {}
export const CHROMIUM_ARGS: readonly string[];
export const SERVICE_NAMES: readonly ServiceName[];

export function findPostgresBin(): string | null;
export function findRedisServer(): string | null;
export function findChromium(): string | null;

/** Installs the missing ones of `names` (all when empty) from Debian's packages; resolves with the packages installed. */
export function install(names?: ServiceName[], options?: { log?: Log }): Promise<string[]>;
export function withLock<T>(lockFile: string, fn: () => Promise<T>, options?: { timeoutMs?: number }): Promise<T>;
export function freePort(): Promise<number>;

/** Makes (or takes, when empty) the folder the servers live in; a new temporary folder when `dir` is not given. */
export function prepareDir(dir?: string): string;
export function startPostgres(dir: string, options?: { port?: number }): Promise<{ url: string; port: number }>;
export function startRedis(dir: string, options?: { port?: number; databases?: number }): Promise<{ url: string; port: number }>;
/** The running server of `kind` in `dir`, started (and installed, unless `install` is false) when it is not yet; null when missing and not to be installed. */
export function ensureServer(
  dir: string,
  kind: "postgres" | "redis",
  options?: { install?: boolean; log?: Log; port?: number },
): Promise<{ url: string; port: number } | null>;
export function start(options?: { dir?: string; log?: Log }): Promise<{ dir: string; postgresUrl: string; redisUrl: string }>;
/** Stops the servers in `dir` and removes it; synchronous. */
export function stop(dir: string, options?: { timeoutMs?: number }): void;
/** A detached process that stops the servers in `dir` once process `pid` is gone; returns its pid. */
export function spawnWatchdog(dir: string, pid?: number): number;
