// Marks: the time-ordered ids that bound a run's correlation window. They come
// from the UUID v6 generator LangGraph uses for checkpoint_id, so comparing a
// mark with a checkpoint id compares two moments, finer than a millisecond (the
// generator keeps a sub-millisecond counter: successive calls sort in call
// order). This is the only place runledger mints them.
import { uuid6 } from "@langchain/langgraph-checkpoint";

/** The clock sequence of runledger's marks; LangGraph's own checkpoint ids use others, so a mark never equals one. */
const MARK_CLOCKSEQ = -2;

/** A mark for now: taken just before a run starts, or just after it ends. */
export function mintMark(): string {
  return uuid6(MARK_CLOCKSEQ);
}
