// What every scenario is given and returns.
import type { Row } from "../lib/report.ts";

export interface ScenarioOptions {
  /** The fake Ollama (testkit/fake-ollama.ts), running in its own process. */
  modelUrl: string;
  /** Short runs for validating the harness; the numbers are not meant for publishing. */
  quick: boolean;
  /** Repetitions, when given on the command line. */
  reps?: number;
  /** Write a CPU profile of the runledger process (bench/results/profiles). */
  cpuProfile: boolean;
  /** Run the servers on Node 22 (testkit/built.ts prepares it) instead of the harness's Node; the outside scenario only. */
  node22?: boolean;
  log(message: string): void;
}

export interface ScenarioOutput {
  rows: Row[];
  notes: string[];
}

export interface Scenario {
  name: string;
  title: string;
  run(options: ScenarioOptions): Promise<ScenarioOutput>;
}

export function repetitions(options: ScenarioOptions, full: number, quick = 2): number {
  return options.reps ?? (options.quick ? quick : full);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
