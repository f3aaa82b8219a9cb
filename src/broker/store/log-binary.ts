import { crc32 } from 'node:zlib';
import type { LogRecord } from './log-records.js';
import type { Settlement, StoredMessage } from './store.js';

/**
 * Version 2 payloads (docs/operations.md#store-format). Numbers little-endian; a string is
 * `[u32 byte length][utf8]`.
 * - message `[1][f64 seq][f64 created][f64 acceptedAt][str messageId][str queue][str id]
 *   [str from][data: JSON, utf8, to the end]`: one frame per message, so it can be read back
 *   alone by its place;
 * - run of state changes `[2]` then operations to the end, each `[op]` and its fields:
 *   1 assign `[str messageId][u32 n][str group] x n`, 2 settle `[str messageId][str group]
 *   [u8 outcome]`, 3 requeue `[str messageId][str group][u32 nbRequeues][f64 notBefore]`,
 *   4 remove `[str messageId]`, 5 recent id (snapshots) `[str messageId][f64 acceptedAt]`.
 */
/** `[u32 length][u32 crc32]` before every payload (log-format.ts) */
export const FRAME_HEADER_BYTES = 8;
const MESSAGE = 1;
const EVENTS = 2;
const OP_ASSIGN = 1;
const OP_SETTLE = 2;
const OP_REQUEUE = 3;
const OP_REMOVE = 4;
const OP_RECENT = 5;
const OUTCOMES: readonly Settlement[] = ['acked', 'dead-lettered', 'dropped', 'expired'];
const OUTCOME_CODES = new Map(OUTCOMES.map((o, i) => [o, i]));
/** strings up to this long are written byte by byte when ASCII (longer ones: one native write) */
const ASCII_LOOP_MAX = 64;
/** the same for a body's JSON */
const BODY_LOOP_MAX = 256;

/**
 * Frames records into one reused buffer, for a commit or a snapshot chunk: one write, no buffer
 * per record. What `bytes()` returns is valid until the next `reset()`.
 */
export class FrameWriter {
  #buffer = Buffer.allocUnsafe(64 * 1024);
  #used = 0;
  /** start of the run of state changes being written, -1 when none is open */
  #events = -1;

  reset(): void {
    // a huge batch once does not keep its buffer for ever
    if (this.#buffer.length > 16 * 1024 * 1024) this.#buffer = Buffer.allocUnsafe(64 * 1024);
    this.#used = 0;
    this.#events = -1;
  }

  /** bytes framed so far */
  get size(): number {
    return this.#used;
  }

  bytes(): Buffer {
    this.endEvents();
    return this.#buffer.subarray(0, this.#used);
  }

  /** a whole frame made elsewhere (a header, a frame copied from disk) */
  raw(frame: Buffer): void {
    this.endEvents();
    this.#room(frame.length);
    frame.copy(this.#buffer, this.#used);
    this.#used += frame.length;
  }

  /** one message's frame; `dataJson` is its body as JSON (undefined: no body); returns its size */
  message(m: StoredMessage, dataJson: string | undefined): number {
    this.endEvents();
    const start = this.#begin();
    this.#u8(MESSAGE);
    this.#f64(m.seq);
    this.#f64(m.created);
    this.#f64(m.acceptedAt);
    this.#str(m.messageId);
    this.#str(m.queue);
    this.#str(m.id);
    this.#str(m.from);
    if (dataJson !== undefined) {
      this.#room(dataJson.length * 3);
      this.#used += this.#utf8(dataJson, this.#used, BODY_LOOP_MAX);
    }
    this.#end(start);
    return this.#used - start;
  }

  /** a state change, added to the run being written (opened when none is) */
  event(record: Exclude<LogRecord, { k: 'h' | 'm' }>): void {
    if (this.#events < 0) {
      this.#events = this.#begin();
      this.#u8(EVENTS);
    }
    switch (record.k) {
      case 'a':
        this.#u8(OP_ASSIGN);
        this.#str(record.id);
        this.#u32(record.g.length);
        for (const g of record.g) this.#str(g);
        return;
      case 's':
        this.#u8(OP_SETTLE);
        this.#str(record.id);
        this.#str(record.g);
        this.#u8(OUTCOME_CODES.get(record.o) ?? 0);
        return;
      case 'r':
        this.#u8(OP_REQUEUE);
        this.#str(record.id);
        this.#str(record.g);
        this.#u32(record.n);
        this.#f64(record.nb);
        return;
      case 'x':
        this.#u8(OP_REMOVE);
        this.#str(record.id);
        return;
      case 'd':
        this.#u8(OP_RECENT);
        this.#str(record.id);
        this.#f64(record.at);
        return;
      default: {
        const never: never = record;
        throw new Error(`unknown log record ${JSON.stringify(never)}`);
      }
    }
  }

  /** closes the run of state changes being written, if any */
  endEvents(): void {
    if (this.#events < 0) return;
    this.#end(this.#events);
    this.#events = -1;
  }

  #begin(): number {
    this.#room(FRAME_HEADER_BYTES);
    const start = this.#used;
    this.#used += FRAME_HEADER_BYTES;
    return start;
  }

  #end(start: number): void {
    const payload = start + FRAME_HEADER_BYTES;
    this.#buffer.writeUInt32LE(this.#used - payload, start);
    this.#buffer.writeUInt32LE(crc32(this.#buffer.subarray(payload, this.#used)), start + 4);
  }

  #u8(value: number): void {
    this.#room(1);
    this.#buffer[this.#used++] = value;
  }

  #u32(value: number): void {
    this.#room(4);
    this.#used = this.#buffer.writeUInt32LE(value, this.#used);
  }

  #f64(value: number): void {
    this.#room(8);
    this.#used = this.#buffer.writeDoubleLE(value, this.#used);
  }

  #str(value: string): void {
    // utf8 takes at most 3 bytes per UTF-16 unit: room for the worst case, no byteLength pass
    this.#room(4 + value.length * 3);
    const length = this.#utf8(value, this.#used + 4, ASCII_LOOP_MAX);
    this.#buffer.writeUInt32LE(length, this.#used);
    this.#used += 4 + length;
  }

  /** writes `value` as utf8 at `at` (room made by the caller); returns its byte length */
  #utf8(value: string, at: number, loopMax: number): number {
    const buffer = this.#buffer;
    const n = value.length;
    if (n > loopMax) return buffer.write(value, at);
    // ids, names and small bodies are short and ASCII: a byte loop beats a call into C++
    for (let i = 0; i < n; i++) {
      const code = value.charCodeAt(i);
      if (code >= 0x80) return buffer.write(value, at);
      buffer[at + i] = code;
    }
    return n;
  }

  #room(bytes: number): void {
    if (this.#used + bytes <= this.#buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#used + bytes, this.#buffer.length * 2));
    this.#buffer.copy(bigger, 0, 0, this.#used);
    this.#buffer = bigger;
  }
}

/** what `bodyOfFrame` gives when the frame is not the message's version 2 record */
export const NO_BODY: unique symbol = Symbol('no body');

/**
 * The body of message `messageId` from its whole frame (header included), when the frame is
 * that message's version 2 record with a good CRC; NO_BODY otherwise (the caller decodes it the
 * long way, decodeRecord). What a body read back needs and no more: no StoredMessage, no strings
 * for its queue, id and sender (a drain reads a million bodies back).
 */
export function bodyOfFrame(frame: Buffer, messageId: string): unknown {
  const text = bodyTextOfFrame(frame, messageId);
  if (text === NO_BODY || text === undefined) return text;
  try {
    return JSON.parse(text);
  } catch {
    return NO_BODY;
  }
}

/**
 * The same as the JSON text written at intake, not parsed: a queue splices it into the deliver
 * frame (bodies.ts). The frame's CRC covers it; undefined when the message has no body.
 */
export function bodyTextOfFrame(frame: Buffer, messageId: string): string | undefined | typeof NO_BODY {
  const end = frame.length;
  if (end <= FRAME_HEADER_BYTES || frame.readUInt32LE(0) !== end - FRAME_HEADER_BYTES || frame[FRAME_HEADER_BYTES] !== MESSAGE) return NO_BODY;
  if (crc32(frame.subarray(FRAME_HEADER_BYTES)) !== frame.readUInt32LE(4)) return NO_BODY;
  // kind, then seq, created and acceptedAt (8 bytes each), then the message id
  let at = FRAME_HEADER_BYTES + 1 + 24;
  if (at + 4 > end) return NO_BODY;
  const idBytes = frame.readUInt32LE(at);
  at += 4;
  if (at + idBytes > end || !sameText(frame, at, idBytes, messageId)) return NO_BODY;
  at += idBytes;
  // queue, id, from: skipped
  for (let i = 0; i < 3; i++) {
    if (at + 4 > end) return NO_BODY;
    at += 4 + frame.readUInt32LE(at);
    if (at > end) return NO_BODY;
  }
  if (at >= end) return undefined;
  return frame.toString('utf8', at, end);
}

/** `length` bytes of `buffer` from `at` are `text` in utf8 (ASCII compared byte by byte, no string made) */
function sameText(buffer: Buffer, at: number, length: number, text: string): boolean {
  if (length !== text.length) return length >= text.length && buffer.toString('utf8', at, at + length) === text;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return buffer.toString('utf8', at, at + length) === text;
    if (buffer[at + i] !== c) return false;
  }
  return true;
}

/** reads a version 2 payload; null when it is not one (a foreign writer: the CRC was fine) */
export function decodeBinary(payload: Buffer): LogRecord[] | null {
  const reader = new Reader(payload);
  try {
    const kind = reader.u8();
    if (kind === MESSAGE) return [readMessage(reader)];
    if (kind !== EVENTS) return null;
    const records: LogRecord[] = [];
    while (!reader.done()) records.push(readEvent(reader));
    return records.length > 0 ? records : null;
  } catch {
    return null;
  }
}

function readMessage(r: Reader): LogRecord {
  const seq = r.f64();
  const created = r.f64();
  const acceptedAt = r.f64();
  const messageId = r.str();
  const queue = r.str();
  const id = r.str();
  const from = r.str();
  const data: unknown = r.done() ? undefined : JSON.parse(r.rest());
  return { k: 'm', m: { seq, messageId, queue, id, data, created, acceptedAt, from, json: undefined } };
}

function readEvent(r: Reader): LogRecord {
  const op = r.u8();
  const id = r.str();
  switch (op) {
    case OP_ASSIGN: {
      const n = r.u32();
      const g: string[] = [];
      for (let i = 0; i < n; i++) g.push(r.str());
      return { k: 'a', id, g };
    }
    case OP_SETTLE: {
      const g = r.str();
      const o = OUTCOMES[r.u8()];
      if (o === undefined) throw new Error('unknown outcome');
      return { k: 's', id, g, o };
    }
    case OP_REQUEUE: {
      const g = r.str();
      const n = r.u32();
      return { k: 'r', id, g, n, nb: r.f64() };
    }
    case OP_REMOVE:
      return { k: 'x', id };
    case OP_RECENT:
      return { k: 'd', id, at: r.f64() };
    default:
      throw new Error(`unknown operation ${op}`);
  }
}

/** reads a payload front to back; reading past its end throws (a RangeError from Buffer) */
class Reader {
  readonly #bytes: Buffer;
  #at = 0;

  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }

  done(): boolean {
    return this.#at >= this.#bytes.length;
  }

  u8(): number {
    return this.#bytes.readUInt8(this.#at++);
  }

  u32(): number {
    const value = this.#bytes.readUInt32LE(this.#at);
    this.#at += 4;
    return value;
  }

  f64(): number {
    const value = this.#bytes.readDoubleLE(this.#at);
    this.#at += 8;
    return value;
  }

  str(): string {
    const length = this.u32();
    const end = this.#at + length;
    if (end > this.#bytes.length) throw new RangeError('string past the end of the record');
    const value = this.#bytes.toString('utf8', this.#at, end);
    this.#at = end;
    return value;
  }

  rest(): string {
    const value = this.#bytes.toString('utf8', this.#at);
    this.#at = this.#bytes.length;
    return value;
  }
}
