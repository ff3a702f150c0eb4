// When a store tells its listeners. Streamed events change a store many times
// a second (a fast model sends hundreds of tokens); its listeners are told at
// most once per scheduled turn, with every change made since, so a page renders
// once per animation frame however fast the stream is.

/**
 * Calls `flush` once, later. A store asks again only after `flush` ran, so
 * there is at most one pending call per store.
 */
export type Scheduler = (flush: () => void) => void;

/** Tells at once, on every change (what tests of every intermediate state want). */
export const syncScheduler: Scheduler = (flush) => flush();

/** Tells after the current task's changes: every event of one network read in one notification. */
export const microtaskScheduler: Scheduler = (flush) => queueMicrotask(flush);

interface FrameGlobals {
  requestAnimationFrame?: (callback: () => void) => unknown;
  document?: { visibilityState?: string };
}

/**
 * The default: the next animation frame where there is one (a browser tab in
 * view), and a 16 ms timer elsewhere (Node, a hidden tab, which runs no frames;
 * browsers slow its timers instead). A frame that never comes (the tab hidden
 * after the request) is stood in for by a timer after a second.
 */
export const frameScheduler: Scheduler = (flush) => {
  const globals = globalThis as FrameGlobals;
  const raf = globals.requestAnimationFrame;
  if (typeof raf !== "function" || globals.document?.visibilityState === "hidden") {
    setTimeout(flush, 16);
    return;
  }
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    clearTimeout(fallback);
    flush();
  };
  const fallback = setTimeout(once, 1_000);
  raf.call(globalThis, once);
};
