import type { Queue } from '../queue/queue.js';

export interface IdleQueuesOptions {
  readonly queues: Map<string, Queue>;
  /** seconds (idleQueueTimeout), read at each sweep so a reload applies */
  readonly timeoutSeconds: () => number;
  readonly now: () => number;
  /** a queue was forgotten (a cluster deletes its placement, SPEC §13) */
  readonly forgotten?: (name: string) => void;
}

/**
 * Forgets queues nobody uses (SPEC §7, docs/configuration.md `idleQueueTimeout`): a queue found
 * idle (nothing held, in flight or delayed, no subscriber) at two sweeps `timeout` apart is
 * closed and dropped, and its metric series with it (metrics read the router's queues). A
 * sweep runs every half timeout (0.25 to 30 s).
 */
export class IdleQueues {
  readonly #options: IdleQueuesOptions;
  /** queues seen idle, since when */
  readonly #idleSince = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;

  constructor(options: IdleQueuesOptions) {
    this.#options = options;
  }

  /** forgets what has been idle long enough; returns how many */
  sweep(): number {
    const { queues, now: clock, timeoutSeconds } = this.#options;
    const now = clock();
    const timeoutMs = timeoutSeconds() * 1000;
    let forgotten = 0;
    for (const [name, queue] of queues) {
      if (!queue.isIdle) {
        this.#idleSince.delete(name);
        continue;
      }
      const since = this.#idleSince.get(name);
      if (since === undefined) this.#idleSince.set(name, now);
      else if (now - since >= timeoutMs) {
        queue.close();
        queues.delete(name);
        this.#idleSince.delete(name);
        forgotten++;
        this.#options.forgotten?.(name);
      }
    }
    for (const name of this.#idleSince.keys()) if (!queues.has(name)) this.#idleSince.delete(name);
    return forgotten;
  }

  start(): void {
    const everyMs = Math.min(30_000, Math.max(250, (this.#options.timeoutSeconds() * 1000) / 2));
    this.#timer = setTimeout(() => {
      this.sweep();
      this.start();
    }, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
