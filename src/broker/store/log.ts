import { dirname, join } from 'node:path';
import { FrameWriter } from './log-binary.js';
import { encodeHeader, segmentName } from './log-format.js';
import { type LogFile, type LogFs, nodeFs, removeIfPresent, syncDirectory, writeFully } from './log-fs.js';
import { type Batch, Pending, toRecord } from './log-batch.js';
import { IdSlots } from '../../protocol/id-slots.js';
import { type Capture, LiveIndex, type RecordPlace } from './log-index.js';
import { BodyReader, FrameReader, SegmentFiles } from './log-reader.js';
import { type CompactionSettings, IDLE_COMPACT_BYTES, type LogStoreOptions, type LogStoreStats, shouldCompact, type StoreLogger } from './log-options.js';
import { replaySegments } from './log-replay.js';
import { writeSnapshot } from './log-snapshot.js';
import type { MessageStore, RecoveredState, StoredMessage, StoreEvent } from './store.js';

export type { LogStoreOptions, LogStoreStats, StoreLogger } from './log-options.js';

const silent: StoreLogger = { error() {}, warn() {}, info() {} };
/** records kept from a failed batch are never messages: they have no place to read back */
const NOWHERE: RecordPlace = { segment: -1, offset: -1, replayed: false, inSnapshot: false };
/**
 * records one commit takes at most: its encoding and index updates run in one turn, so a pile
 * queued behind a slow fsync (a drain's assigns, acks and removals) is written in pieces that
 * each keep the event loop short; the rest goes with the next commit
 */
const MAX_COMMIT_RECORDS = 4096;
/**
 * State changes no send waits for (a delivery, an ack, a removal) wait this long for an append
 * to commit with: at a steady rate they ride with the next message's write instead of taking a
 * write of their own that the next message would queue behind (1.65 -> 1 commit per message
 * at 1,000 msg/s). SPEC §8 allows it: lost to a kill -9, they only mean a delivery again.
 */
const EVENT_DELAY_MS = 2;

interface Segment {
  readonly number: number;
  readonly file: LogFile;
  bytes: number;
}

/**
 * Why this file is long: the log store is the one owner of its segments, index and commits;
 * what stands alone is in log-batch, log-format, log-fs, log-index, log-reader, log-replay, log-snapshot.
 *
 * The durable store (SPEC §8; format in log-format.ts): an append-only log of framed records in
 * numbered segment files. Group commit: one writer takes everything queued, writes it with
 * one call, fdatasyncs, then answers every append in it; records arriving meanwhile form the
 * next batch. Compaction writes the live state as a snapshot segment and drops older ones.
 */
export class LogStore implements MessageStore {
  readonly #dir: string;
  readonly #fs: LogFs;
  readonly #log: StoreLogger;
  readonly #compactionSettings: CompactionSettings;
  readonly #retryMs: number;
  readonly #idleCompactMs: number;
  #idleTimer: NodeJS.Timeout | null = null;
  readonly #index: LiveIndex;
  /** the index's id map, shared with the router's rows (store.ts `messageIds`) */
  readonly messageIds = new IdSlots();
  readonly #files: SegmentFiles;
  /** bodies for the queues and records for snapshots, each reading in its own order */
  readonly #bodies: BodyReader;
  readonly #snapshotReader: FrameReader;
  #state: 'new' | 'open' | 'failed' | 'closed' = 'new';
  #queued = new Pending(MAX_COMMIT_RECORDS);
  readonly #writer = new FrameWriter();
  #active: Segment | null = null;
  #needsHeader = true;
  /** closed segments still on disk: number -> bytes */
  #segments = new Map<number, number>();
  #nextNumber = 1;
  #draining: Promise<void> | null = null;
  #scheduled = false;
  /** a commit of state changes alone, held back for an append to join (EVENT_DELAY_MS) */
  #eventTimer: NodeJS.Timeout | null = null;
  readonly #eventDelayMs: number;
  #compaction: Promise<void> | null = null;
  #retryTimer: NodeJS.Timeout | null = null;
  #recovering: Promise<void> | null = null;
  readonly #stats = { commits: 0, fsyncs: 0, records: 0, compactions: 0, failures: 0 };

  constructor(directory: string, options: LogStoreOptions = {}) {
    this.#dir = directory;
    this.#fs = options.fs ?? nodeFs;
    this.#log = options.log ?? silent;
    this.#compactionSettings = { compactBytes: options.compactBytes ?? 64 * 1024 * 1024, compactRatio: options.compactRatio ?? 4 };
    this.#retryMs = options.retryMs ?? 1000;
    this.#idleCompactMs = options.idleCompactMs ?? 1000;
    this.#eventDelayMs = options.eventDelayMs ?? EVENT_DELAY_MS;
    this.#index = new LiveIndex(options.dedupeWindowMs ?? 120_000, options.now ?? Date.now, options.replayBodyBytes ?? 4 * 1024 * 1024, this.messageIds);
    this.#files = new SegmentFiles(this.#fs, directory);
    this.#bodies = new BodyReader(this.#index, new FrameReader(this.#files));
    this.#snapshotReader = new FrameReader(this.#files);
  }

  readonly readsBodies = true;

  get stats(): LogStoreStats {
    return { ...this.#stats, diskBytes: this.#diskBytes() };
  }

  async load(): Promise<RecoveredState> {
    if (this.#state !== 'new') throw new Error('LogStore.load() runs once, before any append');
    await this.#fs.mkdir(this.#dir);
    // the store directory itself must survive a power loss on the very first start
    await syncDirectory(this.#fs, dirname(this.#dir));
    const replay = await replaySegments(this.#fs, this.#dir, (record, bytes, place) => this.#index.apply(record, bytes, place), this.#log);
    this.#segments = replay.segments;
    for (const number of replay.segments.keys()) this.#files.track(number);
    this.#nextNumber = replay.nextNumber;
    this.#active = await this.#openSegment(this.#nextNumber++);
    this.#state = 'open';
    const recovered = this.#index.recovered();
    if (replay.records > 0) this.#log.info('store replayed', { directory: this.#dir, segments: replay.segments.size, records: replay.records, messages: recovered.messages.length });
    return recovered;
  }

  append(messages: readonly StoredMessage[]): Promise<void> {
    if (this.#state !== 'open') return Promise.reject(new Error(this.#state === 'failed' ? 'store is failing: not written' : `store is ${this.#state === 'new' ? 'not loaded' : 'closed'}`));
    if (messages.length === 0) return Promise.resolve();
    let json: (string | undefined)[];
    try {
      json = messages.map((m) => m.json ?? JSON.stringify(m.data));
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return new Promise<void>((resolve, reject) => {
      messages.forEach((m, i) => this.#queued.pushMessage(m, json[i]));
      this.#queued.wait({ resolve, reject });
      this.#kick();
    });
  }

  record(events: readonly StoreEvent[]): void {
    if (this.#state === 'new' || this.#state === 'closed') return;
    for (const event of events) this.#queued.push(toRecord(event));
    this.#kick();
  }

  readBodies(messageIds: readonly string[]): Promise<unknown[]> {
    return this.#bodies.read(messageIds);
  }

  readBodyTexts(messageIds: readonly string[]): Promise<Array<string | undefined>> {
    return this.#bodies.read(messageIds, true) as Promise<Array<string | undefined>>;
  }

  isHealthy(): boolean {
    return this.#state === 'open';
  }

  /** writes what is queued, waits for a compaction under way, closes the file */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#stopRetrying();
    await this.#recovering;
    while (this.#state === 'open' && (this.#draining || this.#queued.size > 0)) await (this.#draining ?? this.#drain());
    await this.#draining;
    await this.#compaction;
    const left = this.#queued;
    this.#queued = new Pending(MAX_COMMIT_RECORDS);
    if (left.size > 0) this.#log.warn('store closed with records it could not write', { records: left.size });
    for (const part of left.batches()) for (const waiter of part.waiters) waiter.reject(new Error('store closed'));
    this.#state = 'closed';
    this.#stopRetrying();
    await this.#active?.file.close().catch(() => undefined);
    this.#active = null;
    await this.#files.close();
  }

  #stopRetrying(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    if (this.#eventTimer) clearTimeout(this.#eventTimer);
    this.#retryTimer = null;
    this.#idleTimer = null;
    this.#eventTimer = null;
  }

  // ---- the writer ----------------------------------------------------------------------

  /** an append waits for what is queued; state changes alone may wait for one (EVENT_DELAY_MS) */
  #urgent(): boolean {
    const queued = this.#queued;
    return queued.hasWaiters || queued.size >= MAX_COMMIT_RECORDS || this.#eventDelayMs <= 0;
  }

  /** the first record of a turn starts the writer on the next one: a burst becomes one batch */
  #kick(): void {
    if (this.#state !== 'open' || this.#scheduled || this.#draining) return;
    if (!this.#urgent()) {
      this.#eventTimer ??= setTimeout(() => {
        this.#eventTimer = null;
        this.#kickNow();
      }, this.#eventDelayMs);
      return;
    }
    this.#kickNow();
  }

  #kickNow(): void {
    if (this.#state !== 'open' || this.#scheduled || this.#draining) return;
    if (this.#eventTimer) clearTimeout(this.#eventTimer);
    this.#eventTimer = null;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#draining && this.#state === 'open') void this.#drain();
    });
  }

  #drain(): Promise<void> {
    const run = async () => {
      while (this.#state === 'open' && this.#queued.size > 0) {
        if (!(await this.#commit(this.#queued.take()))) return;
        await this.#maybeCompact(false);
        // state changes alone queued meanwhile: the finally's kick holds them back
        if (!this.#urgent()) break;
      }
      if (this.#state === 'open' && this.#index.size === 0) this.#armIdleCompaction();
    };
    this.#draining = run().finally(() => {
      this.#draining = null;
      // a record queued after the loop's last look and before this (a kick is ignored while
      // draining) would wait for the next one: a deliver record lost to a kill -9 meanwhile
      if (this.#queued.size > 0) this.#kick();
    });
    return this.#draining;
  }

  async #commit(batch: Batch): Promise<boolean> {
    const segment = this.#active!;
    const start = segment.bytes;
    const { frames, offsets, sizes } = batch.encode(this.#writer, this.#needsHeader ? encodeHeader(false) : null);
    try {
      const written = await writeFully(segment.file, [frames], segment.bytes);
      // at light load a commit per message: one thread-pool call instead of two when possible
      if (!segment.file.writesAreDurable) await segment.file.datasync();
      this.#stats.fsyncs++;
      // the stat spots a segment removed under us: writes to it would "succeed" and be lost
      const stat = await segment.file.stat();
      if (stat.nlink === 0) throw new Error(`segment ${segmentName(segment.number)} was removed from ${this.#dir}`);
      segment.bytes += written;
    } catch (error) {
      this.#fail(error, batch);
      return false;
    }
    this.#needsHeader = false;
    this.#stats.commits++;
    // one place object for the batch, moved along: the index copies what it keeps
    const place = { segment: segment.number, offset: start, replayed: false, inSnapshot: false };
    const { records } = batch;
    for (let i = 0; i < records.length; i++) {
      if (offsets[i]! < 0) continue; // left out of the commit (see Batch.encode)
      this.#stats.records++;
      place.offset = start + offsets[i]!;
      this.#index.apply(records[i]!, sizes[i]!, place);
    }
    for (const waiter of batch.waiters) waiter.resolve();
    return true;
  }

  /** never answers an append it did not sync; events are kept for the next snapshot */
  #fail(error: unknown, batch: Batch | null): void {
    this.#stats.failures++;
    const reason = (error as Error).message;
    if (this.#state === 'open') this.#log.error('store write failed: refusing new messages until a fresh segment is written', { directory: this.#dir, error: reason });
    if (this.#state !== 'closed') this.#state = 'failed';
    const failed = new Error(`store write failed: ${reason}`);
    const kept = new Pending(MAX_COMMIT_RECORDS);
    for (const part of batch ? [batch, ...this.#queued.batches()] : this.#queued.batches()) {
      for (const waiter of part.waiters) waiter.reject(failed);
      for (const record of part.records) if (record.k !== 'm') kept.push(record);
    }
    this.#queued = kept;
    this.#scheduleRecovery();
  }

  #scheduleRecovery(): void {
    if (this.#retryTimer || this.#state !== 'failed') return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      void this.#recover();
    }, this.#retryMs);
    this.#retryTimer.unref();
  }

  /** the old segment may end in garbage: a complete snapshot in a new one supersedes it */
  #recover(): Promise<void> {
    this.#recovering ??= this.#tryRecover().finally(() => {
      this.#recovering = null;
    });
    return this.#recovering;
  }

  async #tryRecover(): Promise<void> {
    await this.#draining;
    await this.#compaction;
    if (this.#state !== 'failed') return;
    const pending = this.#queued;
    this.#queued = new Pending(MAX_COMMIT_RECORDS);
    // events only: the messages of a failed batch were refused, not kept
    for (const part of pending.batches()) for (const record of part.records) this.#index.apply(record, 0, NOWHERE);
    const capture = this.#index.capture();
    try {
      const previous = this.#active;
      this.#active = null;
      if (previous) {
        this.#segments.set(previous.number, previous.bytes);
        await previous.file.close().catch(() => undefined);
      }
      await this.#replaceWithSnapshot(capture, this.#nextNumber++);
      this.#active = await this.#openSegment(this.#nextNumber++);
    } catch (error) {
      this.#index.release(capture);
      this.#log.error('store still failing', { directory: this.#dir, error: (error as Error).message });
      this.#scheduleRecovery();
      return;
    }
    if (this.#state !== 'failed') return;
    this.#state = 'open';
    this.#log.warn('store recovered: accepting messages again', { directory: this.#dir });
    this.#kick();
  }

  // ---- segments and compaction ---------------------------------------------------------

  async #openSegment(number: number): Promise<Segment> {
    await this.#fs.mkdir(this.#dir);
    const file = await this.#fs.open(join(this.#dir, segmentName(number)), 'wx-durable');
    try {
      await syncDirectory(this.#fs, this.#dir);
    } catch (error) {
      await file.close().catch(() => undefined);
      throw error;
    }
    this.#needsHeader = true;
    this.#files.track(number);
    return { number, file, bytes: 0 };
  }

  #diskBytes(): number {
    let total = this.#active?.bytes ?? 0;
    for (const bytes of this.#segments.values()) total += bytes;
    return total;
  }

  /**
   * Queues drained and nothing written for a while: shrink the log now, not at the next
   * threshold; checked again while idle, as the dedupe ids it keeps expire.
   */
  #armIdleCompaction(): void {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    const commits = this.#stats.commits;
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = null;
      // anything written meanwhile: the drain that wrote it arms the next check
      if (this.#stats.commits !== commits || this.#draining || this.#queued.size > 0 || this.#state !== 'open' || this.#index.size > 0) return;
      if (this.#compaction) return this.#armIdleCompaction();
      // takes the writer's slot, so no batch is committed while the segments rotate
      this.#draining = this.#maybeCompact(true).finally(() => {
        this.#draining = null;
        if (this.#queued.size > 0) this.#kick();
        else if (this.#state === 'open' && this.#index.size === 0 && this.#diskBytes() >= IDLE_COMPACT_BYTES) this.#armIdleCompaction();
      });
    }, this.#idleCompactMs);
    this.#idleTimer.unref();
  }

  async #maybeCompact(idle: boolean): Promise<void> {
    if (this.#compaction || this.#state !== 'open') return;
    if (!shouldCompact(this.#compactionSettings, this.#diskBytes(), this.#index.size, this.#index.estimateSnapshotBytes(), idle)) return;
    // the snapshot is the state after the last commit; later batches go to the next segment
    const capture = this.#index.capture();
    const snapshotNumber = this.#nextNumber++;
    const previous = this.#active!;
    try {
      this.#active = await this.#openSegment(this.#nextNumber++);
    } catch (error) {
      this.#index.release(capture);
      this.#active = previous;
      this.#fail(error, null);
      return;
    }
    this.#segments.set(previous.number, previous.bytes);
    await previous.file.close().catch(() => undefined);
    this.#compaction = this.#replaceWithSnapshot(capture, snapshotNumber)
      .catch((error: unknown) => this.#fail(error, null))
      .finally(() => {
        this.#compaction = null;
      });
  }

  async #replaceWithSnapshot(capture: Capture, number: number): Promise<void> {
    const started = Date.now();
    const before = this.#diskBytes();
    let written: Awaited<ReturnType<typeof writeSnapshot>>;
    try {
      written = await writeSnapshot(this.#fs, this.#dir, number, capture, (entry) => this.#snapshotReader.frame(entry.segment, entry.offset, entry.bytes));
      this.#files.track(number);
      // from here on bodies are read from the snapshot: the segments it replaces can go
      await this.#index.relocate(capture, number, written.offsets);
    } finally {
      this.#index.release(capture);
    }
    const { bytes } = written;
    for (const old of [...this.#segments.keys()].filter((n) => n < number)) {
      await removeIfPresent(this.#fs, join(this.#dir, segmentName(old)));
      this.#segments.delete(old);
      this.#files.retire(old);
    }
    this.#segments.set(number, bytes);
    await syncDirectory(this.#fs, this.#dir);
    this.#stats.compactions++;
    this.#log.info('store compacted', { directory: this.#dir, messages: capture.live, bytesBefore: before, bytesAfter: this.#diskBytes(), ms: Date.now() - started });
  }
}
