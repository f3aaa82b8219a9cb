import { MemoryStore } from '../../src/broker/store/memory.js';
import type { RecoveredMessage, RecoveredState, StoredMessage, StoreEvent } from '../../src/broker/store/store.js';

/**
 * A MemoryStore that keeps the bodies it was given and reads them back on the next microtask,
 * as the durable store does from disk: a queue may then keep only a window of bodies in memory
 * (its cold rows and reading back), tested in process on a fake clock. Bodies go with `remove`.
 */
export class BodyStore extends MemoryStore {
  readonly #bodies = new Map<string, unknown>();
  /** messages not removed, in the order appended (seq order), with their records as the log replays them */
  readonly #live = new Map<string, { message: StoredMessage; records: Array<{ group: string; nbRequeues: number; notBefore: number }> }>();
  readonly events: StoreEvent[] = [];
  override readonly readsBodies: boolean = true;

  override async append(messages: readonly StoredMessage[]): Promise<void> {
    for (const m of messages) {
      this.#bodies.set(m.messageId, m.data);
      this.#live.set(m.messageId, { message: { ...m }, records: [] });
    }
  }

  override record(events: readonly StoreEvent[]): void {
    for (const e of events) {
      const live = this.#live.get(e.messageId);
      if (e.kind === 'remove') {
        this.#bodies.delete(e.messageId);
        this.#live.delete(e.messageId);
      } else if (live && e.kind === 'assign') {
        for (const group of e.groups) if (!live.records.some((r) => r.group === group)) live.records.push({ group, nbRequeues: 0, notBefore: 0 });
      } else if (live && e.kind === 'settle') {
        live.records = live.records.filter((r) => r.group !== e.group);
      } else if (live && (e.kind === 'deliver' || e.kind === 'requeue')) {
        // as the durable log: a delivery cut short by a crash counts (log-batch.ts)
        const [nbRequeues, notBefore] = e.kind === 'deliver' ? [e.nbRequeues + 1, 0] : [e.nbRequeues, e.notBefore];
        live.records = live.records.map((r) => (r.group === e.group ? { group: r.group, nbRequeues, notBefore } : r));
      }
    }
    this.events.push(...events);
  }

  /** what a restart gets back: every message not removed, with its body and its records */
  override async load(): Promise<RecoveredState> {
    const messages: RecoveredMessage[] = [...this.#live.values()].map(({ message, records }) => ({ message: { ...message, data: this.#bodies.get(message.messageId) }, records: [...records] }));
    return { messages, recent: [] };
  }

  override async readBodies(messageIds: readonly string[]): Promise<unknown[]> {
    return messageIds.map((id) => this.#bodies.get(id));
  }

  /** bodies kept for messages not removed */
  get size(): number {
    return this.#bodies.size;
  }
}
