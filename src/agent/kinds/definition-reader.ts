// What a kind of agent reads its own keys of the config file with: the reader
// of the file (agent-file.ts) hands itself over as this, so a kind's problems
// come out as the same one-line ConfigError, with the line and column in the file.
import { z } from "zod";
import type { AgentDefaults } from "../definitions.ts";
import type { JsonPath } from "../json-locations.ts";

export type { JsonPath };

export interface DefinitionReader {
  /** The environment's settings, for keys left out. */
  readonly defaults: AgentDefaults;
  /** The config file's folder: what relative paths resolve against. */
  readonly folder: string;
  /** Where a value sits, as a message prefix: `RUNLEDGER_CONFIG ./agents.json: agents.support`. */
  origin(at: JsonPath): string;
  /** Throws the one-line ConfigError for a problem at `at` (`key`: the problem is the key itself, not its value). */
  fail(at: JsonPath, problem: string, options?: { key?: boolean }): never;
  /** A path from the file, resolved against the file's folder; an empty one is an error. */
  path(value: string, at: JsonPath): string;
  /** `value`, unless it is an empty string (an error). */
  nonEmpty(value: string | undefined, at: JsonPath): string | undefined;
  /** Fails on the first value listed twice. */
  unique(values: readonly string[], at: JsonPath): void;
  /** `${NAME}` → the environment variable NAME (a missing one is an error). */
  substitute(value: string, at: JsonPath): string;
}

/** Names of agents and MCP servers. */
export const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
export const NAME_RULE = "letters, digits, _ and - only, starting with a letter, at most 64 characters";

export const stringList = z.array(z.string());
export const stringMap = z.record(z.string(), z.string());

/** The keys every kind of agent has beside "type". */
export const commonKeys = {
  description: z.string().optional(),
  model: z.string().optional(),
  think: z.boolean().optional(),
  recursionLimit: z.number().int().min(1).max(10_000).optional(),
  concurrency: z.number().int().min(1).max(10_000).optional(),
  retention: z.strictObject({ conversationDays: z.number().int().min(1).max(36_500) }).optional(),
  webhook: z.strictObject({ url: z.string().min(1), events: z.array(z.enum(["RUN_ENDED", "RUN_WAITING"])).optional() }).optional(),
};

/** Why a file could not be read, in a few words. */
export function ioReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "no such file or folder";
  if (code === "EACCES") return "permission denied";
  if (code === "EISDIR") return "it is a folder";
  return (error as Error).message.split("\n")[0] ?? String(error);
}
