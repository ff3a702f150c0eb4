// Both event bus backends against the one conformance suite.
import { describeEventBusConformance } from "./event-bus.ts";
import { MemoryEventBus } from "../../src/storage/event-bus/memory.ts";

describeEventBusConformance("MemoryEventBus", async (options) => {
  const bus = new MemoryEventBus(options);
  return { a: bus, b: bus, close: () => bus.close() };
});
