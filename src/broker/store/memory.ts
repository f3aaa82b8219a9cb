import type { MessageStore, RecoveredState, StoredMessage, StoreEvent } from './store.js';

/**
 * Keeps nothing: the queues' own memory is the only copy. For tests and for brokers that
 * accept losing their queues on a restart (the reference's behaviour).
 */
export class MemoryStore implements MessageStore {
  async load(): Promise<RecoveredState> {
    return { messages: [], recent: [] };
  }

  async append(_messages: readonly StoredMessage[]): Promise<void> {}

  record(_events: readonly StoreEvent[]): void {}

  /** the queues' memory is the only copy: they must keep every body */
  readonly readsBodies: boolean = false;

  async readBodies(messageIds: readonly string[]): Promise<unknown[]> {
    return messageIds.map(() => undefined);
  }

  isHealthy(): boolean {
    return true;
  }

  async close(): Promise<void> {}
}
