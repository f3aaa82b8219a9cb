/**
 * Why this file is long: the live index and its copy-on-write capture (what a compaction
 * snapshots while commits go on) share the columns and must change together.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { IdList, IdSlots } from '../../protocol/id-slots.js';
import { Interned } from '../../protocol/interned.js';
import { DeltaPages, Float64Pages, PagedList, SparseUint32Pages } from '../../protocol/paged.js';
import type { LogRecord, RecordTuple } from './log-format.js';
import type { RecoveredState, StoredMessage } from './store.js';

/**
 * One live message as the log knows it, as a snapshot or a body read sees it: made from the
 * index's columns when asked. Record lists are replaced, never mutated, so a compaction takes
 * a consistent snapshot by copying references only.
 */
export interface LiveEntry {
  readonly messageId: string;
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

/**
 * what a snapshot segment is written from: the state between two commits, unchanged afterwards.
 * Taken in O(1), not an object per live message (a million live messages took 450 ms that way,
 * a copy of the columns 110 ms): the index saves a slot's old state here when the slot changes
 * while the capture is held (copy on write), until `LiveIndex.release`.
 */
export interface Capture {
  /** slots `0 .. count - 1`; a slot without a message was free */
  readonly count: number;
  /** live messages in the capture */
  readonly live: number;
  /** the slot's entry as it was when captured; undefined: it was free */
  entry(slot: number): LiveEntry | undefined;
  /** recent ids, each with its acceptance time (`numberAt`), valid from `recentFrom` to `recentTo` */
  readonly recentIds: IdList;
  readonly recentFrom: number;
  readonly recentTo: number;
}

/**
 * A held capture: the old state of slots changed since, the rest read from the index. Saved in
 * columns, not an object per slot in a Map: a compaction during a drain saves a slot per ack, so
 * a Map of entries grew to hundreds of thousands (a rehash of 13 ms in one turn, and objects
 * that every scavenge copied).
 */
class HeldCapture implements Capture {
  /**
   * per slot: 0 not saved (read the index), SAVED_FREE it was free, else its saved entry + 1.
   * Sparse: a page is made for the slots changed, not every page below them (dense, a drain's
   * first save, at slot 837,400, made 52 pages of zeros in one turn: 13-23 ms)
   */
  readonly #savedAt = new SparseUint32Pages();
  /** saved entries: the message id with its framed size as the number, place, records */
  readonly #ids = new IdList();
  readonly #segment = new Float64Pages();
  readonly #offset = new Float64Pages();
  readonly #records = new PagedList<readonly RecordTuple[]>(NO_RECORDS);

  constructor(
    readonly count: number,
    readonly live: number,
    readonly recentIds: IdList,
    readonly recentFrom: number,
    readonly recentTo: number,
    private readonly current: (slot: number) => LiveEntry | undefined,
  ) {}

  /** the slot's state is saved already (it changed since the capture) */
  saved(slot: number): boolean {
    return this.#savedAt.get(slot) !== 0;
  }

  saveFree(slot: number): void {
    this.#savedAt.set(slot, SAVED_FREE);
  }

  save(slot: number, messageId: string, records: readonly RecordTuple[], bytes: number, segment: number, offset: number): void {
    const at = this.#ids.length;
    this.#ids.push(messageId, bytes);
    this.#segment.put(at, segment);
    this.#offset.put(at, offset);
    this.#records.set(at, records);
    this.#savedAt.set(slot, at + 1);
  }

  /** the slot was saved with its message at `segment` and `offset` (not free, not unchanged) */
  savedAt(slot: number, segment: number, offset: number): boolean {
    const saved = this.#savedAt.get(slot);
    const at = saved - 1;
    return saved !== SAVED_FREE && saved !== 0 && this.#segment.read(at) === segment && this.#offset.read(at) === offset;
  }

  entry(slot: number): LiveEntry | undefined {
    if (slot >= this.count) return undefined;
    const saved = this.#savedAt.get(slot);
    if (saved === SAVED_FREE) return undefined;
    if (saved === 0) return this.current(slot);
    const at = saved - 1;
    return { messageId: this.#ids.at(at), records: this.#records.get(at)!, bytes: this.#ids.numberAt(at), segment: this.#segment.read(at), offset: this.#offset.read(at) };
  }
}

/** (an entry's number + 1 stays below it: entries are fewer than slots, at most 2^32 - 1) */
const SAVED_FREE = 0xffffffff;

/** the index's bit in its slots' holders (the router's rows have another, queue/rows.ts) */
const STORE = 1;
/** what an id costs in a snapshot besides its characters: operation, length, the timestamp */
const RECENT_ID_OVERHEAD = 13;
const NO_RECORDS: readonly RecordTuple[] = [];
/** slots `relocate` walks in one turn (a million took 10-20 ms in one) */
const RELOCATE_SLICE = 65_536;
/**
 * A record list per slot. A list whose groups were only assigned (never delivered, never
 * requeued: what a million waiting messages have) is kept once (Interned) and named by a 4-byte
 * ref in a column, 0 for none: they share a few, where a pointer per slot was 8 bytes of heap and
 * a drain of a million adopted messages made two objects each (the list and its tuple); so is a
 * list of one group (a consumer's message delivered or requeued), by a short key. Any other
 * list (a delivery under way to several groups) is kept by reference for its slot (IN_FLIGHT in the
 * column): keyed by its JSON and interned at each of its groups' deliver and settle records, a
 * fan-out to 4 spent 12.7% of the broker's busy time in the key and its lookup (2026-12-07).
 */
class RecordColumn {
  /** per slot: 0 no records, IN_FLIGHT kept in #inFlight, n > 0 the interned list n - 1; pages of slots without records are not made */
  readonly #refs = new SparseUint32Pages();
  readonly #lists = new Interned<readonly RecordTuple[]>();
  readonly #inFlight = new Map<number, readonly RecordTuple[]>();

  get(slot: number): readonly RecordTuple[] {
    const ref = this.#refs.get(slot);
    if (ref === 0) return NO_RECORDS;
    return ref === IN_FLIGHT ? this.#inFlight.get(slot)! : this.#lists.value(ref - 1);
  }

  set(slot: number, records: readonly RecordTuple[]): void {
    const old = this.#refs.get(slot);
    if (underWayToSeveral(records) && (old === IN_FLIGHT || this.#inFlight.size < MAX_BY_REFERENCE)) {
      this.#inFlight.set(slot, records);
      this.#refs.set(slot, IN_FLIGHT);
    } else {
      // the new one first: a list set again is not dropped in between (past the bound, requeued
      // messages piling up waiting share interned lists, as the waiting ones do)
      this.#refs.set(slot, records.length === 0 ? 0 : this.#lists.ref(listKey(records), records) + 1);
      if (old === IN_FLIGHT) this.#inFlight.delete(slot);
    }
    if (old !== 0 && old !== IN_FLIGHT) this.#lists.unref(old - 1);
  }

  /** the slot has no records: it gets one, for `group`, never requeued */
  assign(slot: number, group: string): void {
    this.#refs.set(slot, this.#lists.refMade(group, () => [[group, 0, 0]]) + 1);
  }
}

/** the column's mark of a list kept by reference */
const IN_FLIGHT = 0xffffffff;
/**
 * Lists kept by reference at most (about 200 B each with their tuples): past it, requeued
 * messages piling up waiting share interned lists again (keyed by their JSON), so a million of
 * them do not cost 200 MB
 */
const MAX_BY_REFERENCE = 65_536;

/** several groups, one of them delivered or requeued: kept by reference */
function underWayToSeveral(records: readonly RecordTuple[]): boolean {
  return records.length > 1 && records.some((r) => r[1] !== 0 || r[2] !== 0);
}

/**
 * One key per distinct list: a group alone, never delivered (the common case, no string made);
 * one group delivered or requeued, by a short key; several groups only assigned, their names;
 * any other, its JSON after a NUL (group keys hold no NUL nor \u0001)
 */
function listKey(records: readonly RecordTuple[]): string {
  if (records.length === 1) {
    const [group, n, nb] = records[0]!;
    return n === 0 && nb === 0 ? group : `${group}\u0001${n}\u0001${nb}`;
  }
  return records.some((r) => r[1] !== 0 || r[2] !== 0) ? `\0${JSON.stringify(records)}` : records.map((r) => r[0]).join('\0');
}

/**
 * The live state of the log: messages not removed with their records, and the ids removed
 * within the dedupe window of their acceptance. Fed from replay on start, then from every commit.
 * Columns per slot, not an object per message (bounded memory, SPEC §7): a million waiting
 * messages cost 12 bytes of typed arrays each here, besides the id map they share with the rows. Every
 * message it lists is on disk, so it keeps no StoredMessage once loaded: a body or a snapshot's
 * frame is read back from the message's place (a queue's cold rows have no object to keep).
 */
export class LiveIndex {
  /**
   * messageId -> slot in the columns below; slots freed by removals are used again first. Shared
   * with the router's rows (queue/rows.ts, `LogStore.messageIds`): each holds its slots with its
   * own bit, so an id is kept once; a slot lives from the append to the committed removal here.
   */
  readonly #slots: IdSlots;
  /** slots the index holds */
  #count = 0;
  /** while loading only: the replayed messages, handed to the queues by `recovered()` */
  #loaded: (StoredMessage | undefined)[] | null = [];
  /** unsettled records, replaced never mutated (a capture keeps the array it took); one copy of each list, by a 4-byte ref */
  readonly #records = new RecordColumn();
  /** framed size of the message record, its segment and offset there; 2 bytes each for the first two (DeltaPages: a size past 32 KiB is set aside) */
  readonly #bytes = new DeltaPages(16);
  readonly #segment = new DeltaPages(16);
  /** 4 bytes a slot (DeltaPages): a snapshot segment past 4 GiB has its offsets set aside */
  readonly #offset = new DeltaPages();
  /** captures being written: a slot's old state is saved in each before the slot changes */
  readonly #held = new Set<HeldCapture>();
  // ids with their acceptance times, not objects nor strings: at 10,000 msg/s a 120 s window holds 1.2 million
  #recentIds = new IdList();
  #recentHead = 0;
  #recentBytes = 0;
  #liveBytes = 0;
  /** frame bytes of replayed messages whose body is kept in memory */
  #replayBodyBytes = 0;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #replayBodyLimit: number;

  /** `replayBodyBytes`: how much of the oldest replayed bodies stays in memory; the rest is read back */
  constructor(windowMs: number, now: () => number, replayBodyBytes = Infinity, slots: IdSlots = new IdSlots()) {
    this.#slots = slots;
    slots.claim(STORE);
    this.#windowMs = windowMs;
    this.#now = now;
    this.#replayBodyLimit = replayBodyBytes;
  }

  /** the live entry of a message, for reading its body back (made on demand) */
  get(messageId: string): LiveEntry | undefined {
    const slot = this.#find(messageId);
    return slot < 0 ? undefined : this.#entry(slot);
  }

  get size(): number {
    return this.#count;
  }

  /** the slot of a live message, -1 when the index does not hold it (the rows may) */
  #find(messageId: string): number {
    const slot = this.#slots.find(messageId);
    return slot >= 0 && this.#slots.holds(slot, STORE) ? slot : -1;
  }

  /**
   * A record's slot: the one it carries (StoreEvent `slot`: the index held it for this id when it
   * was recorded, and lets it go only with the id's removal, recorded after), else found by id.
   * The carried slot is trusted only while it still holds this id (an encode and a 16-byte
   * compare, no probe): an event recorded after its id's removal, its slot since taken by
   * another message, must not change that one.
   */
  #slotOf(record: { readonly id: string; readonly slot?: number | undefined }): number {
    const slot = record.slot;
    return slot !== undefined && this.#slots.holds(slot, STORE) && this.#slots.holdsId(slot, record.id) ? slot : this.#find(record.id);
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
        const slot = this.#slots.holdNew(m.messageId, STORE);
        if (slot >= 0) {
          if (place.replayed) this.#keepReplayedBody(m, bytes);
          this.#add(slot, m, record.r ?? NO_RECORDS, bytes, place);
          this.#liveBytes += bytes;
        }
        // a live id is known by its slot; it joins the recent ids when removed ('x')
        return;
      }
      case 'a': {
        const slot = this.#slotOf(record);
        if (slot < 0) return;
        const records = this.#records.get(slot)!;
        this.#beforeChange(slot);
        if (records.length === 0 && record.g.length === 1) {
          // a drain's adoptions: no list made for a group whose list is kept already
          this.#records.assign(slot, record.g[0]!);
          return;
        }
        let added: RecordTuple[] | null = null;
        for (const g of record.g) if (!records.some((r) => r[0] === g)) (added ??= []).push([g, 0, 0]);
        if (added) this.#records.set(slot, records.length === 0 ? added : [...records, ...added]);
        return;
      }
      case 's': {
        const slot = this.#slotOf(record);
        if (slot < 0) return;
        const records = this.#records.get(slot)!;
        if (!records.some((r) => r[0] === record.g)) return;
        this.#beforeChange(slot);
        this.#records.set(slot, records.length === 1 ? NO_RECORDS : records.filter((r) => r[0] !== record.g));
        return;
      }
      case 'r': {
        const slot = this.#slotOf(record);
        if (slot < 0) return;
        this.#beforeChange(slot);
        this.#records.set(slot, this.#records.get(slot)!.map((r): RecordTuple => (r[0] === record.g ? [r[0], record.n, record.nb] : r)));
        return;
      }
      case 'x': {
        const slot = this.#slotOf(record);
        if (slot < 0) return;
        this.#beforeChange(slot);
        // within the dedupe window of its acceptance, a copy is still not queued again (SPEC §7)
        this.#remember(record.id, this.#slots.shared(slot));
        this.#liveBytes -= this.#bytes.get(slot);
        const loaded = this.#loaded?.[slot];
        if (loaded) {
          if (loaded.data !== undefined) this.#replayBodyBytes -= this.#bytes.get(slot);
          this.#loaded![slot] = undefined;
        }
        this.#slots.release(slot, STORE);
        this.#count--;
        this.#records.set(slot, NO_RECORDS);
        this.#bytes.clear(slot);
        this.#segment.clear(slot);
        this.#offset.clear(slot);
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
   * live (the same message, not a later one with its id) point there, so their old segments can go.
   */
  async relocate(capture: Capture, segment: number, offsets: Float64Array): Promise<void> {
    // called before `release`: a slot not saved in the capture is unchanged since (also between
    // two slices: a slot changed meanwhile is saved first)
    const held = capture as HeldCapture;
    for (let slot = 0; slot < capture.count; slot++) {
      if (slot % RELOCATE_SLICE === RELOCATE_SLICE - 1) await nextTurn();
      if (!this.#slots.holds(slot, STORE) || this.#segment.get(slot) >= segment) continue;
      // changed since the capture: re-pointed only if it still is the record the snapshot copied
      if (held.saved(slot) && !held.savedAt(slot, this.#segment.get(slot), this.#offset.get(slot))) continue;
      this.#segment.set(slot, segment);
      this.#offset.set(slot, offsets[slot]!);
    }
  }

  /** `slot`: the message's, just held */
  #add(slot: number, message: StoredMessage, records: readonly RecordTuple[], bytes: number, place: RecordPlace): void {
    this.#count++;
    if (slot >= this.#bytes.capacity) for (const column of [this.#bytes, this.#segment, this.#offset]) column.ensure(slot);
    // a slot made or taken again (a capture that saw it free, or the rows' only)
    this.#wasFree(slot);
    this.#records.set(slot, records);
    if (this.#loaded) this.#loaded[slot] = message;
    // the broker's clock at acceptance, the dedupe window of a removed id runs from it: kept once
    // with the router's rows, by the slot they share
    this.#slots.setShared(slot, message.acceptedAt);
    this.#bytes.set(slot, bytes);
    this.#segment.set(slot, place.segment);
    this.#offset.set(slot, place.offset);
  }

  #entry(slot: number): LiveEntry {
    return { messageId: this.#slots.idAt(slot)!, records: this.#records.get(slot)!, bytes: this.#bytes.get(slot), segment: this.#segment.get(slot), offset: this.#offset.get(slot) };
  }

  /** replay keeps the oldest bodies up to a budget; later ones are read back when needed */
  #keepReplayedBody(m: StoredMessage, bytes: number): void {
    if (this.#replayBodyBytes + bytes <= this.#replayBodyLimit) this.#replayBodyBytes += bytes;
    else {
      m.data = undefined;
      m.json = undefined;
    }
  }

  /** O(1): the index saves a slot's old state in the capture before changing it, until `release` */
  capture(): Capture {
    this.#prune();
    const held = new HeldCapture(this.#slots.length, this.#count, this.#recentIds, this.#recentHead, this.#recentIds.length, (slot) =>
      !this.#slots.holds(slot, STORE) ? undefined : this.#entry(slot),
    );
    this.#held.add(held);
    return held;
  }

  /** the snapshot written from `capture` is done (or failed): slots change without saving for it */
  release(capture: Capture): void {
    this.#held.delete(capture as HeldCapture);
  }

  #beforeChange(slot: number): void {
    if (this.#held.size === 0) return;
    for (const held of this.#held) {
      if (slot >= held.count || held.saved(slot)) continue;
      if (!this.#slots.holds(slot, STORE)) held.saveFree(slot);
      else held.save(slot, this.#slots.idAt(slot)!, this.#records.get(slot)!, this.#bytes.get(slot), this.#segment.get(slot), this.#offset.get(slot));
    }
  }

  /** a freed slot is filled again: a capture that has not saved it saw it free */
  #wasFree(slot: number): void {
    for (const held of this.#held) if (slot < held.count && !held.saved(slot)) held.saveFree(slot);
  }

  /** the state for `load()`, once: messages in seq order, ids removed inside the dedupe window */
  recovered(): RecoveredState {
    const loaded = this.#loaded;
    if (!loaded) throw new Error('LiveIndex.recovered() runs once, after the replay');
    this.#loaded = null;
    this.#prune();
    const slots: number[] = [];
    for (let slot = 0; slot < this.#slots.length; slot++) if (this.#slots.holds(slot, STORE)) slots.push(slot);
    slots.sort((a, b) => loaded[a]!.seq - loaded[b]!.seq);
    const messages = slots.map((slot) => ({ message: loaded[slot]!, records: this.#records.get(slot)!.map(([group, nbRequeues, notBefore]) => ({ group, nbRequeues, notBefore })) }));
    const seen = new Set<string>();
    const recent: RecentId[] = [];
    for (let i = this.#recentHead; i < this.#recentIds.length; i++) {
      const messageId = this.#recentIds.at(i);
      if (seen.has(messageId)) continue;
      seen.add(messageId);
      recent.push({ messageId, acceptedAt: this.#recentIds.numberAt(i) });
    }
    recent.sort((a, b) => a.acceptedAt - b.acceptedAt);
    return { messages, recent };
  }

  #remember(messageId: string, acceptedAt: number): void {
    if (this.#windowMs <= 0 || acceptedAt + this.#windowMs <= this.#now()) return;
    this.#recentIds.push(messageId, acceptedAt);
    this.#recentBytes += messageId.length + RECENT_ID_OVERHEAD;
  }

  /**
   * ids come in removal order, each within the window of its acceptance: expiry goes from the
   * head while expired, so an id stays at most a window after its removal; the array is cut when half dead
   */
  #prune(): void {
    const horizon = this.#now() - this.#windowMs;
    while (this.#recentHead < this.#recentIds.length && this.#recentIds.numberAt(this.#recentHead) <= horizon) {
      this.#recentBytes -= this.#recentIds.lengthAt(this.#recentHead) + RECENT_ID_OVERHEAD;
      this.#recentHead++;
    }
    if (this.#recentHead > 1024 && this.#recentHead * 2 > this.#recentIds.length) {
      // a new list (sharing pages, nothing copied): a capture taken earlier keeps reading the old one
      this.#recentIds = this.#recentIds.slice(this.#recentHead);
      this.#recentHead = 0;
    }
  }
}
