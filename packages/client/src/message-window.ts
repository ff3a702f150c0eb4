// Which of a long thread's stored messages a conversation store shows (its
// `pageSize` option): at first the newest page, then as many older ones as
// loadOlder() asked for. A loadOlder() made before the thread's first read
// waits for it.
export class MessageWindow {
  /** Messages per page; null: the whole thread. */
  readonly pageSize: number | null;
  /** The oldest stored messages not shown; null until the first read. */
  #hidden: number | null = null;
  #waiting: { count: number; resolve: (shown: number) => void }[] = [];

  constructor(pageSize: number | undefined) {
    this.pageSize = pageSize === undefined ? null : Math.max(1, Math.floor(pageSize));
  }

  /** How many older stored messages are not shown. */
  get hidden(): number {
    return this.#hidden ?? 0;
  }

  /** A loadOlder() waits for the first read. */
  get loading(): boolean {
    return this.#waiting.length > 0;
  }

  /** Another conversation: nothing read yet. */
  reset(): void {
    this.#hidden = null;
  }

  /**
   * Shows `count` more older messages; resolves with how many it showed.
   * `changed` is called when that changes what is shown (at once, or when a
   * waiting call is queued).
   */
  older(count: number, changed: () => void): Promise<number> {
    if (this.#hidden === null) {
      return new Promise<number>((resolve) => {
        this.#waiting.push({ count, resolve });
        changed();
      });
    }
    const shown = Math.min(count, this.#hidden);
    if (shown > 0) {
      this.#hidden -= shown;
      changed();
    }
    return Promise.resolve(shown);
  }

  /**
   * The window after a read of `length` stored messages: at first the newest
   * page; later, as many older ones as were shown (new ones add to the end).
   * loadOlder() calls that waited for the read are applied now: whether there were any.
   */
  fit(length: number): boolean {
    const most = this.pageSize === null ? 0 : Math.max(0, length - this.pageSize);
    this.#hidden = this.#hidden === null ? most : Math.min(this.#hidden, most);
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const { count, resolve } of waiting) {
      const shown = Math.min(count, this.#hidden);
      this.#hidden -= shown;
      resolve(shown);
    }
    return waiting.length > 0;
  }

  /** loadOlder() calls still waiting for a read of a conversation no longer followed: they show nothing. */
  dropWaiting(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const { resolve } of waiting) resolve(0);
  }
}
