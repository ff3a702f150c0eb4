// client.conversations(filter): a conversation list whose store
// (conversation-list.ts) is imported when the first one is made, so an app's
// bundler splits it off and a page without a list never downloads it. Until
// it is loaded, the list shows `loading`; what is asked of it meanwhile
// (attach, detach, refresh, loadMore, close) is done once it is.
import type { ActionError, ClientCore } from "./core.js";
import type { ConversationList, ConversationListOptions, ConversationListSnapshot } from "./conversation-list.js";
import { Value } from "./observable.js";

export function lazyConversationList(core: ClientCore, options: ConversationListOptions = {}): ConversationList {
  /** Whether it should listen: attach() and detach() until it is loaded; null once closed. */
  let wanted: boolean | null = options.attach ?? true;
  let store: ConversationList | undefined;
  const value = new Value<ConversationListSnapshot>({
    phase: "loading",
    rows: [],
    hasMore: false,
    loadingMore: false,
    attached: wanted,
    error: null,
    deleted: new Set(),
  });
  const loaded = import("./conversation-list.js").then(
    ({ ConversationListStore }) => {
      if (wanted === null) return;
      const made = (store = new ConversationListStore(core, { ...options, attach: wanted }));
      made.subscribe(() => value.set(made.getSnapshot()));
      value.set(made.getSnapshot());
    },
    (error: Error) => {
      const failed: ActionError = { code: "NETWORK", message: `could not load the conversation list: ${error.message}` };
      value.set({ ...value.getSnapshot(), phase: "error", error: failed });
    },
  );
  const want = (to: boolean | null, act: (made: ConversationList) => void) => {
    if (wanted === null) return;
    wanted = to;
    if (store) act(store);
    else value.set({ ...value.getSnapshot(), attached: !!to });
  };
  return {
    getSnapshot: value.getSnapshot,
    subscribe: value.subscribe,
    attach: () => want(true, (made) => made.attach()),
    detach: () => want(false, (made) => made.detach()),
    close: () => want(null, (made) => made.close()),
    refresh: () => loaded.then(() => store?.refresh()),
    loadMore: () => loaded.then(() => store?.loadMore()),
  };
}
