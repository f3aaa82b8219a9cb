import { crc32 } from 'node:zlib';
import { decodeBinary, FRAME_HEADER_BYTES } from './log-binary.js';
import type { LogRecord } from './log-records.js';

/**
 * The durable log's frames (docs/operations.md#store-format): each frame is
 * `[u32 LE payload length][u32 LE crc32 of the payload][payload]`, so a torn or corrupt tail is
 * recognised and cut off on replay instead of being half-read. Version 2 payloads are binary
 * (log-binary.ts): one frame per message, one per run of state changes. The segment header
 * stays JSON in every version, so a broker of an older version reads it and refuses the log
 * by its version instead of taking binary frames for a torn tail. Version 1 (JSON records,
 * one frame each) is still read: an upgraded broker replays its old log, then writes v2.
 */
export { FRAME_HEADER_BYTES };
/** a longer length field can only be garbage: messages are bounded by `limits.maxPayloadBytes` */
export const MAX_RECORD_BYTES = 256 * 1024 * 1024;
export const LOG_VERSION = 2;
/** the versions this broker replays */
export const READABLE_VERSIONS: readonly number[] = [1, 2];

export type { LogRecord, RecordTuple } from './log-records.js';

export type HeaderRecord = Extract<LogRecord, { k: 'h' }>;

/** a segment's header frame (JSON, in every version) */
export function encodeHeader(snapshot: boolean): Buffer {
  const json = JSON.stringify({ k: 'h', v: LOG_VERSION, snapshot } satisfies HeaderRecord);
  const length = Buffer.byteLength(json);
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  frame.write(json, FRAME_HEADER_BYTES, 'utf8');
  frame.writeUInt32LE(length, 0);
  frame.writeUInt32LE(crc32(frame.subarray(FRAME_HEADER_BYTES)), 4);
  return frame;
}

export type Decoded =
  /** a message frame holds one record, a run of state changes many, in order */
  | { readonly ok: true; readonly records: readonly LogRecord[]; readonly bytes: number }
  /** not enough bytes for the frame its header announces: read more, or a torn tail at EOF */
  | { readonly ok: false; readonly reason: 'short' }
  | { readonly ok: false; readonly reason: 'bad-length' | 'bad-crc' | 'bad-record' };

const JSON_OPEN_BRACE = 0x7b;

/** decodes the frame starting at `offset` of `buffer` (which holds bytes up to `end`) */
export function decodeRecord(buffer: Buffer, offset: number, end: number): Decoded {
  if (end - offset < FRAME_HEADER_BYTES) return { ok: false, reason: 'short' };
  const length = buffer.readUInt32LE(offset);
  if (length === 0 || length > MAX_RECORD_BYTES) return { ok: false, reason: 'bad-length' };
  const bytes = FRAME_HEADER_BYTES + length;
  if (end - offset < bytes) return { ok: false, reason: 'short' };
  const payload = buffer.subarray(offset + FRAME_HEADER_BYTES, offset + bytes);
  if (crc32(payload) !== buffer.readUInt32LE(offset + 4)) return { ok: false, reason: 'bad-crc' };
  // JSON: a header, or any record of a version 1 log; binary kinds are small numbers
  const records = payload[0] === JSON_OPEN_BRACE ? decodeJson(payload) : decodeBinary(payload);
  if (records === null) return { ok: false, reason: 'bad-record' };
  return { ok: true, records, bytes };
}

function decodeJson(payload: Buffer): LogRecord[] | null {
  let record: unknown;
  try {
    record = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  return isRecord(record) ? [record] : null;
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
