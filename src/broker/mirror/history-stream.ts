import type { FollowHistory } from '../../protocol/frames.js';
import type { HistoryView, ReadRecord } from '../history/history.js';

/** records per `history` frame at most */
export const HISTORY_CHUNK_RECORDS = 1_000;
/** a `history` frame is sent once its records pass this many bytes of JSON (one larger record stands alone) */
export const HISTORY_CHUNK_BYTES = 1_048_576;
/** `history` frames a follower has not answered with `historyAck`, at most: bounded memory on both sides */
export const HISTORY_WINDOW = 4;
/** the follower's named ids are looked for this many records back from the newest one found */
export const HISTORY_LOOK_BACK = 10_000;

/** what one follower's catch-up reads: every retained channel as it was when it asked */
export interface HistoryPlan {
  readonly views: ReadonlyArray<{ queue: string; view: HistoryView }>;
  /** messages still being written when it asked: the feed names them, the catch-up leaves them out */
  readonly skip: ReadonlySet<string>;
  /** per channel, the follower's newest ids */
  readonly anchors: ReadonlyMap<string, readonly string[]>;
}

/** where a follower's `history` frames go (a peer's session) */
export interface HistoryFollower {
  sendText(text: string): void;
  whenWritable(): Promise<void>;
}

/**
 * A master's side of the history catch-up (docs/protocol.md#history-catch-up): for each
 * retained channel, the records after the earliest one the follower named (all of them when it
 * named none this master has; the follower does not write again what it has), in frames of at most 1,000 records or about 1 MiB, never more
 * than HISTORY_WINDOW of them unanswered, and only while the follower's link drains.
 */
export class HistoryStream {
  readonly #follower: HistoryFollower;
  #sent = 0;
  #acked = 0;
  #cancelled = false;
  #wake: (() => void) | null = null;
  /** records sent, for the log */
  records = 0;

  constructor(follower: HistoryFollower) {
    this.#follower = follower;
  }

  static plan(views: HistoryPlan['views'], skip: ReadonlySet<string>, history: readonly FollowHistory[]): HistoryPlan {
    return { views, skip, anchors: new Map(history.map((h) => [h.queue, h.after])) };
  }

  acked(n: number): void {
    this.#acked = Math.max(this.#acked, n);
    this.#wakeUp();
  }

  /** the follower is gone, or this broker no longer acts as master */
  cancel(): void {
    this.#cancelled = true;
    this.#wakeUp();
  }

  /** false when cut short (the follower left, or this broker was demoted) */
  async run(plan: HistoryPlan): Promise<boolean> {
    for (const { queue, view } of plan.views) {
      const anchors = plan.anchors.get(queue);
      const at = anchors && anchors.length > 0 ? await view.find(new Set(anchors), HISTORY_LOOK_BACK) : null;
      // the follower's records continue after this one; null: it has none this master has
      let after: string | null | undefined = at === null ? null : at.messageId;
      let chunk: string[] = [];
      let bytes = 0;
      const flush = async (last: boolean): Promise<boolean> => {
        while (this.#sent - this.#acked >= HISTORY_WINDOW && !this.#cancelled) await new Promise<void>((resolve) => (this.#wake = resolve));
        if (!this.#cancelled) await this.#follower.whenWritable();
        if (this.#cancelled) return false;
        const head = `{"type":"history","n":${++this.#sent},"queue":${JSON.stringify(queue)},${after !== undefined ? `"after":${JSON.stringify(after)},` : ''}`;
        this.#follower.sendText(`${head}"records":[${chunk.join(',')}],"last":${last}}`);
        this.records += chunk.length;
        after = undefined;
        chunk = [];
        bytes = 0;
        return true;
      };
      await view.read(at, async (record) => {
        if (plan.skip.has(record.messageId)) return !this.#cancelled;
        const text = encodeRecord(record);
        if (chunk.length > 0 && (chunk.length >= HISTORY_CHUNK_RECORDS || bytes + text.length > HISTORY_CHUNK_BYTES)) {
          if (!(await flush(false))) return false;
        }
        chunk.push(text);
        bytes += text.length;
        return !this.#cancelled;
      });
      if (!(await flush(true))) return false;
    }
    return !this.#cancelled;
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

/** a record as JSON in a `history` frame, its data spliced in as stored */
function encodeRecord(r: ReadRecord): string {
  const s = JSON.stringify;
  return `{"messageId":${s(r.messageId)},"id":${s(r.id)},"acceptedAt":${r.acceptedAt},"created":${r.created},"from":${s(r.from)},"data":${r.dataJson}}`;
}
