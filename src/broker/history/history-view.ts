import { forEachRecord, type ReadRecord } from './segment.js';

/** where a record lies in a view: its segment, and its place in it */
export interface ViewPosition {
  readonly segment: number;
  readonly record: number;
  readonly messageId: string;
}

/**
 * A channel's history as it was when a follower asked (docs/protocol.md#peers): read a segment
 * at a time, so a master's memory does not grow with the history. Records past
 * `retention.seconds` still on disk are left out, as from a replay.
 */
export class HistoryView {
  readonly #segments: ReadonlyArray<{ path: string; bytes: number; lastAt: number }>;
  readonly #notBefore: number;
  /** records left out of `read` (a hand-over's, whose messages the feed names next) */
  readonly #skip: ReadonlySet<string> | undefined;

  constructor(segments: ReadonlyArray<{ path: string; bytes: number; lastAt: number }>, notBefore: number, skip?: ReadonlySet<string>) {
    this.#segments = segments;
    this.#notBefore = notBefore;
    this.#skip = skip;
  }

  /**
   * The earliest record (in this history's order) whose id is one of `ids`, looking back at most
   * `lookBack` records from the newest such record; null when none is here. The earliest, not
   * the newest: a record this history took late (offered by a mirror) must not hide the ones
   * before it that the follower lacks.
   */
  async find(ids: ReadonlySet<string>, lookBack: number): Promise<ViewPosition | null> {
    let best: ViewPosition | null = null;
    let bestDistance = -1;
    let newestDistance = -1;
    let after = 0; // records in the segments already read (newer ones)
    const seen = new Set<string>();
    for (let segment = this.#segments.length - 1; segment >= 0; segment--) {
      const { path, bytes } = this.#segments[segment]!;
      const matches: Array<{ index: number; messageId: string }> = [];
      let count = 0;
      await forEachRecord(path, bytes, (record) => {
        if (ids.has(record.messageId)) matches.push({ index: count, messageId: record.messageId });
        count++;
      });
      for (const { index, messageId } of matches.reverse()) {
        const distance = after + count - 1 - index;
        if (newestDistance < 0) newestDistance = distance;
        if (distance - newestDistance > lookBack) break;
        seen.add(messageId);
        if (distance > bestDistance) {
          bestDistance = distance;
          best = { segment, record: index, messageId };
        }
      }
      after += count;
      if (seen.size === ids.size || (newestDistance >= 0 && after - newestDistance > lookBack)) break;
    }
    return best;
  }

  /** every record after `after` (null: all), in order; `each` may wait (a promise) or stop (false) */
  async read(after: Pick<ViewPosition, 'segment' | 'record'> | null, each: (record: ReadRecord) => boolean | Promise<boolean>): Promise<void> {
    let stopped = false;
    for (let segment = after?.segment ?? 0; segment < this.#segments.length && !stopped; segment++) {
      const { path, bytes, lastAt } = this.#segments[segment]!;
      if (lastAt < this.#notBefore) continue;
      let index = -1;
      const skipUpTo = after !== null && segment === after.segment ? after.record : -1;
      await forEachRecord(path, bytes, (record) => {
        index++;
        if (index <= skipUpTo || record.acceptedAt < this.#notBefore || this.#skip?.has(record.messageId)) return true;
        const go = each(record);
        const stop = (ok: boolean) => ok || ((stopped = true), false);
        return go instanceof Promise ? go.then(stop) : stop(go);
      });
    }
  }
}

/** what exportRecords reads: a History */
interface Readable {
  isRetained(queue: string): boolean;
  read(queue: string, range: object, each: (record: ReadRecord) => boolean): Promise<boolean>;
}

/** what a move hands over of `queue`'s history (within its retention), in acceptance order */
export async function exportRecords(history: Readable, queue: string): Promise<ReadRecord[]> {
  const records: ReadRecord[] = [];
  if (!history.isRetained(queue)) return records;
  await history.read(queue, {}, (record) => {
    records.push(record);
    return true;
  });
  return records;
}
