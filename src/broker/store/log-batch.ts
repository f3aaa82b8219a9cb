import type { LogRecord } from './log-format.js';
import type { StoreEvent } from './store.js';

export interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

/** what is waiting for the next commit: frames, their records (same order), appends to answer */
export class Batch {
  frames: Buffer[] = [];
  records: LogRecord[] = [];
  waiters: Waiter[] = [];
  bytes = 0;

  push(record: LogRecord, frame: Buffer): void {
    this.records.push(record);
    this.frames.push(frame);
    this.bytes += frame.length;
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
