// What every agent definition has, whatever its kind, and where the values of
// the keys a config file leaves out come from. The kinds (kinds/) add their own
// fields; agent-file.ts reads definitions from RUNLEDGER_CONFIG.
import type { Config } from "../config.ts";

/** The agent startRun uses when it names none. */
export const DEFAULT_AGENT = "default";

/** Today's environment-driven settings; every agent key left out takes its value from here. */
export interface AgentDefaults {
  /** `OLLAMA_MODEL`. */
  model: string;
  /** `OLLAMA_THINK`; undefined leaves the model's default. */
  think: boolean | undefined;
  /** `SYSTEM_PROMPT`, `SYSTEM_PROMPT_FILE`'s contents, or the built-in prompt. */
  systemPrompt: string;
  /** `AGENT_RECURSION_LIMIT`. */
  recursionLimit: number;
}

/** The environment's settings, as loadConfig read them. */
export function agentDefaultsFrom(config: Pick<Config, "ollamaModel" | "ollamaThink" | "systemPrompt" | "recursionLimit">): AgentDefaults {
  return { model: config.ollamaModel, think: config.ollamaThink, systemPrompt: config.systemPrompt, recursionLimit: config.recursionLimit };
}

/** The fields of every agent definition. */
export interface AgentDefinitionBase {
  name: string;
  /** The kind's "type" in the config file. */
  type: string;
  description: string;
  /** The Ollama model each run of this agent talks to. */
  model: string;
  think: boolean | undefined;
  /** LangGraph super-steps per run. */
  recursionLimit: number;
  /** Its own queue: runs of this agent executing at once, on every instance together; absent, it shares its model's (MODEL_CONCURRENCY). */
  concurrency?: number;
  /** Its conversations idle `conversationDays` are deleted; absent, RETENTION_CONVERSATION_DAYS applies (docs/retention.md). */
  retention?: { conversationDays: number };
  /** Where every run of this agent is told of when it ends or waits, besides WEBHOOK_URL and the run's own (docs/webhooks.md); checked at start-up. */
  webhook?: { url: string; events?: ("RUN_ENDED" | "RUN_WAITING")[] };
  /**
   * Where the agent was declared, as a message prefix for problems found after
   * loading (a graph module that fails to import, a tool name clash), e.g.
   * `RUNLEDGER_CONFIG ./agents.json: agents.support`.
   */
  origin: string;
}
