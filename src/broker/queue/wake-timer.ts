/**
 * The one timer of a queue: armed for the earliest thing due (an ack deadline, a delayed
 * requeue, a ttl) and moved only when something earlier arrives, never one timer per message.
 */
export class WakeTimer {
  readonly #now: () => number;
  readonly #onWake: () => void;
  #timer: NodeJS.Timeout | null = null;
  #wakeAt = Infinity;

  constructor(now: () => number, onWake: () => void) {
    this.#now = now;
    this.#onWake = onWake;
  }

  /** wake no later than `at` (ms epoch) */
  armAt(at: number): void {
    if (at >= this.#wakeAt) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#wakeAt = at;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, at - this.#now()));
    this.#timer.unref();
  }

  cancel(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#wakeAt = Infinity;
  }

  #fire(): void {
    this.#timer = null;
    this.#wakeAt = Infinity;
    this.#onWake();
  }
}
