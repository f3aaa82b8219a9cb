import { mkdir, rm, unlink, type FileHandle } from 'node:fs/promises';
import type { Retention } from '../../config/types.js';
import { encodeRecord, forEachRecord, type HistoryRecord, openForAppend, type ReadRecord, scanSegments, type SegmentMeta, segmentPath, writeSegmentMeta } from './segment.js';

/** a segment closes past this size, or past an eighth of `maxBytes`, so trimming stays fine-grained */
const SEGMENT_BYTES = 8 * 1_048_576;

export interface ReadRange {
  /** ms epoch, inclusive */
  readonly since?: number;
  /** start after this message */
  readonly sinceId?: string;
  /** ms epoch, inclusive */
  readonly until?: number;
}

/** the size past which a segment is closed: an eighth of `maxBytes` (at most 8 MiB) */
export function segmentLimit(retention: Retention): number {
  return Math.min(SEGMENT_BYTES, Math.max(4_096, Math.floor((retention.maxBytes ?? Infinity) / 8)));
}

/**
 * One retained channel's history (SPEC-style retention, issue 19): segments in acceptance
 * order, the oldest dropped whole when past `retention.seconds` or `retention.maxBytes`.
 * Only its metadata is in memory; records are read back from disk for replays. Every change
 * (open, append, trim, clear) runs one after the other, in call order (issue 27: the file
 * order is the acceptance order, and an append resolves after every earlier one).
 */
export class ChannelHistory {
  readonly #dir: string;
  #segments: SegmentMeta[] = [];
  #current: FileHandle | null = null;
  #nextSeq = 1;
  /** the last change queued: the next one starts after it */
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** appends and reads wait for this */
  open(): Promise<void> {
    return this.#queue(() => this.#open());
  }

  #queue(change: () => Promise<void>): Promise<void> {
    const run = this.#writing.then(change);
    this.#writing = run.catch(() => undefined);
    return run;
  }

  async #open(): Promise<void> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    this.#segments = await scanSegments(this.#dir);
    this.#nextSeq = (this.#segments.at(-1)?.seq ?? 0) + 1;
  }

  get bytes(): number {
    let total = 0;
    for (const s of this.#segments) total += s.bytes;
    return total;
  }

  get count(): number {
    let total = 0;
    for (const s of this.#segments) total += s.count;
    return total;
  }

  /** acceptance time of the newest record kept */
  get newestAt(): number {
    return this.#segments.at(-1)?.lastAt ?? -Infinity;
  }

  get oldestAt(): number | null {
    return this.#segments[0]?.firstAt ?? null;
  }

  /** appends the records, then trims: resolves once they are on disk (or dropped by the trim) */
  append(records: readonly HistoryRecord[], retention: Retention, now: () => number): Promise<void> {
    return this.#queue(async () => {
      await this.#append(records, retention);
      await this.#trim(retention, now());
    });
  }

  /**
   * Segments are cut between records, never past `segmentLimit` (a record larger stands alone),
   * and before each write the oldest go until it fits within `maxBytes`: the files on disk never
   * add up to more (issue 27). A record larger than `maxBytes` is not kept.
   */
  async #append(records: readonly HistoryRecord[], retention: Retention): Promise<void> {
    if (this.#closed) throw new Error('history closed');
    const limit = segmentLimit(retention);
    const ageLimitMs = retention.seconds !== undefined ? (retention.seconds * 1000) / 8 : Infinity;
    const maxBytes = retention.maxBytes ?? Infinity;
    let chunk: Buffer[] = [];
    let chunkBytes = 0;
    let first: HistoryRecord | null = null;
    let last: HistoryRecord | null = null;
    let count = 0;
    const flush = async () => {
      if (count === 0) return;
      await this.#write(Buffer.concat(chunk, chunkBytes), count, first!.acceptedAt, last!.acceptedAt, limit, ageLimitMs, maxBytes);
      chunk = [];
      chunkBytes = 0;
      count = 0;
      first = null;
    };
    for (const record of records) {
      const buffer = encodeRecord(record);
      if (buffer.length > maxBytes) continue;
      const open = this.#segments.at(-1);
      const room = this.#current && open ? limit - open.bytes : limit;
      if (count > 0 && (chunkBytes + buffer.length > Math.max(room, 0) || record.acceptedAt - first!.acceptedAt > ageLimitMs)) await flush();
      chunk.push(buffer);
      chunkBytes += buffer.length;
      first ??= record;
      last = record;
      count++;
    }
    await flush();
  }

  /** writes records that fit one segment: the current one if they fit, else a new one */
  async #write(buffer: Buffer, count: number, firstAt: number, lastAt: number, limit: number, ageLimitMs: number, maxBytes: number): Promise<void> {
    let last = this.#segments.at(-1);
    if (!last || !this.#current || (last.bytes > 0 && (last.bytes + buffer.length > limit || firstAt - last.firstAt > ageLimitMs))) {
      await this.#closeCurrent();
      last = undefined;
    }
    // room first: the oldest segments go (the current one too if it must) until this fits
    await this.#trim({ maxBytes: maxBytes - buffer.length }, -Infinity);
    if (!last || !this.#segments.includes(last) || !this.#current) {
      const path = segmentPath(this.#dir, this.#nextSeq);
      last = { path, seq: this.#nextSeq++, count: 0, bytes: 0, firstAt, lastAt: 0 };
      this.#current = await openForAppend(path);
      this.#segments.push(last);
    }
    await this.#current.write(buffer);
    last.bytes += buffer.length;
    last.count += count;
    last.lastAt = lastAt;
  }

  async #closeCurrent(): Promise<void> {
    const current = this.#current;
    if (!current) return;
    this.#current = null;
    await current.close();
    const last = this.#segments.at(-1);
    if (last) await writeSegmentMeta(last);
  }

  /**
   * Drops the oldest segments past the retention, the one being written included (the periodic
   * trim empties an expired history without a new send: issue 27). Returns bytes freed.
   */
  trim(retention: Retention, now: number): Promise<number> {
    let freed = 0;
    return this.#queue(async () => void (freed = await this.#trim(retention, now))).then(() => freed);
  }

  async #trim(retention: Pick<Retention, 'seconds' | 'maxBytes'>, now: number): Promise<number> {
    let freed = 0;
    const cutoff = retention.seconds !== undefined ? now - retention.seconds * 1000 : -Infinity;
    let total = this.bytes;
    while (this.#segments.length > 0) {
      const oldest = this.#segments[0]!;
      const tooOld = oldest.lastAt < cutoff;
      const tooBig = retention.maxBytes !== undefined && total > retention.maxBytes;
      if (!tooOld && !tooBig) break;
      if (this.#segments.length === 1 && this.#current) {
        const current = this.#current;
        this.#current = null;
        await current.close();
      }
      this.#segments.shift();
      total -= oldest.bytes;
      freed += oldest.bytes;
      await unlink(oldest.path).catch(() => undefined); // an open replay keeps reading it
      await unlink(`${oldest.path}.meta`).catch(() => undefined);
    }
    return freed;
  }

  /** `whisker delete --history`: every record gone, the next append starts a new segment */
  clear(): Promise<number> {
    const freed = this.bytes;
    return this.#queue(async () => {
      await this.#current?.close();
      this.#current = null;
      for (const s of this.#segments) await Promise.all([unlink(s.path), unlink(`${s.path}.meta`)].map((p) => p.catch(() => undefined)));
      this.#segments = [];
    }).then(() => freed);
  }

  /**
   * The ids of the newest records (a restart's check, issue 27), newest segment first, up to
   * `maxBytes` of them: it stops after a segment holding a record `known` says the log took, or
   * once segments are older than `at`.
   */
  async tailIds(at: number, maxBytes: number, known: (messageId: string) => boolean): Promise<Map<string, number>> {
    await this.#writing;
    const ids = new Map<string, number>();
    let read = 0;
    for (const segment of [...this.#segments].reverse()) {
      if (segment.lastAt < at || read >= maxBytes) break;
      let found = false;
      await forEachRecord(segment.path, segment.bytes, (record) => {
        ids.set(record.messageId, record.acceptedAt);
        found ||= known(record.messageId);
      });
      read += segment.bytes;
      if (found) break;
    }
    return ids;
  }

  /**
   * Calls `each` for the records in range, in acceptance order; `each` may return a promise
   * (the reader waits: flow control) or false (stop). Records appended after the call began
   * are not read: a replay ends.
   */
  async read(range: ReadRange, notBefore: number, each: (record: ReadRecord) => boolean | Promise<boolean>): Promise<void> {
    const segments = this.#segments.map((s) => ({ path: s.path, bytes: s.bytes, lastAt: s.lastAt }));
    const since = Math.max(range.since ?? -Infinity, notBefore);
    let waitingFor = range.sinceId;
    let stopped = false;
    const stop = (): false => {
      stopped = true;
      return false;
    };
    for (const segment of segments) {
      if (stopped) return;
      if (waitingFor === undefined && segment.lastAt < since) continue;
      await forEachRecord(segment.path, segment.bytes, (record) => {
        if (waitingFor !== undefined) {
          if (record.messageId === waitingFor) waitingFor = undefined;
          return true;
        }
        if (record.acceptedAt < since) return true;
        if (range.until !== undefined && record.acceptedAt > range.until) return stop();
        const go = each(record);
        if (go instanceof Promise) return go.then((ok) => ok || stop());
        return go || stop();
      });
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    return this.#queue(async () => {
      await this.#closeCurrent();
    });
  }

  async destroy(): Promise<void> {
    await this.close();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
