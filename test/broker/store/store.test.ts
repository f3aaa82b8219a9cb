import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { LogStore, type LogStoreOptions } from '../../../src/broker/store/log.js';
import { decodeRecord } from '../../../src/broker/store/log-format.js';
import { type LogFile, type LogFs, nodeFs } from '../../../src/broker/store/log-fs.js';
import { shouldCompact } from '../../../src/broker/store/log-options.js';
import type { StoredMessage, StoreEvent } from '../../../src/broker/store/store.js';

const dirs: string[] = [];
const stores: LogStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempStoreDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'whisker-store-'));
  dirs.push(dir);
  return join(dir, 'store');
}

function open(dir: string, options: LogStoreOptions = {}): LogStore {
  const store = new LogStore(dir, options);
  stores.push(store);
  return store;
}

/** a store closed and opened again on the same directory: what a restart sees */
async function reopen(store: LogStore, dir: string, options: LogStoreOptions = {}) {
  await store.close();
  const next = open(dir, options);
  return { store: next, state: await next.load() };
}

let seq = 0;
function message(n: number, overrides: Partial<StoredMessage> = {}): StoredMessage {
  return { seq: ++seq, messageId: `m-${n}`, queue: 'q/v1', id: '1', data: { n }, created: 1000 + n, acceptedAt: Date.now(), from: 'producer', ...overrides };
}

const assign = (messageId: string, ...groups: string[]): StoreEvent => ({ kind: 'assign', messageId, groups });
const ack = (messageId: string, group: string): StoreEvent[] => [
  { kind: 'settle', messageId, group, outcome: 'acked' },
  { kind: 'remove', messageId },
];

function segments(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.endsWith('.log')).sort().map((name) => join(dir, name));
}

function diskBytes(dir: string): number {
  return segments(dir).reduce((sum, path) => sum + statSync(path).size, 0);
}

/** node:fs/promises with a switchable fault and an fsync counter */
class FaultyFs implements LogFs {
  failing: Error | null = null;
  datasyncs = 0;

  open = async (path: string, flags: 'r' | 'r+' | 'wx' | 'wx-durable'): Promise<LogFile> => {
    const file = await nodeFs.open(path, flags);
    return {
      writev: async (buffers, position) => {
        if (this.failing) throw this.failing;
        return file.writev(buffers, position);
      },
      read: (buffer, offset, length, position) => file.read(buffer, offset, length, position),
      datasync: async () => {
        this.datasyncs++;
        if (this.failing) throw this.failing;
        return file.datasync();
      },
      truncate: (length) => file.truncate(length),
      stat: () => file.stat(),
      close: () => file.close(),
    };
  };

  readdir = (path: string) => nodeFs.readdir(path);
  mkdir = (path: string) => nodeFs.mkdir(path);
  rename = (from: string, to: string) => nodeFs.rename(from, to);
  unlink = (path: string) => nodeFs.unlink(path);
}

async function until(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });

describe('LogStore: round trip and replay', () => {
  test('appended messages and their records come back in seq order', async () => {
    const dir = tempStoreDir();
    const store = open(dir);
    expect(await store.load()).toEqual({ messages: [], recent: [] });
    const [a, b, c] = [message(1), message(2), message(3, { data: { nested: ['é', 1.5, true] } })];
    await store.append([a!, b!]);
    await store.append([c!]);
    store.record([assign('m-1', 'c|1'), assign('m-2', 'c|1', 'l|x|*')]);
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => m.message)).toEqual([a, b, c]);
    expect(state.messages.map((m) => m.records)).toEqual([
      [{ group: 'c|1', nbRequeues: 0, notBefore: 0 }],
      [{ group: 'c|1', nbRequeues: 0, notBefore: 0 }, { group: 'l|x|*', nbRequeues: 0, notBefore: 0 }],
      [],
    ]);
    // recent ids are removed ones (the dedupe window); held ones are known by their messages
    expect(state.recent).toEqual([]);
  });

  test('events are applied on replay: ack removes, requeue keeps its count and delay, one group settles alone', async () => {
    const dir = tempStoreDir();
    const store = open(dir);
    await store.load();
    await store.append([message(1), message(2), message(3)]);
    store.record([assign('m-1', 'c|1'), assign('m-2', 'c|1'), assign('m-3', 'c|1', 'c|*')]);
    store.record(ack('m-1', 'c|1'));
    store.record([{ kind: 'requeue', messageId: 'm-2', group: 'c|1', nbRequeues: 2, notBefore: 123_456 }]);
    store.record([{ kind: 'settle', messageId: 'm-3', group: 'c|*', outcome: 'dead-lettered' }]);
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => [m.message.messageId, m.records])).toEqual([
      ['m-2', [{ group: 'c|1', nbRequeues: 2, notBefore: 123_456 }]],
      ['m-3', [{ group: 'c|1', nbRequeues: 0, notBefore: 0 }]],
    ]);
    // a removed id still counts for the dedupe window
    expect(state.recent.map((r) => r.messageId)).toContain('m-1');
  });

  test('a state change of a message removed later in the same batch is not written; replay is the same', async () => {
    const dir = tempStoreDir();
    const store = open(dir);
    await store.load();
    await store.append([message(1), message(2)]);
    // one batch: m-1 delivered and acked (assign, deliver, settle, remove), m-2 assigned
    store.record([assign('m-1', 'c|1'), { kind: 'deliver', messageId: 'm-1', group: 'c|1', nbRequeues: 0 }, assign('m-2', 'c|1')]);
    store.record(ack('m-1', 'c|1'));
    // and m-1 again after its removal (a mirror's copy): what follows the new `m` is kept
    const again = store.append([message(1)]);
    store.record([assign('m-1', 'c|2')]);
    await again;
    const kinds = segments(dir).flatMap((path) => {
      const bytes = readFileSync(path);
      const found: string[] = [];
      for (let offset = 0; offset < bytes.length; ) {
        const decoded = decodeRecord(bytes, offset, bytes.length);
        if (!decoded.ok) throw new Error(decoded.reason);
        for (const r of decoded.records) found.push(r.k === 'h' ? 'h' : r.k === 'm' ? `m:${r.m.messageId}` : `${r.k}:${r.id}`);
        offset += decoded.bytes;
      }
      return found;
    });
    expect(kinds).toEqual(['h', 'm:m-1', 'm:m-2', 'a:m-2', 'x:m-1', 'm:m-1', 'a:m-1']);
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => [m.message.messageId, m.records.map((r) => r.group)])).toEqual([
      ['m-2', ['c|1']],
      ['m-1', ['c|2']],
    ]);
  });

  test('a pile of records many commits long: each append is answered once it and all queued before it are durable, in order', async () => {
    const dir = tempStoreDir();
    const store = open(dir);
    await store.load();
    await store.append([message(1)]);
    // 10,000 state changes queued in one turn (a drain's, behind a slow fsync), appends among them
    const answered: Array<[number, number]> = [];
    const appends: Promise<void>[] = [];
    for (let round = 0; round < 5; round++) {
      store.record(Array.from({ length: 2_000 }, (_, i) => assign('m-1', `c|${round}-${i}`)));
      const n = 2 + round;
      appends.push(store.append([message(n)]).then(() => void answered.push([n, store.stats.records])));
    }
    await Promise.all(appends);
    // records committed when each was answered: the first message, then 2,000 and one message a round
    expect(answered.map(([n]) => n)).toEqual([2, 3, 4, 5, 6]);
    answered.forEach(([, records], round) => expect(records).toBeGreaterThanOrEqual(1 + (round + 1) * 2_001));
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['m-1', 'm-2', 'm-3', 'm-4', 'm-5', 'm-6']);
    expect(state.messages[0]!.records.length).toBe(10_000);
  });

  test('ids older than the dedupe window are not given back', async () => {
    let now = 1_000_000;
    const dir = tempStoreDir();
    const store = open(dir, { dedupeWindowMs: 10_000, now: () => now });
    await store.load();
    await store.append([message(1, { acceptedAt: now - 20_000 }), message(2, { acceptedAt: now - 5000 })]);
    store.record([...ack('m-1', 'c|1'), ...ack('m-2', 'c|1')]);
    now += 1000;
    const { state } = await reopen(store, dir, { dedupeWindowMs: 10_000, now: () => now });
    expect(state.recent).toEqual([{ messageId: 'm-2', acceptedAt: now - 6000 }]);
  });
});

describe('LogStore: torn writes', () => {
  async function threeMessages(dir: string) {
    const store = open(dir);
    await store.load();
    await store.append([message(1)]);
    await store.append([message(2)]);
    await store.append([message(3)]);
    await store.close();
    return segments(dir).at(-1)!;
  }

  test('a last record cut short is dropped, the file truncated, and the loss logged', async () => {
    const dir = tempStoreDir();
    const last = await threeMessages(dir);
    const size = statSync(last).size;
    truncateSync(last, size - 5);
    const warnings: unknown[] = [];
    const log = { error() {}, info() {}, warn: (msg: string, fields?: object) => void warnings.push({ msg, ...fields }) };
    const state = await open(dir, { log }).load();
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['m-1', 'm-2']);
    expect(warnings).toEqual([expect.objectContaining({ reason: 'short', segment: last })]);
    expect(statSync(last).size).toBeLessThan(size - 5);
  });

  test('garbage after the last record is cut off', async () => {
    const dir = tempStoreDir();
    const last = await threeMessages(dir);
    appendFileSync(last, Buffer.from([7, 0, 0, 0, 1, 2, 3, 4, 5]));
    const state = await open(dir).load();
    expect(state.messages).toHaveLength(3);
  });

  test('a last record with a bad CRC is dropped', async () => {
    const dir = tempStoreDir();
    const last = await threeMessages(dir);
    const bytes = readFileSync(last);
    bytes.writeUInt8(bytes.at(-3)! ^ 0xff, bytes.length - 3);
    writeFileSync(last, bytes);
    const state = await open(dir).load();
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['m-1', 'm-2']);
  });

  test('a bad record inside an older segment stops the start with a clear error', async () => {
    const dir = tempStoreDir();
    const older = await threeMessages(dir);
    const store = open(dir);
    await store.load();
    await store.append([message(4)]);
    await store.close();
    expect(segments(dir)).toHaveLength(2);
    const bytes = readFileSync(older);
    bytes.writeUInt8(bytes.at(-3)! ^ 0xff, bytes.length - 3);
    writeFileSync(older, bytes);
    await expect(open(dir).load()).rejects.toThrow(/is corrupt at byte \d+ \(bad-crc\) and is not the last one/);
  });

  test('an empty segment left by a crash right after it was created is ignored', async () => {
    const dir = tempStoreDir();
    await threeMessages(dir);
    writeFileSync(join(dir, '0000000000000099.log'), '');
    const state = await open(dir).load();
    expect(state.messages).toHaveLength(3);
  });
});

describe('LogStore: group commit', () => {
  test('1,000 concurrent appends share a handful of fsyncs', async () => {
    const fs = new FaultyFs();
    const store = open(tempStoreDir(), { fs });
    await store.load();
    const atLoad = fs.datasyncs; // directory syncs
    await Promise.all(Array.from({ length: 1000 }, (_, i) => store.append([message(i)])));
    expect(fs.datasyncs - atLoad).toBeLessThanOrEqual(2);
    expect(store.stats.fsyncs).toBe(fs.datasyncs - atLoad);
    expect(store.stats.records).toBe(1000);
  });

  test('appends arriving one per event-loop turn still batch while a write is in flight', async () => {
    const fs = new FaultyFs();
    const store = open(tempStoreDir(), { fs });
    await store.load();
    const atLoad = fs.datasyncs; // directory syncs
    const sends: Promise<void>[] = [];
    for (let i = 0; i < 1000; i++) {
      sends.push(store.append([message(i)]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(sends);
    expect(store.stats.fsyncs).toBeLessThan(500);
    expect(store.stats.commits).toBe(store.stats.fsyncs);
    expect(fs.datasyncs - atLoad).toBe(store.stats.fsyncs);
  });
});

describe('LogStore: state changes held back for an append', () => {
  test('an ack alone waits for the next append and is written in its commit, not a commit of its own', async () => {
    const dir = tempStoreDir();
    const store = open(dir, { eventDelayMs: 200 });
    await store.load();
    await store.append([message(1, { messageId: 'a' })]);
    store.record([assign('a', 'c|1'), ...ack('a', 'c|1')]);
    const commits = store.stats.commits;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(store.stats.commits).toBe(commits); // held back
    await store.append([message(2, { messageId: 'b' })]);
    expect(store.stats.commits).toBe(commits + 1); // one write for the ack and the new message
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['b']);
  });

  test('with no append to join, state changes are written within the delay', async () => {
    const dir = tempStoreDir();
    const store = open(dir, { eventDelayMs: 20 });
    await store.load();
    await store.append([message(1, { messageId: 'a' }), message(2, { messageId: 'b' })]);
    const commits = store.stats.commits;
    store.record([assign('a', 'c|1'), ...ack('a', 'c|1')]);
    await until(() => store.stats.commits > commits, 1000);
    // read what is on disk without close(), which writes what is queued: a kill -9 now keeps the ack
    const replayed = open(dir);
    const state = await replayed.load();
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['b']);
    await replayed.close();
  });

  test('a pile of state changes past the commit cap is written at once, and close() writes what is held back', async () => {
    const dir = tempStoreDir();
    const store = open(dir, { eventDelayMs: 60_000 });
    await store.load();
    const ids = Array.from({ length: 5000 }, (_, i) => `m-${i}`);
    await store.append(ids.map((messageId, i) => message(i, { messageId })));
    const commits = store.stats.commits;
    for (const id of ids) store.record([assign(id, 'c|1')]);
    await until(() => store.stats.commits > commits, 2000); // 5,000 records: not held for a minute
    store.record(ack('m-0', 'c|1'));
    const { state } = await reopen(store, dir); // close() writes the held ack
    expect(state.messages).toHaveLength(4999);
    expect(state.messages.every((m) => m.records.length === 1)).toBe(true);
  });
});

describe('LogStore: commits in pieces', () => {
  test('a pile queued in one turn is written in commits of at most 4,096 records, each append answered once its own message is written', async () => {
    const fs = new FaultyFs();
    let written = Buffer.alloc(0);
    const capturing: LogFs = {
      ...fs,
      open: async (path, flags) => {
        const file = await fs.open(path, flags);
        if (flags !== 'wx-durable') return file;
        return {
          ...file,
          writev: async (buffers, position) => {
            const bytes = await file.writev(buffers, position);
            written = Buffer.concat([written, ...buffers]);
            return bytes;
          },
        };
      },
    };
    const dir = tempStoreDir();
    const store = open(dir, { fs: capturing });
    await store.load();
    const commitsAtLoad = store.stats.commits;
    // interleaved: a message, then its assign and delivery (3 records each, 9,000 in one turn)
    const ids = Array.from({ length: 3000 }, (_, i) => `id-${String(i).padStart(6, '0')}`);
    const answeredAfterWrite: boolean[] = [];
    const sends = ids.map((messageId, i) => {
      const sent = store.append([message(i, { messageId })]).then(() => {
        answeredAfterWrite[i] = written.includes(messageId);
      });
      store.record([assign(messageId, 'c|1'), { kind: 'deliver', messageId, group: 'c|1', nbRequeues: 0 }]);
      return sent;
    });
    await Promise.all(sends);
    expect(answeredAfterWrite.filter(Boolean)).toHaveLength(3000);
    // one commit of 9,000 records before: a turn of encoding and index updates that grew with the pile
    expect(store.stats.commits - commitsAtLoad).toBeGreaterThanOrEqual(3);
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => m.message.messageId)).toEqual(ids);
    expect(state.messages.every((m) => m.records.length === 1 && m.records[0]!.nbRequeues === 1)).toBe(true);
  });
});

describe('LogStore: durable writes', () => {
  test('segments are opened with O_DSYNC: a commit is one write, no separate fdatasync, and replays', async () => {
    const fs = new FaultyFs();
    let durableOpens = 0;
    const durableFs: LogFs = {
      ...fs,
      open: async (path, flags) => {
        const file = await fs.open(path, flags);
        if (flags !== 'wx-durable') return file;
        durableOpens++;
        // what nodeFs hands out for 'wx-durable': FaultyFs's wrapper hides the flag
        return { ...file, writesAreDurable: true };
      },
    };
    const dir = tempStoreDir();
    const store = open(dir, { fs: durableFs });
    await store.load();
    const atLoad = fs.datasyncs; // directory syncs
    await Promise.all(Array.from({ length: 100 }, (_, i) => store.append([message(i)])));
    expect(durableOpens).toBe(1);
    expect(fs.datasyncs).toBe(atLoad);
    expect(store.stats.fsyncs).toBe(store.stats.commits);
    const { state } = await reopen(store, dir);
    expect(state.messages).toHaveLength(100);
  });

  test('nodeFs opens wx-durable files with writesAreDurable, others without', async () => {
    const dir = tempStoreDir();
    await nodeFs.mkdir(dir);
    const durable = await nodeFs.open(join(dir, 'a'), 'wx-durable');
    const plain = await nodeFs.open(join(dir, 'b'), 'wx');
    expect([durable.writesAreDurable, plain.writesAreDurable]).toEqual([true, false]);
    await Promise.all([durable.close(), plain.close()]);
  });
});

describe('LogStore: compaction', () => {
  test('disk use returns near zero once everything is removed', async () => {
    const dir = tempStoreDir();
    const store = open(dir, { compactBytes: 64 * 1024, dedupeWindowMs: 0, idleCompactMs: 10 });
    await store.load();
    const body = 'x'.repeat(200);
    for (let round = 0; round < 10; round++) {
      const batch = Array.from({ length: 200 }, (_, i) => message(round * 200 + i, { data: body }));
      await store.append(batch);
      store.record(batch.map((m) => assign(m.messageId, 'c|1')));
      store.record(batch.flatMap((m) => ack(m.messageId, 'c|1')));
    }
    await store.append([message(99_999)]);
    store.record(ack('m-99999', 'c|1'));
    // the last compaction comes once the store is empty and idle
    await until(() => store.stats.diskBytes < 1024);
    // at least the last one; on a loaded machine the first compaction can start only after the
    // last ack and find the store empty already, so how many ran is not what this test checks
    expect(store.stats.compactions).toBeGreaterThanOrEqual(1);
    await store.close();
    expect(diskBytes(dir)).toBeLessThan(1024);
    expect((await open(dir).load()).messages).toEqual([]);
  });

  test('while idle, the log shrinks again as the dedupe ids it keeps expire', async () => {
    let now = 1_000_000;
    const dir = tempStoreDir();
    const store = open(dir, { compactBytes: 64 * 1024, dedupeWindowMs: 10_000, idleCompactMs: 10, now: () => now });
    await store.load();
    const batch = Array.from({ length: 2000 }, (_, i) => message(i, { data: 'z'.repeat(200), acceptedAt: now }));
    await store.append(batch);
    store.record(batch.flatMap((m) => [assign(m.messageId, 'c|1'), ...ack(m.messageId, 'c|1')]));
    await until(() => store.stats.compactions > 0 && store.stats.diskBytes < 200 * 1024);
    const withIds = store.stats.diskBytes;
    // each id is in the snapshot: its 5 bytes, a length, an operation code and a time
    expect(withIds).toBeGreaterThan(2000 * 18);
    now += 11_000;
    await until(() => store.stats.diskBytes < 1024);
    console.log(`idle compaction: ${withIds} bytes while 2,000 dedupe ids were inside the window, ${store.stats.diskBytes} after they expired`);
    expect((await reopen(store, dir, { now: () => now })).state).toEqual({ messages: [], recent: [] });
  });

  test('live messages, their records and recent ids survive compaction and a restart; appends during it are kept', async () => {
    const dir = tempStoreDir();
    const options = { compactBytes: 32 * 1024, compactRatio: 2 };
    const store = open(dir, options);
    await store.load();
    const keep = [message(1), message(2)];
    await store.append(keep);
    store.record([assign('m-1', 'c|1', 'c|*'), { kind: 'requeue', messageId: 'm-1', group: 'c|1', nbRequeues: 3, notBefore: 42 }]);
    const sends: Promise<void>[] = [];
    for (let i = 100; i < 1100; i++) {
      const m = message(i, { data: 'y'.repeat(100) });
      sends.push(store.append([m]).then(() => store.record(i < 1090 ? [assign(m.messageId, 'c|1'), ...ack(m.messageId, 'c|1')] : [])));
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(sends);
    await store.close();
    expect(store.stats.compactions).toBeGreaterThan(0);
    const state = (await reopen(store, dir, options)).state;
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['m-1', 'm-2', ...Array.from({ length: 10 }, (_, i) => `m-${1090 + i}`)]);
    expect(state.messages[0]!.records).toEqual([{ group: 'c|1', nbRequeues: 3, notBefore: 42 }, { group: 'c|*', nbRequeues: 0, notBefore: 0 }]);
    expect(state.messages[0]!.message).toEqual(keep[0]);
    // the 990 removed ids, inside the dedupe window; the 12 held ones are known by their messages
    expect(state.recent.map((r) => r.messageId)).toEqual(Array.from({ length: 990 }, (_, i) => `m-${100 + i}`));
  });
});

describe('compaction policy', () => {
  const settings = { compactBytes: 64 * 1024 * 1024, compactRatio: 4 };
  const MiB = 1024 * 1024;
  test.each([
    // disk, live messages, snapshot estimate, idle -> compact?
    [63 * MiB, 10, 1 * MiB, false, false],
    [64 * MiB, 10, 16 * MiB, false, true],
    [64 * MiB, 10, 17 * MiB, false, false],
    [2 * MiB, 0, 0, false, true],
    [0.5 * MiB, 0, 0, false, false],
    [0.5 * MiB, 0, 0, true, true],
    [8 * 1024, 0, 0, true, false],
    [8 * MiB, 0, 3 * MiB, false, false],
    [8 * MiB, 0, 3 * MiB, true, true],
  ])('disk %d, live %d, snapshot %d, idle %s -> %s', (disk, live, snapshot, idle, expected) => {
    expect(shouldCompact(settings, disk, live, snapshot, idle)).toBe(expected);
  });
});

describe('LogStore: failures', () => {
  test('a failing disk: unhealthy, appends rejected, events kept; it recovers and loses nothing it answered', async () => {
    const fs = new FaultyFs();
    const dir = tempStoreDir();
    const store = open(dir, { fs, retryMs: 20 });
    await store.load();
    await store.append([message(1), message(2)]);
    store.record([assign('m-1', 'c|1'), assign('m-2', 'c|1')]);
    fs.failing = enospc();
    await expect(store.append([message(3)])).rejects.toThrow(/ENOSPC/);
    expect(store.isHealthy()).toBe(false);
    await expect(store.append([message(4)])).rejects.toThrow(/failing/);
    store.record(ack('m-1', 'c|1'));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(store.isHealthy()).toBe(false);
    fs.failing = null;
    await until(() => store.isHealthy());
    await store.append([message(5)]);
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['m-2', 'm-5']);
  });

  test('the store directory removed under a running store (a real fault, no injection): detected, then rebuilt', async () => {
    const dir = tempStoreDir();
    const store = open(dir, { retryMs: 20 });
    await store.load();
    await store.append([message(1)]);
    rmSync(dir, { recursive: true });
    await expect(store.append([message(2)])).rejects.toThrow(/was removed/);
    expect(store.isHealthy()).toBe(false);
    await until(() => store.isHealthy());
    const { state } = await reopen(store, dir);
    expect(state.messages.map((m) => m.message.messageId)).toEqual(['m-1']);
  });

  test('the store directory replaced by a file: stays unhealthy, keeps running, closes cleanly', async () => {
    const dir = tempStoreDir();
    const store = open(dir, { retryMs: 10 });
    await store.load();
    await store.append([message(1)]);
    rmSync(dir, { recursive: true });
    writeFileSync(dir, 'not a directory');
    await expect(store.append([message(2)])).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(store.isHealthy()).toBe(false);
    store.record(ack('m-1', 'c|1'));
    await store.close();
    await expect(store.append([message(3)])).rejects.toThrow(/closed/);
  });
});
