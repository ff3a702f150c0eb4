// Runs the benchmark's fake model in a process of its own, so its timers keep
// their schedule while clients and servers load the other processes. Prints
// {"url": ...} on stdout once it listens.
import { startFakeModel } from "./fake-model.ts";

const model = await startFakeModel();
process.stdout.write(`${JSON.stringify({ url: model.url })}\n`);
process.on("SIGTERM", () => void model.close().then(() => process.exit(0)));
