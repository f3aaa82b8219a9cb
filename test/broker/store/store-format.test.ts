import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, test } from 'vitest';
import { LogStore, type LogStoreOptions } from '../../../src/broker/store/log.js';
import { decodeRecord, LOG_VERSION } from '../../../src/broker/store/log-format.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';

/**
 * The log's format across versions (docs/operations.md#store-format): a broker upgraded from
 * version 1 (JSON records) replays its old log and loses nothing; a log of an unknown version
 * is refused with an error that says so, never cut off as a torn tail.
 */
const dirs: string[] = [];
const stores: LogStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function storeDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'whisker-format-'));
  dirs.push(dir);
  const store = join(dir, 'store');
  mkdirSync(store);
  return store;
}

function open(dir: string, options: LogStoreOptions = {}): LogStore {
  const store = new LogStore(dir, options);
  stores.push(store);
  return store;
}

/** a version 1 frame, as brokers before LOG_VERSION 2 wrote them: `[len][crc32][JSON]` */
function v1Frame(record: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(record));
  const header = Buffer.alloc(8);
  header.writeUInt32LE(json.length, 0);
  header.writeUInt32LE(crc32(json), 4);
  return Buffer.concat([header, json]);
}

const segment = (n: number) => `${String(n).padStart(16, '0')}.log`;
const now = Date.now();
function message(n: number): StoredMessage {
  return { seq: n, messageId: `m-${n}`, queue: 'q/v1', id: String(n), data: { n, text: `body ${n} é` }, created: 1000 + n, acceptedAt: now, from: 'producer' };
}

/** a version 1 log: a snapshot segment (records inline, recent ids) and a later segment */
function writeV1Log(dir: string): void {
  writeFileSync(
    join(dir, segment(3)),
    Buffer.concat([
      v1Frame({ k: 'h', v: 1, snapshot: true }),
      v1Frame({ k: 'd', id: 'gone-1', at: now }),
      v1Frame({ k: 'm', m: message(1), r: [['c|1', 2, 0]] }),
      v1Frame({ k: 'm', m: message(2), r: [] }),
    ]),
  );
  writeFileSync(
    join(dir, segment(4)),
    Buffer.concat([
      v1Frame({ k: 'h', v: 1, snapshot: false }),
      v1Frame({ k: 'm', m: message(3) }),
      v1Frame({ k: 'a', id: 'm-3', g: ['c|1', 'l|app|*'] }),
      v1Frame({ k: 's', id: 'm-3', g: 'c|1', o: 'acked' }),
      v1Frame({ k: 'm', m: message(4) }),
      v1Frame({ k: 'a', id: 'm-4', g: ['c|1'] }),
      v1Frame({ k: 'r', id: 'm-4', g: 'c|1', n: 1, nb: 0 }),
      v1Frame({ k: 'm', m: message(5) }),
      v1Frame({ k: 'x', id: 'm-5' }),
    ]),
  );
}

const summary = (state: Awaited<ReturnType<LogStore['load']>>) => ({
  messages: state.messages.map((m) => [m.message.messageId, m.records.map((r) => `${r.group}:${r.nbRequeues}`)]),
  recent: state.recent.map((r) => r.messageId).sort(),
});

const expected = {
  messages: [
    ['m-1', ['c|1:2']],
    ['m-2', []],
    ['m-3', ['l|app|*:0']],
    ['m-4', ['c|1:1']],
  ],
  // removed ids inside the window; held ones are known by their messages
  recent: ['gone-1', 'm-5'],
};

/** the version in each segment's header, and whether any other frame is JSON */
function versions(dir: string): Array<{ v: number; json: number }> {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.log'))
    .sort()
    .map((name) => {
      const bytes = readFileSync(join(dir, name));
      let v = 0;
      let json = 0;
      for (let offset = 0; offset < bytes.length; ) {
        const decoded = decodeRecord(bytes, offset, bytes.length);
        if (!decoded.ok) throw new Error(`${name} at ${offset}: ${decoded.reason}`);
        const first = decoded.records[0]!;
        if (first.k === 'h') v = first.v;
        else if (bytes[offset + 8] === 0x7b) json++;
        offset += decoded.bytes;
      }
      return { v, json };
    });
}

describe('LogStore: log format versions', () => {
  test('a version 1 log is replayed whole: messages, records, bodies on disk, dedupe ids; compaction rewrites it as version 2', async () => {
    expect(LOG_VERSION).toBe(2);
    const dir = storeDir();
    writeV1Log(dir);
    // no replayed body kept in memory: every body is read back from the version 1 frames
    const store = open(dir, { replayBodyBytes: 0, compactBytes: 4096, compactRatio: 2 });
    const state = await store.load();
    expect(summary(state)).toEqual(expected);
    expect(state.messages.every((m) => m.message.data === undefined)).toBe(true);
    expect(await store.readBodies(['m-4', 'm-1', 'm-5'])).toEqual([message(4).data, message(1).data, undefined]);
    // new writes go to a version 2 segment; enough of them to compact the old segments away
    const filler = Array.from({ length: 40 }, (_, i) => ({ ...message(100 + i), data: 'x'.repeat(200) }));
    await store.append(filler);
    store.record(filler.flatMap((m) => [{ kind: 'remove', messageId: m.messageId } as const]));
    await store.append([message(200)]);
    for (let i = 0; i < 100 && store.stats.compactions === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(store.stats.compactions).toBeGreaterThan(0);
    await store.close();
    // the active segment is empty until its first commit
    expect(versions(dir).filter((s) => s.v !== 0)).toEqual([{ v: 2, json: 0 }]);
    const again = open(dir, { replayBodyBytes: 0 });
    const restarted = await again.load();
    expect(summary(restarted).messages).toEqual([...expected.messages, ['m-200', []]]);
    expect(await again.readBodies(['m-1', 'm-2', 'm-3', 'm-4'])).toEqual([1, 2, 3, 4].map((n) => message(n).data));
  });

  test('a log of a newer version is refused with an error naming it, and left as it was', async () => {
    const dir = storeDir();
    const bytes = Buffer.concat([v1Frame({ k: 'h', v: 3, snapshot: false }), Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9])]);
    writeFileSync(join(dir, segment(1)), bytes);
    await expect(open(dir).load()).rejects.toThrow(/format version 3; this broker reads versions 1 and 2/);
    expect(readFileSync(join(dir, segment(1)))).toEqual(bytes);
  });

  test('version 2 segments start with a JSON header, so a version 1 broker refuses them instead of cutting them', async () => {
    const dir = storeDir();
    const store = open(dir);
    await store.load();
    await store.append([message(1)]);
    await store.close();
    const [first] = readdirSync(dir).filter((name) => name.endsWith('.log'));
    const bytes = readFileSync(join(dir, first!));
    const length = bytes.readUInt32LE(0);
    // what a version 1 broker reads first, and checks against its own version
    expect(JSON.parse(bytes.subarray(8, 8 + length).toString('utf8'))).toEqual({ k: 'h', v: 2, snapshot: false });
    expect(bytes[8 + length + 8]).not.toBe(0x7b);
  });
});
