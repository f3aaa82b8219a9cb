import type { LogStore } from '../../src/broker/store/log.js';
import type { MessageStore } from '../../src/broker/store/store.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A durable store whose answer to some appends comes late (as a slow history write would): the
 * message is in the log, its id held by the store's index, while the router's in-order admission
 * waits (messages/appends.ts). `delayOf` picks each append's delay in ms.
 */
export function slowly(store: LogStore, delayOf: () => number): MessageStore {
  return {
    load: () => store.load(),
    append: async (messages) => {
      await store.append(messages);
      const ms = delayOf();
      if (ms > 0) await sleep(ms);
    },
    record: (events) => store.record(events),
    readsBodies: store.readsBodies,
    ...(store.messageIds ? { messageIds: store.messageIds } : {}),
    readBodies: (ids) => store.readBodies(ids),
    isHealthy: () => store.isHealthy(),
    close: () => store.close(),
  } as MessageStore;
}
