import type { LogRecord, RecordTuple } from './log-format.js';
import type { RecoveredState, StoredMessage } from './store.js';

/**
 * One live message as the log knows it. Entries and their record lists are replaced, never
 * mutated, so a compaction can take a consistent snapshot by copying references only.
 */
export interface LiveEntry {
  /** the same object the queue holds; its body may be dropped from memory (`data` undefined) */
  readonly message: StoredMessage;
  /** unsettled records; empty: the message waits unassigned */
  readonly records: readonly RecordTuple[];
  /** framed size of its message record: the compaction estimate, and what to read back */
  readonly bytes: number;
  /** where its message record is on disk: bodies not in memory are read back from there */
  readonly segment: number;
  readonly offset: number;
}

/** where a record was read from or written to */
export interface RecordPlace {
  readonly segment: number;
  readonly offset: number;
  /** replayed from disk (not just committed): its body is kept only within `replayBodyBytes` */
  readonly replayed: boolean;
  /** inside a snapshot segment, whose recent ids are listed apart ('d') */
  readonly inSnapshot: boolean;
}

export interface RecentId {
  readonly messageId: string;
  readonly acceptedAt: number;
}

/** what a snapshot segment is written from: taken between two commits, immutable afterwards */
export interface Capture {
  readonly entries: readonly LiveEntry[];
  /** recent ids and their acceptance times, parallel arrays, valid from `recentFrom` to `recentTo` */
  readonly recentIds: readonly string[];
  readonly recentAt: readonly number[];
  readonly recentFrom: number;
  readonly recentTo: number;
}

/** what an id costs in a snapshot besides its characters: operation, length, the timestamp */
const RECENT_ID_OVERHEAD = 13;
const NO_RECORDS: readonly RecordTuple[] = [];

/**
 * The live state of the log: messages not removed with their records, and the ids accepted
 * inside the dedupe window. Fed from replay on start, then from every committed batch.
 */
export class LiveIndex {
  readonly #live = new Map<string, LiveEntry>();
  // two parallel arrays, not objects: at 10,000 msg/s a 120 s window holds 1.2 million ids
  #recentIds: string[] = [];
  #recentAt: number[] = [];
  #recentHead = 0;
  #recentBytes = 0;
  #liveBytes = 0;
  /** frame bytes of replayed messages whose body is kept in memory */
  #replayBodyBytes = 0;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #replayBodyLimit: number;

  /** `replayBodyBytes`: how much of the oldest replayed bodies stays in memory; the rest is read back */
  constructor(windowMs: number, now: () => number, replayBodyBytes = Infinity) {
    this.#windowMs = windowMs;
    this.#now = now;
    this.#replayBodyLimit = replayBodyBytes;
  }

  /** the live entry of a message, for reading its body back */
  get(messageId: string): LiveEntry | undefined {
    return this.#live.get(messageId);
  }

  get size(): number {
    return this.#live.size;
  }

  /** what a snapshot written now would take, give or take the record tuples */
  estimateSnapshotBytes(): number {
    this.#prune();
    return this.#liveBytes + this.#recentBytes;
  }

  apply(record: LogRecord, bytes: number, place: RecordPlace): void {
    switch (record.k) {
      case 'h':
        return;
      case 'm': {
        const { m } = record;
        if (!this.#live.has(m.messageId)) {
          if (place.replayed) this.#keepReplayedBody(m, bytes);
          this.#live.set(m.messageId, { message: m, records: record.r ?? NO_RECORDS, bytes, segment: place.segment, offset: place.offset });
          this.#liveBytes += bytes;
        }
        // a snapshot lists its recent ids apart ('d'), live or not
        if (record.r === undefined && !place.inSnapshot) this.#remember(m.messageId, m.acceptedAt);
        return;
      }
      case 'a':
        this.#update(record.id, (records) => {
          const added = record.g.filter((g) => !records.some((r) => r[0] === g));
          return added.length === 0 ? records : [...records, ...added.map((g): RecordTuple => [g, 0, 0])];
        });
        return;
      case 's':
        this.#update(record.id, (records) => records.filter((r) => r[0] !== record.g));
        return;
      case 'r':
        this.#update(record.id, (records) => records.map((r): RecordTuple => (r[0] === record.g ? [r[0], record.n, record.nb] : r)));
        return;
      case 'x': {
        const entry = this.#live.get(record.id);
        if (!entry) return;
        this.#live.delete(record.id);
        this.#liveBytes -= entry.bytes;
        if (place.replayed && entry.message.data !== undefined) this.#replayBodyBytes -= entry.bytes;
        return;
      }
      case 'd':
        this.#remember(record.id, record.at);
        return;
      default: {
        const never: never = record;
        throw new Error(`unknown log record ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * A snapshot segment now holds these entries' message records at `offsets`: entries still
   * live point there, so their old segments can go. Entries are replaced, not mutated.
   */
  relocate(entries: readonly LiveEntry[], segment: number, offsets: readonly number[]): void {
    entries.forEach((old, i) => {
      const live = this.#live.get(old.message.messageId);
      if (live && live.segment < segment) this.#live.set(old.message.messageId, { ...live, segment, offset: offsets[i]! });
    });
  }

  /** replay keeps the oldest bodies up to a budget; later ones are read back when needed */
  #keepReplayedBody(m: StoredMessage, bytes: number): void {
    if (this.#replayBodyBytes + bytes <= this.#replayBodyLimit) this.#replayBodyBytes += bytes;
    else m.data = undefined;
  }

  /** O(live) reference copies, no serialisation: the writer continues right after */
  capture(): Capture {
    this.#prune();
    return { entries: [...this.#live.values()], recentIds: this.#recentIds, recentAt: this.#recentAt, recentFrom: this.#recentHead, recentTo: this.#recentIds.length };
  }

  /** the state for `load()`: messages in seq order, ids still inside the dedupe window */
  recovered(): RecoveredState {
    this.#prune();
    const messages = [...this.#live.values()]
      .sort((a, b) => a.message.seq - b.message.seq)
      .map((entry) => ({ message: entry.message, records: entry.records.map(([group, nbRequeues, notBefore]) => ({ group, nbRequeues, notBefore })) }));
    const seen = new Set<string>();
    const recent: RecentId[] = [];
    for (let i = this.#recentHead; i < this.#recentIds.length; i++) {
      const messageId = this.#recentIds[i]!;
      if (seen.has(messageId)) continue;
      seen.add(messageId);
      recent.push({ messageId, acceptedAt: this.#recentAt[i]! });
    }
    recent.sort((a, b) => a.acceptedAt - b.acceptedAt);
    return { messages, recent };
  }

  #update(messageId: string, change: (records: readonly RecordTuple[]) => readonly RecordTuple[]): void {
    const entry = this.#live.get(messageId);
    if (!entry) return;
    const records = change(entry.records);
    if (records !== entry.records) this.#live.set(messageId, { ...entry, records });
  }

  #remember(messageId: string, acceptedAt: number): void {
    if (this.#windowMs <= 0 || acceptedAt + this.#windowMs <= this.#now()) return;
    this.#recentIds.push(messageId);
    this.#recentAt.push(acceptedAt);
    this.#recentBytes += messageId.length + RECENT_ID_OVERHEAD;
  }

  /** ids come in acceptance order, so expiry is from the head; the array is cut when half dead */
  #prune(): void {
    const horizon = this.#now() - this.#windowMs;
    while (this.#recentHead < this.#recentIds.length && this.#recentAt[this.#recentHead]! <= horizon) {
      this.#recentBytes -= this.#recentIds[this.#recentHead]!.length + RECENT_ID_OVERHEAD;
      this.#recentHead++;
    }
    if (this.#recentHead > 1024 && this.#recentHead * 2 > this.#recentIds.length) {
      // new arrays: a capture taken earlier keeps reading the old ones
      this.#recentIds = this.#recentIds.slice(this.#recentHead);
      this.#recentAt = this.#recentAt.slice(this.#recentHead);
      this.#recentHead = 0;
    }
  }
}
