import { constants, type FileHandle, open, readdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/**
 * One file of a channel's history (docs/operations.md#history-files): records one after the
 * other, each `[u32 length][u32 crc32][JSON payload]`, little-endian. A torn tail (a crash in the
 * middle of a write) is cut at open; nothing before it is lost.
 */
export interface HistoryRecord {
  readonly messageId: string;
  /** canonical escaped id */
  readonly id: string;
  readonly acceptedAt: number;
  readonly created: number;
  readonly from: string;
  readonly data: unknown;
}

/**
 * A record as a replay reads it: the data left as the JSON text it was stored as, so a replay
 * splices it into its deliver frames without parsing and serialising it again (issue 19).
 */
export interface ReadRecord {
  readonly messageId: string;
  readonly id: string;
  readonly acceptedAt: number;
  readonly created: number;
  readonly from: string;
  /** the message's data, JSON */
  readonly dataJson: string;
}

export interface SegmentMeta {
  readonly path: string;
  /** the file name's number: segments replay in this order */
  readonly seq: number;
  count: number;
  bytes: number;
  /** the oldest and newest acceptance times of its records (not its first and last: a history's order is its master's, not time order) */
  firstAt: number;
  lastAt: number;
}

const HEADER = 8;
/** a record larger than this is damage, not data (the broker's payload limit is 64 MiB at most) */
const MAX_RECORD = 128 * 1_048_576;
/** a replay reads this much at a time, then lets the event loop serve others (issue 19: bystanders unharmed) */
export const READ_CHUNK = 262_144;

export function encodeRecords(records: readonly HistoryRecord[]): Buffer {
  return Buffer.concat(records.map(encodeRecord));
}

/** one record with its header, as it lies in a segment */
export function encodeRecord(r: HistoryRecord): Buffer {
  const payload = Buffer.from(JSON.stringify({ m: r.messageId, i: r.id, a: r.acceptedAt, c: r.created, f: r.from, d: r.data }));
  const header = Buffer.allocUnsafe(HEADER);
  header.writeUInt32LE(payload.length, 0);
  header.writeUInt32LE(crc32(payload), 4);
  return Buffer.concat([header, payload]);
}

/**
 * `,"d":` of a payload: encodeRecords writes `d` last, and no string before it can hold this
 * (JSON escapes every quote inside a string), so the first one starts the data
 */
const DATA_KEY = Buffer.from(',"d":');

function decodePayload(payload: Buffer): ReadRecord {
  const at = payload.indexOf(DATA_KEY);
  if (at < 0 || payload[payload.length - 1] !== 0x7d) {
    const p = JSON.parse(payload.toString('utf8')) as { m: string; i: string; a: number; c: number; f: string; d: unknown };
    return { messageId: p.m, id: p.i, acceptedAt: p.a, created: p.c, from: p.f, dataJson: JSON.stringify(p.d) };
  }
  const p = JSON.parse(`${payload.toString('utf8', 0, at)}}`) as { m: string; i: string; a: number; c: number; f: string };
  return { messageId: p.m, id: p.i, acceptedAt: p.a, created: p.c, from: p.f, dataJson: payload.toString('utf8', at + DATA_KEY.length, payload.length - 1) };
}

/** the records in `buffer` from `offset`, and where the first incomplete or damaged one starts */
export function decodeRecords(buffer: Buffer, offset = 0): { records: ReadRecord[]; end: number; damaged: boolean } {
  const records: ReadRecord[] = [];
  let at = offset;
  while (at + HEADER <= buffer.length) {
    const length = buffer.readUInt32LE(at);
    if (length > MAX_RECORD) return { records, end: at, damaged: true };
    if (at + HEADER + length > buffer.length) break;
    const payload = buffer.subarray(at + HEADER, at + HEADER + length);
    if (crc32(payload) !== buffer.readUInt32LE(at + 4)) return { records, end: at, damaged: true };
    records.push(decodePayload(payload));
    at += HEADER + length;
  }
  return { records, end: at, damaged: false };
}

export function segmentPath(dir: string, seq: number): string {
  return join(dir, `${String(seq).padStart(16, '0')}.seg`);
}

/**
 * Meta version 2: `firstAt`/`lastAt` are the oldest and newest times (version 1 wrote the first
 * and last record's: a replay `since` skipped files holding newer records, atk27l F2); a file
 * with an older meta is read record by record once
 */
const META_VERSION = 2;

/** a closed segment's meta, beside it: the next open reads it instead of every record */
export async function writeSegmentMeta(meta: SegmentMeta): Promise<void> {
  const { count, bytes, firstAt, lastAt } = meta;
  await writeFile(`${meta.path}.meta`, JSON.stringify({ v: META_VERSION, count, bytes, firstAt, lastAt }), { mode: 0o600 });
}

async function readSegmentMeta(path: string, seq: number): Promise<SegmentMeta | null> {
  try {
    const m = JSON.parse(await readFile(`${path}.meta`, 'utf8')) as { v?: number; count: number; bytes: number; firstAt: number; lastAt: number };
    // only while the segment is exactly as the meta describes it
    if (m.v !== META_VERSION || (await stat(path)).size !== m.bytes) return null;
    return { path, seq, count: m.count, bytes: m.bytes, firstAt: m.firstAt, lastAt: m.lastAt };
  } catch {
    return null;
  }
}

/**
 * Every segment of a channel's directory, in order. A closed one with its `.meta` is taken from
 * it; the others (the last one written, or one without meta) are read record by record, and a
 * torn tail is cut.
 */
export async function scanSegments(dir: string): Promise<SegmentMeta[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => /^\d{16}\.seg$/.test(n)).sort();
  const metas: SegmentMeta[] = [];
  for (const [index, name] of names.entries()) {
    const path = join(dir, name);
    const seq = Number(name.slice(0, 16));
    const known = index < names.length - 1 ? await readSegmentMeta(path, seq) : null;
    if (known) {
      metas.push(known);
      continue;
    }
    const meta: SegmentMeta = { path, seq, count: 0, bytes: 0, firstAt: Infinity, lastAt: -Infinity };
    const end = await forEachRecord(path, Infinity, (r) => {
      meta.count++;
      meta.firstAt = Math.min(meta.firstAt, r.acceptedAt);
      meta.lastAt = Math.max(meta.lastAt, r.acceptedAt);
    });
    meta.bytes = end.valid;
    if (end.valid < end.size) {
      const handle = await open(path, 'r+');
      await handle.truncate(end.valid).finally(() => handle.close());
    }
    if (meta.count === 0) await unlink(path).catch(() => undefined);
    else metas.push(meta);
    // a closed one read whole gets its meta (an older version's too): the next open reads that
    if (meta.count > 0 && index < names.length - 1) await writeSegmentMeta(meta);
    else await unlink(`${path}.meta`).catch(() => undefined);
  }
  return metas;
}

/**
 * Calls `each` for every record in the first `limit` bytes of a file, a chunk at a time;
 * `each` may return a promise (back-pressure) and false (or a promise of false) to stop.
 * Returns how far the records were whole (read).
 */
export async function forEachRecord(path: string, limit: number, each: (record: ReadRecord) => unknown): Promise<{ valid: number; size: number }> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return { valid: 0, size: 0 }; // trimmed meanwhile
  }
  try {
    const size = Math.min(limit, (await handle.stat()).size);
    let carry = Buffer.alloc(0);
    let position = 0;
    let valid = 0;
    while (position < size) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, size - position));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const buffer = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      const { records, end, damaged } = decodeRecords(buffer);
      let index = 0;
      for (const record of records) {
        const answer = each(record);
        if ((answer instanceof Promise ? await answer : answer) === false) return { valid: valid + offsetOf(buffer, index + 1), size };
        index++;
      }
      valid += end;
      if (damaged) return { valid, size };
      carry = Buffer.from(buffer.subarray(end));
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { valid, size };
  } finally {
    await handle.close();
  }
}

/** where record `n` (0-based) of a decoded buffer ends */
function offsetOf(buffer: Buffer, n: number): number {
  let at = 0;
  for (let i = 0; i < n; i++) at += HEADER + buffer.readUInt32LE(at);
  return at;
}

/** opened for appends; each write is durable when it resolves (O_DSYNC, like the message log) */
export function openForAppend(path: string): Promise<FileHandle> {
  return open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_DSYNC, 0o600);
}
