// The fake Ollama in a process of its own, for the benchmark: its timers keep
// their schedule while clients and servers load the other processes. Requests
// are steered by the plan in their message (planResponder). Prints
// {"url": ...} on stdout once it listens.
import { planResponder, startFakeOllama } from "./fake-ollama.ts";

const fake = await startFakeOllama({ responder: planResponder(), keepRequests: false, keepAliveTimeoutMs: 60_000 });
process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
process.on("SIGTERM", () => void fake.close().then(() => process.exit(0)));
