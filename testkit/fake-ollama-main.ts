// The fake Ollama in a process of its own, for the benchmark: its timers keep
// their schedule while clients and servers load the other processes, and its
// CPU can be read apart from theirs. Requests are steered by the plan in their
// message (planResponder). It serves qwen3, and OLLAMA_MODEL too when that is
// set: the processes it serves inherit the environment, so runledger may ask
// for that one. Prints {"url": ...} on stdout once it listens.
//
//   node --import tsx testkit/fake-ollama-main.ts
import { planResponder, startFakeOllama } from "./fake-ollama.ts";

const models = [...new Set(["qwen3", process.env.OLLAMA_MODEL?.trim() || "qwen3"])];
const fake = await startFakeOllama({ models, responder: planResponder(), keepRequests: false, keepAliveTimeoutMs: 60_000 });
process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
process.on("SIGTERM", () => void fake.close().then(() => process.exit(0)));
