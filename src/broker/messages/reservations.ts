import { WILDCARD } from '../../protocol/channel.js';
import type { Rules } from '../access/rules.js';
import type { Subscription } from '../queue/subscription.js';

/** Reserved channel ids (SPEC §5, a `!` read rule): the first subscription that reads one holds it. */
export class Reservations {
  readonly #owners = new Map<string, Subscription>();

  /** true when `subscription` may read `id`: not reserved, free, or its own already */
  reserve(rules: Rules, subscription: Subscription, id: string): boolean {
    const [endpoint, version] = subscription.queue.split('/') as [string, string];
    if (id === WILDCARD || !rules.isReserved(endpoint, version, id)) return true;
    const key = `${subscription.queue}/${id}`;
    const owner = this.#owners.get(key);
    if (owner && owner !== subscription) return false;
    this.#owners.set(key, subscription);
    return true;
  }

  owner(queue: string, id: string): Subscription | undefined {
    return this.#owners.get(`${queue}/${id}`);
  }

  release(subscription: Subscription, id: string): void {
    const key = `${subscription.queue}/${id}`;
    if (this.#owners.get(key) === subscription) this.#owners.delete(key);
  }
}
