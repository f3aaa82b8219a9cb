import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { truncate } from 'node:fs/promises';
import { encodeRecord, forEachRecord, type HistoryRecord, openForAppend, type ReadRecord, type SegmentMeta, writeSegmentMeta } from './segment.js';

/**
 * A mirror's history while it is out of step with a master (docs/operations.md#history-catch-up):
 * the segments it writes from `from` on are its own (clients' copies, the sync's messages), and
 * a catch-up from the master lands in the numbers left free before them, so a replay reads what
 * the master had, in its order, then what this broker took since. Kept in the channel's
 * directory as `side` so a kill -9 while out of step keeps the line where it was.
 */
export interface SideLine {
  /** the first segment number of this broker's own writes */
  from: number;
  /** the next number a catch-up segment takes (below `from`) */
  gapNext: number;
  /** the first catch-up segment: records from it on came from the master */
  catchUpFrom: number | null;
  /**
   * the first segment of each catch-up of this line, oldest first (a catch-up cut short, then
   * another, perhaps from another master): at the join, each one's records win over the same
   * records in what comes before it
   */
  catchUps?: number[];
  /**
   * a catch-up that replaced the whole history (`after: null`): the acceptance time of the
   * master's oldest record; own records older than it go at the join (the master's retention dropped them)
   */
  replacedBefore?: number | null;
  /**
   * the first segment of each catch-up whose last frame came (the master's history as it was when
   * the follower asked, whole); a catch-up not listed was cut short. Absent in side files written
   * before it was kept: each catch-up counts as whole.
   */
  ended?: number[];
}

/** segment numbers left free for a catch-up: far more segments than one catch-up can write */
export const SIDE_GAP = 1_000_000_000;
/** own records compared with the catch-up at a time when the two are joined (bounded memory) */
const JOIN_ROUND = 100_000;

export async function readSide(dir: string): Promise<SideLine | null> {
  try {
    const side = JSON.parse(await readFile(join(dir, 'side'), 'utf8')) as SideLine;
    return typeof side.from === 'number' ? { from: side.from, gapNext: side.gapNext, catchUpFrom: side.catchUpFrom ?? null, catchUps: side.catchUps ?? (typeof side.catchUpFrom === 'number' ? [side.catchUpFrom] : []), replacedBefore: side.replacedBefore ?? null, ...(Array.isArray(side.ended) ? { ended: side.ended } : {}) } : null;
  } catch {
    return null;
  }
}

/**
 * null: the line is joined (the file goes). Written beside it, then renamed over it: a kill -9
 * leaves the old line or the new one, never an empty file (truncated in place, the restart read
 * no line and took a catch-up's records as its own history: atk27l F1, 10,007 records twice)
 */
export async function writeSide(dir: string, side: SideLine | null): Promise<void> {
  const path = join(dir, 'side');
  if (side === null) return unlink(path).catch(() => undefined);
  await writeFile(`${path}.tmp`, JSON.stringify(side), { mode: 0o600 });
  await rename(`${path}.tmp`, path);
}

/**
 * The ids of `count` records of these segments (in order), oldest first: the newest ones once
 * the `back` newest are left out (fewer when the segments hold fewer).
 */
export async function newestIds(segments: readonly SegmentMeta[], count: number, back = 0): Promise<string[]> {
  const ids: string[] = [];
  let leaveOut = back;
  for (let i = segments.length - 1; i >= 0 && ids.length < count; i--) {
    const segment = segments[i]!;
    const usable = segment.count - leaveOut;
    leaveOut = Math.max(0, -usable);
    if (usable <= 0) continue;
    // the last `want` ids of this segment's first `usable` records, in a ring
    const want = count - ids.length;
    const ring: string[] = [];
    let seen = 0;
    await forEachRecord(segment.path, segment.bytes, (record) => {
      if (seen < usable) ring[seen++ % want] = record.messageId;
    });
    const here = seen <= want ? ring : [...ring.slice(seen % want), ...ring.slice(0, seen % want)];
    ids.unshift(...here);
  }
  return ids;
}

/**
 * Removes from `own` the records whose ids `caughtUp` holds, and those accepted before
 * `olderThan`, rewriting those segments (a copy renamed over each); returns the segments left
 * empty. A round at a time of own records.
 */
export async function dropFromSegments(own: readonly SegmentMeta[], caughtUp: readonly SegmentMeta[], olderThan = -Infinity): Promise<SegmentMeta[]> {
  const emptied: SegmentMeta[] = [];
  for (let start = 0; start < own.length; ) {
    const round: SegmentMeta[] = [];
    const ids = new Set<string>();
    for (; start < own.length && (round.length === 0 || ids.size < JOIN_ROUND); start++) {
      const segment = own[start]!;
      round.push(segment);
      await forEachRecord(segment.path, segment.bytes, (record) => void ids.add(record.messageId));
    }
    const twice = new Set<string>();
    for (const segment of caughtUp) {
      await forEachRecord(segment.path, segment.bytes, (record) => {
        if (ids.has(record.messageId)) twice.add(record.messageId);
      });
    }
    if (twice.size === 0 && !round.some((segment) => segment.firstAt < olderThan)) continue;
    for (const segment of round) if (!(await rewriteWithout(segment, twice, olderThan))) emptied.push(segment);
  }
  return emptied;
}

/**
 * Takes out of `own` its records accepted at or after `since`, at most `maxBytes` of them (the
 * newest), less those in `keep` (they stay where they are): returns them in file order, and the
 * segments left empty. `journal` has them written elsewhere first.
 */
export async function takeRecent(own: readonly SegmentMeta[], since: number, maxBytes: number, keep?: ReadonlySet<string>, journal?: (records: readonly HistoryRecord[]) => Promise<void>): Promise<{ records: HistoryRecord[]; emptied: SegmentMeta[] }> {
  const recent = own.filter((segment) => segment.lastAt >= since);
  // the newest within maxBytes, kept as they are read (bounded memory): older ones drop off the front
  let records: Array<{ record: HistoryRecord; bytes: number }> = [];
  let head = 0;
  let total = 0;
  for (const segment of recent) {
    await forEachRecord(segment.path, segment.bytes, (record: ReadRecord) => {
      if (record.acceptedAt < since || keep?.has(record.messageId)) return;
      const { dataJson, ...rest } = record;
      const bytes = dataJson.length + record.messageId.length + record.id.length + record.from.length + 100;
      records.push({ record: { ...rest, data: JSON.parse(dataJson) as unknown }, bytes });
      total += bytes;
      while (total > maxBytes && head < records.length) total -= records[head++]!.bytes;
      if (head > 10_000 && head > records.length / 2) {
        records = records.slice(head);
        head = 0;
      }
    });
  }
  records = records.slice(head);
  const taken = new Set(records.map((r) => r.record.messageId));
  // on disk elsewhere before they leave these files (History's held journal: a kill -9 meanwhile loses none)
  if (taken.size > 0 && journal) await journal(records.map((r) => r.record));
  const emptied: SegmentMeta[] = [];
  if (taken.size > 0) for (const segment of recent) if (!(await rewriteWithout(segment, taken, -Infinity))) emptied.push(segment);
  return { records: records.map((r) => r.record), emptied };
}

/**
 * A catch-up cut short brought its master's records up to some point. What `had` holds after the
 * first record the catch-up brought too, accepted with the newest it brought or later, and the
 * catch-up lacks, would have come after what it brought: left where it is, the records the
 * catch-up brought (whose place wins at the join) went after it. An older one is not what it
 * would have brought next (its master lacks it: sends this broker answered as master before a
 * kill -9) and stays (atk27k F4: 4,993 such records put after sends made 20 s later). Acceptance
 * times come from two brokers' clocks: a hint, as for COMPARE_SLACK_MS. Returns them in `had`'s
 * order, encoded: at most the records of `had`, which the join bounds (COMPARE_RECORDS), as it
 * bounds the ids kept.
 */
export async function laterThanCatchUp(had: readonly SegmentMeta[], brought: readonly SegmentMeta[]): Promise<{ buffers: Buffer[]; ids: Set<string>; firstAt: number; lastAt: number }> {
  const newestBrought = Math.max(...brought.map((s) => s.lastAt));
  // the ids of `had` (bounded by the join), then which of them the catch-up brought: not every id it brought
  const hadIds = new Set<string>();
  for (const segment of had) await forEachRecord(segment.path, segment.bytes, (record) => void hadIds.add(record.messageId));
  const broughtIds = new Set<string>();
  for (const segment of brought) await forEachRecord(segment.path, segment.bytes, (record) => void (hadIds.has(record.messageId) && broughtIds.add(record.messageId)));
  const later = { buffers: [] as Buffer[], ids: new Set<string>(), firstAt: Infinity, lastAt: -Infinity };
  let found = false;
  for (const segment of had) {
    await forEachRecord(segment.path, segment.bytes, (record: ReadRecord) => {
      if (broughtIds.has(record.messageId)) found = true;
      else if (found && record.acceptedAt >= newestBrought && !later.ids.has(record.messageId)) {
        later.ids.add(record.messageId);
        later.buffers.push(encodeRecord({ messageId: record.messageId, id: record.id, acceptedAt: record.acceptedAt, created: record.created, from: record.from, data: JSON.parse(record.dataJson) as unknown }));
        later.firstAt = Math.min(later.firstAt, record.acceptedAt);
        later.lastAt = Math.max(later.lastAt, record.acceptedAt);
      }
    });
  }
  return later;
}

/**
 * Records written at the end of a closed segment (what its meta counts: bytes past it, from a
 * kill -9 during an earlier try, are cut first)
 */
export async function appendToSegment(segment: SegmentMeta, records: { buffers: Buffer[]; firstAt: number; lastAt: number }): Promise<void> {
  if (records.buffers.length === 0) return;
  const buffer = Buffer.concat(records.buffers);
  await truncate(segment.path, segment.bytes);
  const handle = await openForAppend(segment.path);
  try {
    await handle.write(buffer);
  } finally {
    await handle.close();
  }
  segment.bytes += buffer.length;
  segment.count += records.buffers.length;
  segment.firstAt = Math.min(segment.firstAt, records.firstAt);
  segment.lastAt = Math.max(segment.lastAt, records.lastAt);
  await writeSegmentMeta(segment);
}

/** the segment without those records; false when none is left */
async function rewriteWithout(segment: SegmentMeta, drop: ReadonlySet<string>, olderThan: number): Promise<boolean> {
  const kept: Buffer[] = [];
  let dropped = 0;
  let firstAt = Infinity;
  let lastAt = -Infinity;
  await forEachRecord(segment.path, segment.bytes, (record: ReadRecord) => {
    if (drop.has(record.messageId) || record.acceptedAt < olderThan) {
      dropped++;
      return;
    }
    firstAt = Math.min(firstAt, record.acceptedAt);
    lastAt = Math.max(lastAt, record.acceptedAt);
    kept.push(encodeRecord({ messageId: record.messageId, id: record.id, acceptedAt: record.acceptedAt, created: record.created, from: record.from, data: JSON.parse(record.dataJson) as unknown }));
  });
  if (dropped === 0) return true;
  if (kept.length === 0) return false;
  const buffer = Buffer.concat(kept);
  await writeFile(`${segment.path}.tmp`, buffer, { mode: 0o600 });
  await rename(`${segment.path}.tmp`, segment.path);
  segment.bytes = buffer.length;
  segment.count = kept.length;
  segment.firstAt = firstAt;
  segment.lastAt = lastAt;
  await writeSegmentMeta(segment);
  return true;
}
