import { mkdir, rm, unlink, type FileHandle } from 'node:fs/promises';
import type { Retention } from '../../config/types.js';
import { encodeRecord, forEachRecord, type HistoryRecord, openForAppend, type ReadRecord, scanSegments, type SegmentMeta, segmentPath, writeSegmentMeta } from './segment.js';
import { HistoryView } from './history-view.js';
import { appendToSegment, dropFromSegments, laterThanCatchUp, newestIds, readSide, SIDE_GAP, type SideLine, takeRecent, writeSide } from './side-line.js';

export { HistoryView } from './history-view.js';

/** a follower's catch-up begins this many records before its newest (`anchors`) */
export const ANCHOR_BACK = 10_000;
/**
 * at the join, the records this broker had are compared with the catch-up's from this long
 * before the oldest it brought (acceptance times come from different brokers' clocks)
 */
const COMPARE_SLACK_MS = 600_000;
/** ... and only its newest segments up to this many records (a catch-up begins at most ANCHOR_BACK plus the master's look-back before them) */
const COMPARE_RECORDS = 60_000;

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

/** appends gathered into one queued change (ChannelHistory.append) */
interface Gathering {
  readonly records: HistoryRecord[];
  retention: Retention;
  done: Promise<void>;
}

/** the size past which a segment is closed: an eighth of `maxBytes` (at most 8 MiB) */
export function segmentLimit(retention: Retention): number {
  return Math.min(SEGMENT_BYTES, Math.max(4_096, Math.floor((retention.maxBytes ?? Infinity) / 8)));
}

/**
 * Why this file is long: one channel's segments and every change to them (open, append, trim,
 * clear, and a mirror's side line and catch-up) run through one queue in call order; split,
 * the state would part from the changes that keep it consistent.
 *
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
  /** the last change queued when it is an append not begun yet: later appends join it (`append`) */
  #gathering: Gathering | null = null;
  #closed = false;
  /**
   * While this mirror is out of step with a master (docs/operations.md#history-catch-up): its own
   * writes go to segments from `side.from` on, and a catch-up from the master goes before them
   */
  #side: SideLine | null = null;
  /** reads under way (replays): a join takes no record out of the files meanwhile (`joinSide`) */
  #reading = 0;
  /** the catch-up being written: its open segment; `first`, its first segment once listed in `side.catchUps` */
  #catchUp: { segment: SegmentMeta | null; handle: FileHandle | null; first: number | null; replacing: boolean } | null = null;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** appends and reads wait for this */
  open(): Promise<void> {
    return this.#queue(() => this.#open());
  }

  #queue(change: () => Promise<void>): Promise<void> {
    // what is queued from now on goes after this change: a later append no longer joins the gathered one
    this.#gathering = null;
    const run = this.#writing.then(change);
    this.#writing = run.catch(() => undefined);
    return run;
  }

  async #open(): Promise<void> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    this.#segments = await scanSegments(this.#dir);
    this.#nextSeq = (this.#segments.at(-1)?.seq ?? 0) + 1;
    this.#side = await readSide(this.#dir);
    if (this.#side) {
      this.#nextSeq = Math.max(this.#nextSeq, this.#side.from);
      this.#side.gapNext = Math.max(this.#side.gapNext, ...this.#main().map((m) => m.seq + 1));
    }
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

  /**
   * Appends the records, then trims: resolves once they are on disk (or dropped by the trim).
   * Appends queued one after the other, none begun yet, are written together (one synced write
   * per segment, like the message log's batches): each append costs a synced write otherwise,
   * and on a slow disk appends arriving faster than one per write queued without bound, with
   * everything behind them (a mirror's catch-up: issue 27, nemesis seed 27)
   */
  append(records: readonly HistoryRecord[], retention: Retention, now: () => number): Promise<void> {
    const gathering = this.#gathering;
    if (gathering) {
      for (const record of records) gathering.records.push(record);
      gathering.retention = retention;
      return gathering.done;
    }
    const batch: Gathering = { records: [...records], retention, done: Promise.resolve() };
    batch.done = this.#queue(async () => {
      if (this.#gathering === batch) this.#gathering = null;
      await this.#append(batch.records, batch.retention);
      await this.#trim(batch.retention, now());
    });
    // after #queue: any other change queued later closes it (appends join only the last change queued)
    this.#gathering = batch;
    return batch.done;
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
    // the chunk's oldest and newest acceptance times (records need not be in time order: held copies, offers)
    let oldestAt = Infinity;
    let newestAt = -Infinity;
    let count = 0;
    const flush = async () => {
      if (count === 0) return;
      await this.#write(Buffer.concat(chunk, chunkBytes), count, oldestAt, newestAt, limit, ageLimitMs, maxBytes);
      chunk = [];
      chunkBytes = 0;
      count = 0;
      first = null;
      oldestAt = Infinity;
      newestAt = -Infinity;
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
      oldestAt = Math.min(oldestAt, record.acceptedAt);
      newestAt = Math.max(newestAt, record.acceptedAt);
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
    last.firstAt = Math.min(last.firstAt, firstAt);
    last.lastAt = Math.max(last.lastAt, lastAt);
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

  /** the ids of the records in segments whose newest record is accepted at `at` or later (a restart's check of what the held journal gives back) */
  async idsFrom(at: number): Promise<Set<string>> {
    await this.#writing;
    const ids = new Set<string>();
    for (const segment of this.#segments) if (segment.lastAt >= at) await forEachRecord(segment.path, segment.bytes, (record) => void ids.add(record.messageId));
    return ids;
  }

  /**
   * Calls `each` for the records in range, in acceptance order; `each` may return a promise
   * (the reader waits: flow control) or false (stop). Records whose write was asked before the
   * call are read (it waits for them: a promoted slave still writing what it held, or its
   * master's last feed, replays them); those appended after it began are not: a replay ends.
   */
  async read(range: ReadRange, notBefore: number, each: (record: ReadRecord) => boolean | Promise<boolean>, ready?: () => boolean): Promise<boolean> {
    let segments: Array<{ path: string; bytes: number; lastAt: number }> = [];
    let begun = false;
    // the files as they are once the writes asked are done, taken in turn with the changes (a
    // join's `hold` sees this read under way); not when `ready` says the history holds records back
    await this.#queue(async () => {
      if (ready && !ready()) return;
      segments = this.#segments.map((s) => ({ path: s.path, bytes: s.bytes, lastAt: s.lastAt }));
      this.#reading++;
      begun = true;
    });
    if (!begun) return false;
    try {
      await this.#readSegments(segments, range, notBefore, each);
    } finally {
      this.#reading--;
    }
    return true;
  }

  async #readSegments(segments: ReadonlyArray<{ path: string; bytes: number; lastAt: number }>, range: ReadRange, notBefore: number, each: (record: ReadRecord) => boolean | Promise<boolean>): Promise<void> {
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

  // ---- a mirror out of step, and its catch-up (docs/operations.md#history-catch-up) ---------

  /** the segments written before this broker fell out of step (all of them while it is in step) */
  #main(): SegmentMeta[] {
    const side = this.#side;
    return side ? this.#segments.filter((s) => s.seq < side.from) : this.#segments;
  }

  /** from now on this broker's own writes go after whatever a catch-up will put before them */
  beginSide(): Promise<void> {
    return this.#queue(async () => {
      if (!this.#closed) await this.#openSide();
    });
  }

  async #openSide(): Promise<SideLine> {
    if (this.#side) return this.#side;
    await this.#closeCurrent();
    const side: SideLine = { from: this.#nextSeq + SIDE_GAP, gapNext: this.#nextSeq, catchUpFrom: null, ended: [] };
    this.#side = side;
    this.#nextSeq = side.from;
    await writeSide(this.#dir, side);
    return side;
  }

  /**
   * The ids a follower names for its catch-up, from the records written before this broker fell
   * out of step and by its catch-ups since, oldest first: half of `count` from ANCHOR_BACK records
   * before the newest (the oldest when it has fewer), half the newest. The master sends what
   * follows the earliest it finds, so the catch-up begins ANCHOR_BACK records back: this broker's
   * newest records need not end a prefix of its master's history (a master killed -9 wrote sends
   * its successor placed after others it lacks: outside check atk27g G1, G3; a catch-up cut short
   * wrote its master's order, and the next master placed records before its newest that the
   * first never sent: atk27i I1). The newest anchor it when the older ones are gone.
   */
  async anchors(count: number): Promise<string[]> {
    await this.#writing;
    const older = Math.floor(count / 2);
    const main = this.#main();
    const newest = await newestIds(main, count - older);
    const total = main.reduce((sum, s) => sum + s.count, 0);
    const back = await newestIds(main, older, Math.min(ANCHOR_BACK, Math.max(0, total - older)));
    return [...back, ...newest.filter((id) => !back.includes(id))];
  }

  /**
   * A catch-up of this channel begins: the master's records follow `after` (null: from the
   * start, what this broker had before falling out of step goes). Its records land before this
   * broker's own writes since, after those of an earlier catch-up cut short; at the join the
   * records it brings leave every place before it (the master's place wins).
   */
  catchUpBegin(after: string | null): Promise<void> {
    return this.#queue(async () => {
      if (this.#closed) throw new Error('history closed');
      await this.#openSide();
      await this.#endCatchUp();
      if (after === null) {
        for (const segment of this.#main()) await this.#drop(segment);
      }
      this.#catchUp = { segment: null, handle: null, first: null, replacing: after === null };
    });
  }

  /**
   * the master's records, in its order, before this broker's own writes since it fell out of
   * step; resolves true when a catch-up took them (written, or in the history already)
   */
  catchUpWrite(records: readonly HistoryRecord[], retention: Retention, now: () => number): Promise<boolean> {
    let taken = false;
    return this.#queue(async () => {
      const catchUp = this.#catchUp;
      if (!catchUp || !this.#side) return;
      taken = true;
      const limit = segmentLimit(retention);
      const maxBytes = retention.maxBytes ?? Infinity;
      // runs that fit the open catch-up segment, each written at once (one O_DSYNC write)
      let run: Buffer[] = [];
      let runBytes = 0;
      let firstAt = Infinity;
      let lastAt = -Infinity;
      const flush = async () => {
        if (run.length === 0) return;
        await this.#writeCatchUp(Buffer.concat(run, runBytes), run.length, firstAt, lastAt, limit, maxBytes);
        run = [];
        runBytes = 0;
        firstAt = Infinity;
        lastAt = -Infinity;
      };
      for (const record of records) {
        if (catchUp.replacing) {
          // the master's whole history: own writes older than its oldest record go at the join
          catchUp.replacing = false;
          this.#side.replacedBefore = record.acceptedAt;
          await writeSide(this.#dir, this.#side);
        }
        const buffer = encodeRecord(record);
        if (buffer.length > maxBytes) continue;
        const open = catchUp.handle && catchUp.segment && this.#segments.includes(catchUp.segment) ? catchUp.segment.bytes : 0;
        if (run.length > 0 && open + runBytes + buffer.length > limit) await flush();
        run.push(buffer);
        runBytes += buffer.length;
        firstAt = Math.min(firstAt, record.acceptedAt);
        lastAt = Math.max(lastAt, record.acceptedAt);
      }
      await flush();
      await this.#trim(retention, now());
    }).then(() => taken);
  }

  /** records that fit one segment: the open catch-up segment if they fit, else a new one in the gap */
  async #writeCatchUp(buffer: Buffer, count: number, firstAt: number, lastAt: number, limit: number, maxBytes: number): Promise<void> {
    const catchUp = this.#catchUp!;
    const side = this.#side!;
    // room first, as for an append: the files never add up to more than maxBytes
    await this.#trim({ maxBytes: maxBytes - buffer.length }, -Infinity);
    let segment = catchUp.segment;
    if (!segment || !catchUp.handle || !this.#segments.includes(segment) || (segment.bytes > 0 && segment.bytes + buffer.length > limit)) {
      await this.#endCatchUpSegment();
      const seq = side.gapNext++;
      if (side.catchUpFrom === null) side.catchUpFrom = seq;
      if (catchUp.first === null) {
        catchUp.first = seq;
        side.catchUps = [...(side.catchUps ?? []), seq];
      }
      await writeSide(this.#dir, side);
      const path = segmentPath(this.#dir, seq);
      segment = { path, seq, count: 0, bytes: 0, firstAt, lastAt };
      catchUp.handle = await openForAppend(path);
      catchUp.segment = segment;
      const at = this.#segments.findIndex((s) => s.seq > seq);
      this.#segments.splice(at < 0 ? this.#segments.length : at, 0, segment);
    }
    await catchUp.handle!.write(buffer);
    segment.bytes += buffer.length;
    segment.count += count;
    segment.firstAt = Math.min(segment.firstAt, firstAt);
    segment.lastAt = Math.max(segment.lastAt, lastAt);
  }

  /**
   * The master's catch-up of this channel is complete: its file is closed. What the master's
   * feed names before the sync is done still goes after it (`catchUpWrite`), until `joinSide`.
   */
  catchUpEnd(): Promise<void> {
    return this.#queue(async () => {
      await this.#endCatchUpSegment();
      const first = this.#catchUp?.first;
      const side = this.#side;
      if (first === null || first === undefined || !side || side.ended?.includes(first)) return;
      side.ended = [...(side.ended ?? []), first];
      await writeSide(this.#dir, side);
    });
  }

  async #endCatchUpSegment(): Promise<void> {
    const catchUp = this.#catchUp;
    if (!catchUp?.handle) return;
    const handle = catchUp.handle;
    catchUp.handle = null;
    await handle.close();
    if (catchUp.segment && this.#segments.includes(catchUp.segment)) await writeSegmentMeta(catchUp.segment);
  }

  async #endCatchUp(): Promise<void> {
    await this.#endCatchUpSegment();
    this.#catchUp = null;
  }

  /**
   * In step (or promoted): this broker's own writes since it fell out of step stay where they
   * are, after the catch-up, less the records the catch-up brought too (the master's order wins).
   */
  joinSide(hold?: { since: number; maxBytes: number; keep?: ReadonlySet<string>; journal?: (records: readonly HistoryRecord[]) => Promise<void> }): Promise<HistoryRecord[]> {
    let held: HistoryRecord[] = [];
    return this.#queue(async () => {
      const side = this.#side;
      if (!side) return;
      await this.#endCatchUp();
      await this.#closeCurrent();
      if (side.catchUpFrom !== null) {
        const from = side.catchUpFrom;
        const caughtUp = this.#segments.filter((s) => s.seq >= from && s.seq < side.from);
        const own = this.#segments.filter((s) => s.seq >= side.from);
        for (const emptied of await dropFromSegments(own, caughtUp, side.replacedBefore ?? -Infinity)) await this.#drop(emptied);
        // what this broker had (and what an earlier catch-up cut short wrote) that a catch-up
        // brought too (it began up to ANCHOR_BACK records back): the master's place wins, the
        // newest catch-up's first. Records older than the catch-up by far are not compared.
        const starts = side.catchUps && side.catchUps.length > 0 ? side.catchUps : [from];
        for (let k = starts.length - 1; k >= 0; k--) {
          const begin = starts[k]!;
          const end = starts[k + 1] ?? side.from;
          const brought = this.#segments.filter((s) => s.seq >= begin && s.seq < end);
          if (brought.length === 0) continue;
          const oldestBrought = Math.min(...brought.map((s) => s.firstAt));
          const had: SegmentMeta[] = [];
          let records = 0;
          for (const segment of this.#segments.filter((s) => s.seq < begin).reverse()) {
            if (records >= COMPARE_RECORDS || segment.lastAt < oldestBrought - COMPARE_SLACK_MS) break;
            had.unshift(segment);
            records += segment.count;
          }
          // the last catch-up, cut short: what this broker had after the first record it brought goes
          // after it (else the master's records took their place after ones it would have brought
          // next); an earlier one's place was decided by the next (what it brought went from it)
          if (k === starts.length - 1 && side.ended && !side.ended.includes(begin)) await appendToSegment(brought.at(-1)!, await laterThanCatchUp(had, brought));
          for (const emptied of await dropFromSegments(had, brought)) await this.#drop(emptied);
        }
      }
      // not while a replay reads these files: it would miss the records taken out (outside check
      // atk27i I3: a master fenced and elected again while its replay read lacked 2,295-6,417 sends
      // it had answered); they stay where they arrived
      if (hold && this.#reading === 0) {
        // a slave in step: its recent own records the catch-up did not bring are messages its
        // master may accept only now (clients' copies at the end of the sync, a client's re-sent
        // copies): they go back to wait for the feed to place them (issue 27)
        const { records, emptied } = await takeRecent(this.#segments.filter((s) => s.seq >= side.from), hold.since, hold.maxBytes, hold.keep, hold.journal);
        for (const segment of emptied) await this.#drop(segment);
        held = records;
      }
      this.#side = null;
      await writeSide(this.#dir, null);
    }).then(() => held);
  }

  async #drop(segment: SegmentMeta): Promise<void> {
    const at = this.#segments.indexOf(segment);
    if (at < 0) return;
    if (at === this.#segments.length - 1 && this.#current) {
      const current = this.#current;
      this.#current = null;
      await current.close();
    }
    this.#segments.splice(at, 1);
    await unlink(segment.path).catch(() => undefined);
    await unlink(`${segment.path}.meta`).catch(() => undefined);
  }

  /** the records as they are now, for a follower's catch-up: later appends are not part of it, nor the ids in `skip` */
  view(notBefore: number, skip?: ReadonlySet<string>): HistoryView {
    return new HistoryView(this.#segments.map((s) => ({ path: s.path, bytes: s.bytes, lastAt: s.lastAt })), notBefore, skip);
  }

  close(): Promise<void> {
    this.#closed = true;
    return this.#queue(async () => {
      await this.#endCatchUp();
      await this.#closeCurrent();
    });
  }

  async destroy(): Promise<void> {
    await this.close();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
