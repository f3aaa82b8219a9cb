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

/** what is waiting for the next commit: records in order, appends to answer */
export class Batch {
  records: LogRecord[] = [];
  /** a message's body as JSON, made when queued (one that cannot be encoded fails its own append only) */
  json: (string | undefined)[] = [];
  waiters: Waiter[] = [];
  /** per waiter, the records queued when it came: its appends are among them */
  #waitedAt: number[] = [];

  /** answered once every record queued so far is durable */
  wait(waiter: Waiter): void {
    this.waiters.push(waiter);
    this.#waitedAt.push(this.records.length);
  }

  /**
   * The first `max` records as a batch of their own, with the waiters whose records are all
   * among them; the rest stays here for the next commit.
   */
  splitOff(max: number): Batch {
    const head = new Batch();
    head.records = this.records.slice(0, max);
    head.json = this.json.slice(0, max);
    this.records = this.records.slice(max);
    this.json = this.json.slice(max);
    let w = 0;
    while (w < this.waiters.length && this.#waitedAt[w]! <= max) w++;
    head.waiters = this.waiters.slice(0, w);
    head.#waitedAt = this.#waitedAt.slice(0, w);
    this.waiters = this.waiters.slice(w);
    this.#waitedAt = this.#waitedAt.slice(w).map((n) => n - max);
    return head;
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

/** queue events as log records (log-format.ts) */
export function toRecord(event: StoreEvent): LogRecord {
  switch (event.kind) {
    case 'assign':
      return { k: 'a', id: event.messageId, g: event.groups };
    case 'settle':
      return { k: 's', id: event.messageId, g: event.group, o: event.outcome };
    case 'deliver':
      // after a crash the delivery that was cut short counts: it comes back with nbRequeues + 1
      return { k: 'r', id: event.messageId, g: event.group, n: event.nbRequeues + 1, nb: 0 };
    case 'requeue':
      return { k: 'r', id: event.messageId, g: event.group, n: event.nbRequeues, nb: event.notBefore };
    case 'remove':
      return { k: 'x', id: event.messageId };
    default: {
      const never: never = event;
      throw new Error(`unknown store event ${JSON.stringify(never)}`);
    }
  }
}
