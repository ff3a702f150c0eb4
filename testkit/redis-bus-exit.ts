// Run as a child process by test/event-bus-redis.spec.ts: uses two Redis event
// bus instances the way a server does, closes them, and then must exit by
// itself: nothing of the bus may keep the process alive after close().
import { connectRedisEventBus } from "../src/storage/event-bus/redis.ts";

const [url, keyPrefix] = process.argv.slice(2) as [string, string];
const options = { retention: 100, graceMs: 60_000, subscriberQueueLimit: 100, keyPrefix };
const a = await connectRedisEventBus(url, options);
const b = await connectRedisEventBus(url, options);
const run = a.openRun("exit-run", "exit-conversation");
run.publish({ type: "status", status: "running", errorCode: null, errorMessage: null });
await run.flushed();
const runSub = (await b.subscribeRun("exit-run"))!;
await runSub.next();
const parked = runSub.next();
const conversationSub = await b.subscribeConversation("exit-conversation");
const changeSub = await b.subscribeConversationChanges();
b.onCancelRequest(() => {});
await a.requestCancel("exit-run");
await Promise.all([a.close(), b.close()]);
await parked;
await conversationSub.return!();
await changeSub.return!();
process.stdout.write("closed\n");
