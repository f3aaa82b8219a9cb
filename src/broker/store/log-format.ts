import { crc32 } from 'node:zlib';
import type { Settlement, StoredMessage } from './store.js';

/**
 * The durable log's records and their framing: each record is
 * `[u32 LE payload length][u32 LE crc32 of the payload][payload: JSON, utf8]`, so a torn or
 * corrupt tail is recognised and cut off on replay instead of being half-read.
 */
export const FRAME_HEADER_BYTES = 8;
/** a longer length field can only be garbage: messages are bounded by `limits.maxPayloadBytes` */
export const MAX_RECORD_BYTES = 256 * 1024 * 1024;
export const LOG_VERSION = 1;

/** `[group key, nbRequeues, notBefore ms epoch]`, compact because snapshots repeat it per message */
export type RecordTuple = readonly [group: string, nbRequeues: number, notBefore: number];

export type LogRecord =
  /** first record of every segment; a snapshot segment replaces everything before it */
  | { readonly k: 'h'; readonly v: number; readonly snapshot: boolean }
  /** an accepted message; in a snapshot, with its unsettled records (`[]`: waits unassigned) */
  | { readonly k: 'm'; readonly m: StoredMessage; readonly r?: readonly RecordTuple[] }
  | { readonly k: 'a'; readonly id: string; readonly g: readonly string[] }
  | { readonly k: 's'; readonly id: string; readonly g: string; readonly o: Settlement }
  | { readonly k: 'r'; readonly id: string; readonly g: string; readonly n: number; readonly nb: number }
  | { readonly k: 'x'; readonly id: string }
  /** snapshot only: an id removed but still inside the dedupe window (SPEC §7) */
  | { readonly k: 'd'; readonly id: string; readonly at: number };

export function encodeRecord(record: LogRecord): Buffer {
  const json = JSON.stringify(record);
  const length = Buffer.byteLength(json);
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  frame.write(json, FRAME_HEADER_BYTES, 'utf8');
  frame.writeUInt32LE(length, 0);
  frame.writeUInt32LE(crc32(frame.subarray(FRAME_HEADER_BYTES)), 4);
  return frame;
}

/**
 * Frames many records into one reused buffer, for a commit: one write, no buffer per record.
 * What `bytes()` returns is valid until the next `reset()` (the store commits one at a time).
 */
export class FrameWriter {
  #buffer = Buffer.allocUnsafe(64 * 1024);
  #used = 0;

  reset(): void {
    // a huge batch once does not keep its buffer for ever
    if (this.#buffer.length > 16 * 1024 * 1024) this.#buffer = Buffer.allocUnsafe(64 * 1024);
    this.#used = 0;
  }

  /** frames one record's JSON; returns the frame's size in bytes */
  add(json: string): number {
    // utf8 takes at most 3 bytes per UTF-16 unit: room for the worst case, no byteLength pass
    const room = FRAME_HEADER_BYTES + json.length * 3;
    if (this.#used + room > this.#buffer.length) this.#grow(this.#used + room);
    const at = this.#used;
    const length = this.#buffer.write(json, at + FRAME_HEADER_BYTES);
    this.#buffer.writeUInt32LE(length, at);
    this.#buffer.writeUInt32LE(crc32(this.#buffer.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + length)), at + 4);
    this.#used = at + FRAME_HEADER_BYTES + length;
    return FRAME_HEADER_BYTES + length;
  }

  bytes(): Buffer {
    return this.#buffer.subarray(0, this.#used);
  }

  #grow(needed: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(needed, this.#buffer.length * 2));
    this.#buffer.copy(bigger, 0, 0, this.#used);
    this.#buffer = bigger;
  }
}

export type Decoded =
  | { readonly ok: true; readonly record: LogRecord; readonly bytes: number }
  /** not enough bytes for the frame its header announces: read more, or a torn tail at EOF */
  | { readonly ok: false; readonly reason: 'short' }
  | { readonly ok: false; readonly reason: 'bad-length' | 'bad-crc' | 'bad-json' };

/** decodes the frame starting at `offset` of `buffer` (which holds bytes up to `end`) */
export function decodeRecord(buffer: Buffer, offset: number, end: number): Decoded {
  if (end - offset < FRAME_HEADER_BYTES) return { ok: false, reason: 'short' };
  const length = buffer.readUInt32LE(offset);
  if (length === 0 || length > MAX_RECORD_BYTES) return { ok: false, reason: 'bad-length' };
  const bytes = FRAME_HEADER_BYTES + length;
  if (end - offset < bytes) return { ok: false, reason: 'short' };
  const payload = buffer.subarray(offset + FRAME_HEADER_BYTES, offset + bytes);
  if (crc32(payload) !== buffer.readUInt32LE(offset + 4)) return { ok: false, reason: 'bad-crc' };
  let record: unknown;
  try {
    record = JSON.parse(payload.toString('utf8'));
  } catch {
    return { ok: false, reason: 'bad-json' };
  }
  if (!isRecord(record)) return { ok: false, reason: 'bad-json' };
  return { ok: true, record, bytes };
}

const KINDS = new Set(['h', 'm', 'a', 's', 'r', 'x', 'd']);

/** the CRC vouches for the bytes; this only guards against a record from a foreign writer */
function isRecord(value: unknown): value is LogRecord {
  if (typeof value !== 'object' || value === null) return false;
  const k = (value as { k?: unknown }).k;
  if (typeof k !== 'string' || !KINDS.has(k)) return false;
  if (k === 'h' || k === 'm') return true;
  return typeof (value as { id?: unknown }).id === 'string';
}

/** segment files: `<16-digit number>.log`, replayed in number order */
export function segmentName(number: number): string {
  return `${String(number).padStart(16, '0')}.log`;
}

export function parseSegmentName(name: string): number | null {
  const match = /^(\d{16})\.log$/.exec(name);
  return match ? Number(match[1]) : null;
}

export const TEMP_SUFFIX = '.tmp';
