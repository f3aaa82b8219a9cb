import { mkdir, rm, unlink, type FileHandle } from 'node:fs/promises';
import type { Retention } from '../../config/types.js';
import { encodeRecords, forEachRecord, type HistoryRecord, openForAppend, type ReadRecord, scanSegments, type SegmentMeta, segmentPath, writeSegmentMeta } from './segment.js';

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

/**
 * One retained channel's history (SPEC-style retention, issue 19): segments in acceptance
 * order, the oldest dropped whole when past `retention.seconds` or `retention.maxBytes`.
 * Only its metadata is in memory; records are read back from disk for replays.
 */
export class ChannelHistory {
  readonly #dir: string;
  #segments: SegmentMeta[] = [];
  #current: FileHandle | null = null;
  #nextSeq = 1;
  /** appends one after the other: the file order is the acceptance order */
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** appends and reads wait for this */
  open(): Promise<void> {
    const run = this.#writing.then(() => this.#open());
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

  get oldestAt(): number | null {
    return this.#segments[0]?.firstAt ?? null;
  }

  append(records: readonly HistoryRecord[], retention: Retention): Promise<void> {
    const run = this.#writing.then(() => this.#append(records, retention));
    this.#writing = run.catch(() => undefined);
    return run;
  }

  async #append(records: readonly HistoryRecord[], retention: Retention): Promise<void> {
    if (this.#closed) throw new Error('history closed');
    const buffer = encodeRecords(records);
    let last = this.#segments.at(-1);
    const limit = Math.min(SEGMENT_BYTES, Math.max(4_096, Math.floor((retention.maxBytes ?? Infinity) / 8)));
    const ageLimitMs = retention.seconds !== undefined ? (retention.seconds * 1000) / 8 : Infinity;
    if (!last || !this.#current || last.bytes >= limit || records[0]!.acceptedAt - last.firstAt > ageLimitMs) {
      if (this.#current && last) {
        await this.#current.close();
        await writeSegmentMeta(last);
      }
      const path = segmentPath(this.#dir, this.#nextSeq);
      last = { path, seq: this.#nextSeq++, count: 0, bytes: 0, firstAt: records[0]!.acceptedAt, lastAt: 0 };
      this.#current = await openForAppend(path);
      this.#segments.push(last);
    }
    await this.#current.write(buffer);
    last.bytes += buffer.length;
    last.count += records.length;
    last.lastAt = records.at(-1)!.acceptedAt;
  }

  /** drops the oldest segments past the retention; the one being written stays. Returns bytes freed */
  async trim(retention: Retention, now: number): Promise<number> {
    let freed = 0;
    const cutoff = retention.seconds !== undefined ? now - retention.seconds * 1000 : -Infinity;
    let total = this.bytes;
    while (this.#segments.length > 1) {
      const oldest = this.#segments[0]!;
      const tooOld = oldest.lastAt < cutoff;
      const tooBig = retention.maxBytes !== undefined && total > retention.maxBytes;
      if (!tooOld && !tooBig) break;
      this.#segments.shift();
      total -= oldest.bytes;
      freed += oldest.bytes;
      await unlink(oldest.path).catch(() => undefined); // an open replay keeps reading it
      await unlink(`${oldest.path}.meta`).catch(() => undefined);
    }
    return freed;
  }

  /** `whisker delete --history`: every record gone, the next append starts a new segment */
  async clear(): Promise<number> {
    const freed = this.bytes;
    await this.#writing;
    await this.#current?.close();
    this.#current = null;
    for (const s of this.#segments) await Promise.all([unlink(s.path), unlink(`${s.path}.meta`)].map((p) => p.catch(() => undefined)));
    this.#segments = [];
    return freed;
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

  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing;
    await this.#current?.close();
    this.#current = null;
  }

  async destroy(): Promise<void> {
    await this.close();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
