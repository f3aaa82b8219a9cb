import type { FrameWriter } from './log-binary.js';
import type { LogRecord } from './log-format.js';
import type { StoredMessage, StoreEvent } from './store.js';

export interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

/**
 * A batch's frames in one buffer; per record, where its frame starts in it (-1: left out, see
 * `encode`; state changes share their run's frame) and a message frame's size (0 for the rest)
 */
export interface EncodedBatch {
  readonly frames: Buffer;
  readonly offsets: readonly number[];
  readonly sizes: readonly number[];
}

/** one commit's records in order, and the appends it answers */
export class Batch {
  records: LogRecord[] = [];
  /** a message's body as JSON, made when queued (one that cannot be encoded fails its own append only) */
  json: (string | undefined)[] = [];
  waiters: Waiter[] = [];
  /** answered once every record queued so far is durable */
  wait(waiter: Waiter): void {
    this.waiters.push(waiter);
  }

  push(record: LogRecord, json?: string): void {
    this.records.push(record);
    this.json.push(json);
  }

  pushMessage(m: StoredMessage, json: string | undefined): void {
    this.push({ k: 'm', m }, json);
  }

  /**
   * Every record's frame, written into `writer`'s buffer (valid until its next use): one per
   * message, one per run of state changes. A state change of a message removed later in the
   * same batch is left out: replay ends at the same state without it, and an ack (settle, then
   * remove) is written as the remove alone.
   */
  encode(writer: FrameWriter, header: Buffer | null): EncodedBatch {
    const { records, json } = this;
    const offsets = new Array<number>(records.length);
    // backwards: which records come before a removal of their message (a new `m` starts afresh)
    const removedLater = new Set<string>();
    for (let i = records.length - 1; i >= 0; i--) {
      const record = records[i]!;
      let keep = true;
      if (record.k === 'x') removedLater.add(record.id);
      else if (record.k === 'm') removedLater.delete(record.m.messageId);
      else if (record.k !== 'h' && record.k !== 'd') keep = !removedLater.has(record.id);
      offsets[i] = keep ? 0 : -1;
    }
    writer.reset();
    if (header) writer.raw(header);
    const sizes = new Array<number>(records.length).fill(0);
    for (let i = 0; i < records.length; i++) {
      if (offsets[i]! < 0) continue;
      const record = records[i]!;
      offsets[i] = writer.size;
      if (record.k === 'm') sizes[i] = writer.message(record.m, json[i]);
      else if (record.k !== 'h') writer.event(record);
    }
    return { frames: writer.bytes(), offsets, sizes };
  }
}

/**
 * What waits for the writer: batches of at most `max` records, in order. A commit takes the
 * first; a pile queued behind a slow fsync (a drain's deliveries, acks and removals) is never
 * one array grown by push and sliced at each commit (copies of the whole pile, 20-100 ms a turn
 * in a drain of a million on a loaded machine). An append's waiter goes with the batch its
 * messages end in: batches commit in order, so it is answered once everything before is durable.
 */
export class Pending {
  readonly #max: number;
  #batches: Batch[] = [new Batch()];
  #size = 0;
  #waiters = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** records queued */
  get size(): number {
    return this.#size;
  }

  /** appends wait: the next commit goes at once */
  get hasWaiters(): boolean {
    return this.#waiters > 0;
  }

  push(record: LogRecord, json?: string): void {
    this.#last().push(record, json);
    this.#size++;
  }

  pushMessage(m: StoredMessage, json: string | undefined): void {
    this.push({ k: 'm', m }, json);
  }

  wait(waiter: Waiter): void {
    this.#batches[this.#batches.length - 1]!.wait(waiter);
    this.#waiters++;
  }

  /** the first batch, taken off (empty when nothing is queued) */
  take(): Batch {
    const first = this.#batches.length > 1 ? this.#batches.shift()! : this.#batches.splice(0, 1, new Batch())[0]!;
    this.#size -= first.records.length;
    this.#waiters -= first.waiters.length;
    return first;
  }

  /** every batch queued, in order */
  batches(): readonly Batch[] {
    return this.#batches;
  }

  #last(): Batch {
    let last = this.#batches[this.#batches.length - 1]!;
    if (last.records.length >= this.#max) this.#batches.push((last = new Batch()));
    return last;
  }
}

/** queue events as log records (log-format.ts) */
export function toRecord(event: StoreEvent): LogRecord {
  switch (event.kind) {
    case 'assign':
      return { k: 'a', id: event.messageId, g: event.groups, slot: event.slot };
    case 'settle':
      return { k: 's', id: event.messageId, g: event.group, o: event.outcome, slot: event.slot };
    case 'deliver':
      // after a crash the delivery that was cut short counts: it comes back with nbRequeues + 1
      return { k: 'r', id: event.messageId, g: event.group, n: event.nbRequeues + 1, nb: 0, slot: event.slot };
    case 'requeue':
      return { k: 'r', id: event.messageId, g: event.group, n: event.nbRequeues, nb: event.notBefore, slot: event.slot };
    case 'remove':
      return { k: 'x', id: event.messageId, slot: event.slot };
    default: {
      const never: never = event;
      throw new Error(`unknown store event ${JSON.stringify(never)}`);
    }
  }
}
