import type { Retention } from '../../config/types.js';
import type { StoredMessage } from '../store/store.js';
import type { ChannelHistory } from './channel-history.js';
import type { Journaled } from './held-journal.js';

/** at start, at most this much of a channel's newest history is read to check it against the log */
const RECOVER_BYTES = 16 * 1_048_576;
/** at start, a channel's records from this long before the oldest one the held journal gives back are read to find which it has (clocks of other brokers) */
const JOURNAL_SLACK_MS = 600_000;

/** what a restart writes back into the history (History.recover) */
export interface RestartCheck {
  /** messages the log holds that their channel's history lacks (the caller appends them) */
  readonly missing: StoredMessage[];
  /** records the held journal holds that their channel's files lack, in the order held: written first */
  readonly heldBack: Journaled[];
  /** journal entries the files have (or that are kept no more): marked out */
  readonly heldDone: string[];
  /** ids of the history's records of the last `recentMs` the log never took (never answered) */
  readonly unanswered: string[];
}

function byQueue<T>(items: readonly T[], queueOf: (item: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const queue = queueOf(item);
    const list = map.get(queue);
    if (list) list.push(item);
    else map.set(queue, [item]);
  }
  return map;
}

/**
 * At start, after a stop of any kind (issue 27): the message log and the history are written
 * side by side, so a kill -9 can leave a message in one only; and the records the history held
 * out of its files (History `#held`, `#moving`) are in its held journal only (their messages may
 * be settled, gone from the log: atk27j F1). Reads the channels' files to find what they lack.
 */
export async function checkAtRestart(
  held: readonly StoredMessage[],
  journaled: readonly Journaled[],
  known: (messageId: string) => boolean,
  recentMs: number,
  now: number,
  retentionOf: (queue: string) => Retention | null,
  channels: ReadonlyMap<string, ChannelHistory>,
): Promise<RestartCheck> {
  const expiredBefore = (retention: Retention) => (retention.seconds !== undefined ? now - retention.seconds * 1000 : -Infinity);
  // the journal's records a channel's files lack (checked first: the log's check below reads the files as they are now)
  const heldBack: Journaled[] = [];
  const heldDone: string[] = [];
  const recentFrom = now - recentMs;
  for (const [queue, entries] of byQueue(journaled, (entry) => entry.queue)) {
    const retention = retentionOf(queue);
    const oldest = entries.reduce((min, entry) => Math.min(min, entry.record.acceptedAt), Infinity);
    const have = retention === null ? new Set<string>() : ((await channels.get(queue)?.idsFrom(oldest - JOURNAL_SLACK_MS)) ?? new Set<string>());
    for (const entry of entries) {
      // a record of the dedupe window the log never took (neither holds nor settled it): its send was
      // cut by the stop, never answered here; the brokers that took it offer it, or its client sends it
      // again, and it is written then (written back too, it was twice: atk27k F2, 1,155 records)
      const cut = entry.record.acceptedAt >= recentFrom && !known(entry.record.messageId);
      if (retention === null || entry.record.acceptedAt < expiredBefore(retention) || have.has(entry.record.messageId) || cut) heldDone.push(entry.record.messageId);
      else heldBack.push(entry);
    }
  }
  const fromJournal = new Set(heldBack.map((entry) => entry.record.messageId));
  const logged = byQueue(
    held.filter((m) => retentionOf(m.queue) !== null),
    (m) => m.queue,
  );
  const missing: StoredMessage[] = [];
  const unanswered: string[] = [];
  for (const queue of new Set([...logged.keys(), ...channels.keys()])) {
    const retention = retentionOf(queue);
    if (retention === null) continue;
    const channel = channels.get(queue);
    // what the history lacks is what the log took after the history's newest record (both are
    // written in acceptance order); older held messages were trimmed, or have expired
    const newestAt = channel?.newestAt ?? -Infinity;
    const candidates = (logged.get(queue) ?? []).filter((m) => m.acceptedAt >= newestAt && m.acceptedAt >= expiredBefore(retention));
    const written = channel ? await channel.tailIds(Math.min(recentFrom, newestAt), RECOVER_BYTES, known) : new Map<string, number>();
    for (const m of candidates) if (!written.has(m.messageId) && !fromJournal.has(m.messageId)) missing.push(m);
    for (const [messageId, acceptedAt] of written) if (acceptedAt >= recentFrom && !known(messageId)) unanswered.push(messageId);
  }
  return { missing: missing.sort((a, b) => a.seq - b.seq), heldBack, heldDone, unanswered };
}
