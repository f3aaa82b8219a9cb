import { join } from 'node:path';
import { bodyOfFrame, bodyTextOfFrame, NO_BODY } from './log-binary.js';
import { decodeRecord, segmentName } from './log-format.js';
import type { LogFile, LogFs } from './log-fs.js';
import type { LiveEntry, LiveIndex } from './log-index.js';

/** one read from disk covers this much of a segment: neighbouring records come with it */
const WINDOW_BYTES = 1024 * 1024;

interface OpenSegment {
  readonly file: Promise<LogFile>;
  reads: number;
  retired: boolean;
}

/**
 * Read handles on the segments that hold live records, opened when the segment is written or
 * replayed and closed only once it is removed and no read is under way: a segment unlinked
 * under a running store (a real fault) can still be read through them.
 */
export class SegmentFiles {
  readonly #fs: LogFs;
  readonly #dir: string;
  readonly #open = new Map<number, OpenSegment>();

  constructor(fs: LogFs, dir: string) {
    this.#fs = fs;
    this.#dir = dir;
  }

  /** keeps a read handle on segment `number` from now on */
  track(number: number): void {
    if (this.#open.has(number)) return;
    const file = this.#fs.open(join(this.#dir, segmentName(number)), 'r');
    file.catch(() => undefined); // reported by the read that needs it
    this.#open.set(number, { file, reads: 0, retired: false });
  }

  /** the segment is gone: its handle closes after the reads under way */
  retire(number: number): void {
    const open = this.#open.get(number);
    if (!open) return;
    this.#open.delete(number);
    open.retired = true;
    if (open.reads === 0) void open.file.then((f) => f.close()).catch(() => undefined);
  }

  async read(number: number, buffer: Buffer, position: number): Promise<number> {
    if (!this.#open.has(number)) this.track(number);
    const open = this.#open.get(number)!;
    open.reads++;
    try {
      const file = await open.file;
      const { bytesRead } = await file.read(buffer, 0, buffer.length, position);
      return bytesRead;
    } finally {
      open.reads--;
      if (open.retired && open.reads === 0) void open.file.then((f) => f.close()).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    for (const number of [...this.#open.keys()]) this.retire(number);
  }
}

/**
 * Reads framed records by place, one window of a segment at a time: asked in log order (a
 * backlog drains in acceptance order), a megabyte of neighbours costs one read.
 */
export class FrameReader {
  readonly #files: SegmentFiles;
  #segment = -1;
  #start = 0;
  // a fresh buffer per window: frames handed out earlier stay valid
  #buffer = Buffer.alloc(0);

  constructor(files: SegmentFiles) {
    this.#files = files;
  }

  /** the frame when the window in memory holds it (no promise, no read), else undefined */
  frameInWindow(segment: number, offset: number, bytes: number): Buffer | undefined {
    if (segment !== this.#segment || offset < this.#start || offset + bytes > this.#start + this.#buffer.length) return undefined;
    const at = offset - this.#start;
    return this.#buffer.subarray(at, at + bytes);
  }

  /** the `bytes` bytes at `offset` of segment `segment` (a view: do not write to it) */
  async frame(segment: number, offset: number, bytes: number): Promise<Buffer> {
    const inWindow = segment === this.#segment && offset >= this.#start && offset + bytes <= this.#start + this.#buffer.length;
    if (!inWindow) {
      const buffer = Buffer.allocUnsafe(Math.max(WINDOW_BYTES, bytes));
      const read = await this.#files.read(segment, buffer, offset);
      if (read < bytes) throw new Error(`store segment ${segmentName(segment)} ends before the record at byte ${offset}`);
      this.#segment = segment;
      this.#start = offset;
      this.#buffer = buffer.subarray(0, read);
    }
    const at = offset - this.#start;
    return this.#buffer.subarray(at, at + bytes);
  }
}

/** `MessageStore.readBodies` for the log: live messages' records read back and decoded */
export class BodyReader {
  readonly #index: LiveIndex;
  readonly #frames: FrameReader;

  constructor(index: LiveIndex, frames: FrameReader) {
    this.#index = index;
    this.#frames = frames;
  }

  /**
   * Sorted by place, so a backlog read in acceptance order costs one read per megabyte.
   * `asText`: each body as the JSON text it was written from (`MessageStore.readBodyTexts`)
   */
  async read(messageIds: readonly string[], asText = false): Promise<unknown[]> {
    const bodies: unknown[] = messageIds.map(() => undefined);
    const wanted: Array<{ index: number; entry: LiveEntry }> = [];
    messageIds.forEach((messageId, index) => {
      const entry = this.#index.get(messageId);
      if (entry) wanted.push({ index, entry });
    });
    wanted.sort((a, b) => a.entry.segment - b.entry.segment || a.entry.offset - b.entry.offset);
    for (const { index, entry } of wanted) {
      // in the window read last (most of a backlog read in order): decoded without a promise per body
      const frame = this.#frames.frameInWindow(entry.segment, entry.offset, entry.bytes);
      const body = frame === undefined ? NOT_THERE : bodyOf(frame, entry, asText);
      bodies[index] = body !== NOT_THERE ? body : await this.#readOne(entry, asText);
    }
    return bodies;
  }

  async #readOne(entry: LiveEntry, asText: boolean, again = true): Promise<unknown> {
    try {
      const frame = await this.#frames.frame(entry.segment, entry.offset, entry.bytes);
      const body = bodyOf(frame, entry, asText);
      if (body === NOT_THERE) throw new Error(`store segment ${segmentName(entry.segment)} does not hold message ${entry.messageId} at byte ${entry.offset}`);
      return body;
    } catch (error) {
      // a compaction may have moved it between the look-up and the read
      const now = this.#index.get(entry.messageId);
      if (!now) return undefined;
      if (again && (now.segment !== entry.segment || now.offset !== entry.offset)) return this.#readOne(now, asText, false);
      throw error;
    }
  }
}

const NOT_THERE = Symbol('not there');

/** the body of the entry's message from its frame (as JSON text: `asText`); NOT_THERE when the frame holds another record */
function bodyOf(frame: Buffer, entry: LiveEntry, asText: boolean): unknown {
  const body = asText ? bodyTextOfFrame(frame, entry.messageId) : bodyOfFrame(frame, entry.messageId);
  if (body !== NO_BODY) return body;
  // a version 1 (JSON) frame, or not this message's
  const decoded = decodeRecord(frame, 0, frame.length);
  const record = decoded.ok ? decoded.records[0] : undefined;
  if (record?.k !== 'm' || record.m.messageId !== entry.messageId) return NOT_THERE;
  return asText && record.m.data !== undefined ? JSON.stringify(record.m.data) : record.m.data;
}
