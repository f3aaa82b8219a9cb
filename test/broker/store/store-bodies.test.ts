import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { LogStore, type LogStoreOptions } from '../../../src/broker/store/log.js';
import type { StoredMessage, StoreEvent } from '../../../src/broker/store/store.js';

/**
 * Bodies on disk (bounded memory, issue 5): a queue drops the bodies of messages far from
 * delivery and the durable store reads them back from the log, wherever compaction moved them.
 */
const dirs: string[] = [];
const stores: LogStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function open(options: LogStoreOptions = {}, dir = join(mkdtempSync(join(tmpdir(), 'whisker-bodies-')), 'store')): { store: LogStore; dir: string } {
  dirs.push(dir);
  const store = new LogStore(dir, options);
  stores.push(store);
  return { store, dir };
}

let seq = 0;
function message(n: number): StoredMessage {
  return { seq: ++seq, messageId: `m-${n}`, queue: 'q/v1', id: String(n % 3), data: { n, text: `body ${n} ${'é'.repeat(n % 7)}` }, created: 1000 + n, acceptedAt: Date.now(), from: 'producer' };
}

const bodyOf = (n: number) => message(n).data;
const ack = (messageId: string): StoreEvent[] => [
  { kind: 'assign', messageId, groups: ['c|1'] },
  { kind: 'settle', messageId, group: 'c|1', outcome: 'acked' },
  { kind: 'remove', messageId },
];

/** what a queue does with a message far from delivery */
function dropBodies(messages: StoredMessage[]): void {
  for (const m of messages) m.data = undefined;
}

describe('LogStore: bodies read back from disk', () => {
  test('bodies dropped from memory come back in the order asked; a removed message gives undefined', async () => {
    const { store, dir } = open();
    await store.load();
    const messages = Array.from({ length: 3000 }, (_, n) => message(n));
    await store.append(messages.slice(0, 1000));
    await store.append(messages.slice(1000));
    dropBodies(messages);
    store.record(ack('m-5'));
    const asked = ['m-2999', 'm-0', 'm-1500', 'm-7'];
    expect(await store.readBodies(asked)).toEqual([bodyOf(2999), bodyOf(0), bodyOf(1500), bodyOf(7)]);
    // the same as the text they were stored from, not parsed (a queue delivers it as it is)
    expect(await store.readBodyTexts(asked)).toEqual([2999, 0, 1500, 7].map((n) => JSON.stringify(bodyOf(n))));
    // and from a restart with no body kept in memory
    await store.close();
    const reopened = open({ replayBodyBytes: 0 }, dir).store;
    const state = await reopened.load();
    expect(state.messages).toHaveLength(2999);
    expect(state.messages.every((m) => m.message.data === undefined)).toBe(true);
    expect(await reopened.readBodies([...asked, 'm-5'])).toEqual([bodyOf(2999), bodyOf(0), bodyOf(1500), bodyOf(7), undefined]);
  });

  test('a restart keeps only the oldest replayed bodies in memory (replayBodyBytes); the rest are read back', async () => {
    const { store, dir } = open();
    await store.load();
    const messages = Array.from({ length: 5000 }, (_, n) => message(n));
    await store.append(messages);
    await store.close();
    const again = open({ replayBodyBytes: 64 * 1024 }, dir).store;
    const state = await again.load();
    const inMemory = state.messages.filter((m) => m.message.data !== undefined);
    expect(inMemory.length).toBeGreaterThan(100);
    expect(inMemory.length).toBeLessThan(1000);
    // the oldest are kept: they are delivered first
    expect(inMemory.map((m) => m.message.messageId)).toEqual(state.messages.slice(0, inMemory.length).map((m) => m.message.messageId));
    const ids = state.messages.map((m) => m.message.messageId);
    expect(await again.readBodies(ids)).toEqual(messages.map((_, n) => bodyOf(n)));
  });

  test('compaction copies bodies that are only on disk into the snapshot, and reads follow them there', async () => {
    const options = { compactBytes: 32 * 1024, compactRatio: 2, dedupeWindowMs: 0 };
    const { store, dir } = open(options);
    await store.load();
    const keep = Array.from({ length: 50 }, (_, n) => message(n));
    await store.append(keep);
    store.record([{ kind: 'assign', messageId: 'm-1', groups: ['c|1', 'c|*'] }, { kind: 'requeue', messageId: 'm-1', group: 'c|1', nbRequeues: 2, notBefore: 7 }]);
    dropBodies(keep);
    // churn that makes the log compact while those 50 wait with their bodies on disk only
    for (let round = 0; round < 20; round++) {
      const batch = Array.from({ length: 100 }, (_, i) => message(10_000 + round * 100 + i));
      await store.append(batch);
      store.record(batch.flatMap((m) => ack(m.messageId)));
      const asked = await store.readBodies(keep.map((m) => m.messageId));
      expect(asked).toEqual(keep.map((_, n) => bodyOf(n)));
    }
    expect(store.stats.compactions).toBeGreaterThan(0);
    await store.close();
    const state = await open(options, dir).store.load();
    expect(state.messages.map((m) => m.message.messageId)).toEqual(keep.map((m) => m.messageId));
    expect(state.messages.map((m) => m.message.data)).toEqual(keep.map((_, n) => bodyOf(n)));
    expect(state.messages[1]!.records).toEqual([{ group: 'c|1', nbRequeues: 2, notBefore: 7 }, { group: 'c|*', nbRequeues: 0, notBefore: 0 }]);
  });

  test('messages removed and new ones accepted while a snapshot is written: each body read back is its own message\'s', async () => {
    const options = { compactBytes: 16 * 1024, compactRatio: 2, dedupeWindowMs: 0 };
    const { store, dir } = open(options);
    await store.load();
    let live = Array.from({ length: 400 }, (_, n) => message(n));
    await store.append(live);
    dropBodies(live);
    // each round removes the oldest 40 and accepts 40 new ones, which take the freed slots,
    // while compactions (in the background) capture the index and write their snapshots
    let next = 400;
    for (let round = 0; round < 80; round++) {
      store.record(live.slice(0, 40).flatMap((m) => ack(m.messageId)));
      const fresh = Array.from({ length: 40 }, () => message(next++));
      live = [...live.slice(40), ...fresh];
      await store.append(fresh);
      dropBodies(fresh);
    }
    expect(store.stats.compactions).toBeGreaterThan(1);
    const number = (m: StoredMessage) => Number(m.messageId.slice(2));
    expect(await store.readBodies(live.map((m) => m.messageId))).toEqual(live.map((m) => bodyOf(number(m))));
    await store.close();
    const state = await open(options, dir).store.load();
    expect(state.messages.map((m) => m.message.messageId)).toEqual(live.map((m) => m.messageId));
  });
});
