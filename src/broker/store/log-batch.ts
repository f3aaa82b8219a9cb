import { FrameWriter, type LogRecord } from './log-format.js';
import type { StoreEvent } from './store.js';

export interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

/** a batch's frames in one buffer, and each record's frame size (0: left out, see `encode`) */
export interface EncodedBatch {
  readonly frames: Buffer;
  readonly sizes: readonly number[];
}

/** what is waiting for the next commit: records in order, appends to answer */
export class Batch {
  records: LogRecord[] = [];
  /** JSON made when queued (a message: one that cannot be encoded fails its own append only) */
  json: (string | null)[] = [];
  waiters: Waiter[] = [];

  push(record: LogRecord, json: string | null = null): void {
    this.records.push(record);
    this.json.push(json);
  }

  /**
   * Every record's frame, written into `writer`'s buffer (valid until its next use). A state
   * change of a message removed later in the same batch is left out: replay ends at the same
   * state without it, and an ack (settle, then remove) is written as one record, not two.
   */
  encode(writer: FrameWriter, header: LogRecord | null): EncodedBatch {
    const { records, json } = this;
    const keep = new Array<boolean>(records.length);
    // backwards: which records come before a removal of their message (a new `m` starts afresh)
    const removedLater = new Set<string>();
    for (let i = records.length - 1; i >= 0; i--) {
      const record = records[i]!;
      if (record.k === 'x') {
        removedLater.add(record.id);
        keep[i] = true;
      } else if (record.k === 'm') {
        removedLater.delete(record.m.messageId);
        keep[i] = true;
      } else {
        keep[i] = record.k === 'h' || record.k === 'd' || !removedLater.has(record.id);
      }
    }
    writer.reset();
    if (header) writer.add(JSON.stringify(header));
    const sizes = new Array<number>(records.length);
    for (let i = 0; i < records.length; i++) sizes[i] = keep[i] ? writer.add(json[i] ?? JSON.stringify(records[i])) : 0;
    return { frames: writer.bytes(), sizes };
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
