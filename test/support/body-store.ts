import { MemoryStore } from '../../src/broker/store/memory.js';
import type { StoredMessage, StoreEvent } from '../../src/broker/store/store.js';

/**
 * A MemoryStore that keeps the bodies it was given and reads them back on the next microtask,
 * as the durable store does from disk: a queue may then keep only a window of bodies in memory
 * (its cold rows and reading back), tested in process on a fake clock. Bodies go with `remove`.
 */
export class BodyStore extends MemoryStore {
  readonly #bodies = new Map<string, unknown>();
  readonly events: StoreEvent[] = [];
  override readonly readsBodies: boolean = true;

  override async append(messages: readonly StoredMessage[]): Promise<void> {
    for (const m of messages) this.#bodies.set(m.messageId, m.data);
  }

  override record(events: readonly StoreEvent[]): void {
    for (const e of events) if (e.kind === 'remove') this.#bodies.delete(e.messageId);
    this.events.push(...events);
  }

  override async readBodies(messageIds: readonly string[]): Promise<unknown[]> {
    return messageIds.map((id) => this.#bodies.get(id));
  }

  /** bodies kept for messages not removed */
  get size(): number {
    return this.#bodies.size;
  }
}
