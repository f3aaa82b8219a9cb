/**
 * Where one broker is in its life (SPEC §9, docs/operations.md#soft-stop), owned by the broker
 * and observed by the parts that act on it: the socket server refuses connections, intake
 * refuses sends, queues start no delivery, peers stop counting this broker as a master.
 */
export type BrokerState = 'running' | 'draining' | 'stopping' | 'stopped';

const ORDER: Record<BrokerState, number> = { running: 0, draining: 1, stopping: 2, stopped: 3 };

export class Lifecycle {
  #state: BrokerState = 'running';
  readonly #observers = new Set<(state: BrokerState) => void>();

  get state(): BrokerState {
    return this.#state;
  }

  /** new connections and sends are taken only while running */
  get isRunning(): boolean {
    return this.#state === 'running';
  }

  /** draining or past it: nothing new is delivered */
  get isStopping(): boolean {
    return this.#state !== 'running';
  }

  /** moves forward only; false when the broker is there or past it already */
  enter(state: BrokerState): boolean {
    if (ORDER[state] <= ORDER[this.#state]) return false;
    this.#state = state;
    for (const observer of [...this.#observers]) observer(state);
    return true;
  }

  /** `observer` hears every later change; the returned function stops it */
  observe(observer: (state: BrokerState) => void): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }
}
