// The "replay" row's history, written before the broker starts with the broker's own encoder
// (dist/broker/history/segment.js), as the broker leaves closed segments (`.meta` beside each):
// `count` ~100-byte messages (lib.mjs makeMessage) on one id, a message id of 32 hex digits as
// the client makes them. Sending a million through the broker would take minutes on a small
// machine; the row measures the replay, not the filling.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeRecords, segmentPath, writeSegmentMeta } from '../dist/broker/history/segment.js';
import { makeMessage } from './lib.mjs';

const PER_SEGMENT = 50_000; // ~8 MiB of records: the broker's own segment size

/** writes the history of `queue` ("ep/v1", id `id`) under `dataDirectory` */
export async function fillHistory(dataDirectory, queue, id, count) {
  const dir = join(dataDirectory, 'history', queue.replace('/', '@'));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const start = Date.now() - 60_000;
  for (let s = 0, n = 0; n < count; s++) {
    const records = [];
    for (let i = 0; i < PER_SEGMENT && n < count; i++, n++) {
      const acceptedAt = start + Math.floor((n * 60_000) / count);
      records.push({ messageId: n.toString(16).padStart(32, '0'), id, acceptedAt, created: acceptedAt, from: 'bench-producer', data: makeMessage(n, acceptedAt) });
    }
    const path = segmentPath(dir, s + 1);
    const bytes = encodeRecords(records);
    writeFileSync(path, bytes, { mode: 0o600 });
    await writeSegmentMeta({ path, seq: s + 1, count: records.length, bytes: bytes.length, firstAt: records[0].acceptedAt, lastAt: records.at(-1).acceptedAt });
  }
}
