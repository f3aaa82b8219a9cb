import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Retention } from '../../config/types.js';
import type { Logger } from '../../runtime/logger.js';
import type { StoredMessage } from '../store/store.js';
import { ChannelHistory, type ReadRange } from './channel-history.js';
import type { HistoryRecord, ReadRecord } from './segment.js';

export type { HistoryRecord, ReadRecord } from './segment.js';
export type { ReadRange } from './channel-history.js';

/** how often retention by time is applied when nothing is appended */
const TRIM_INTERVAL_MS = 5_000;

export interface HistoryStats {
  readonly bytes: number;
  readonly count: number;
  /** acceptance time of the oldest message kept, ms epoch */
  readonly oldestAt: number | null;
}

/**
 * The history of every retained channel (`channels["ep/ver"].retention`, docs/configuration.md#retention),
 * in `dataDirectory/history/<endpoint>@<version>/`: every message accepted on such a channel,
 * kept after its acks until it is older than `seconds` or the channel is past `maxBytes`. Every
 * mirror stores the messages it holds, so a promoted mirror has the same history.
 */
export class History {
  readonly #dir: string;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #channels = new Map<string, ChannelHistory>();
  #retention: (queue: string) => Retention | null;
  #timer: NodeJS.Timeout | null = null;
  /** replays served since start (metrics: whisker_replays_total) */
  replays = 0;
  /** replays reading now (whisker_replays_in_progress) */
  replaying = 0;
  /** messages given by replays since start (whisker_replayed_messages_total); the replay handler counts them */
  replayedMessages = 0;

  constructor(dir: string, retention: (queue: string) => Retention | null, log: Logger, now: () => number) {
    this.#dir = dir;
    this.#retention = retention;
    this.#log = log;
    this.#now = now;
  }

  /** the channels with a history on disk come back (also those no longer retained: trimmed by a reload's rules) */
  async open(): Promise<void> {
    for (const name of await readdir(this.#dir).catch(() => [] as string[])) {
      const at = name.indexOf('@');
      if (at <= 0) continue;
      const channel = new ChannelHistory(join(this.#dir, name));
      await channel.open();
      this.#channels.set(`${name.slice(0, at)}/${name.slice(at + 1)}`, channel);
    }
    this.#timer = setInterval(() => void this.trimAll(), TRIM_INTERVAL_MS);
    this.#timer.unref();
  }

  /** at reload: the new config's retention applies from now on */
  setRetention(retention: (queue: string) => Retention | null): void {
    this.#retention = retention;
  }

  isRetained(queue: string): boolean {
    return this.#retention(queue) !== null;
  }

  /** stores the messages of retained channels; resolves once they are on disk */
  async append(messages: readonly StoredMessage[]): Promise<void> {
    let byQueue: Map<string, HistoryRecord[]> | null = null;
    for (const m of messages) {
      if (m.data === undefined || this.#retention(m.queue) === null) continue;
      byQueue ??= new Map();
      let records = byQueue.get(m.queue);
      if (!records) byQueue.set(m.queue, (records = []));
      records.push({ messageId: m.messageId, id: m.id, acceptedAt: m.acceptedAt, created: m.created, from: m.from, data: m.data });
    }
    if (!byQueue) return;
    await Promise.all(
      [...byQueue].map(async ([queue, records]) => {
        const retention = this.#retention(queue)!;
        const channel = await this.#channel(queue);
        await channel.append(records, retention);
        await channel.trim(retention, this.#now());
      }),
    );
  }

  stats(queue: string): HistoryStats | null {
    const channel = this.#channels.get(queue);
    return channel ? { bytes: channel.bytes, count: channel.count, oldestAt: channel.oldestAt } : null;
  }

  /** every channel with a history, with its stats */
  list(): Array<[queue: string, stats: HistoryStats]> {
    return [...this.#channels.keys()].sort().map((queue) => [queue, this.stats(queue)!]);
  }

  /**
   * Reads a channel's history in acceptance order (`each` as in ChannelHistory.read). Messages
   * past `retention.seconds` that are still on disk are skipped: a replay shows what is retained.
   */
  async read(queue: string, range: ReadRange, each: (record: ReadRecord) => boolean | Promise<boolean>): Promise<void> {
    const channel = this.#channels.get(queue);
    if (!channel) return;
    const seconds = this.#retention(queue)?.seconds;
    this.replays++;
    this.replaying++;
    try {
      await channel.read(range, seconds === undefined ? -Infinity : this.#now() - seconds * 1000, each);
    } finally {
      this.replaying--;
    }
  }

  /** `whisker delete QUEUE --history`: the channel's history emptied; bytes freed */
  async clear(queue: string): Promise<number> {
    return (await this.#channels.get(queue)?.clear()) ?? 0;
  }

  async trimAll(): Promise<void> {
    const now = this.#now();
    for (const [queue, channel] of this.#channels) {
      const retention = this.#retention(queue);
      try {
        // a channel no longer retained keeps nothing: its history goes at the next trim
        if (retention === null) {
          await channel.destroy();
          this.#channels.delete(queue);
          this.#log.info('history of a channel no longer retained removed', { queue });
        } else {
          await channel.trim(retention, now);
        }
      } catch (error) {
        this.#log.error('history trim failed', { queue, error: (error as Error).message });
      }
    }
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await Promise.all([...this.#channels.values()].map((c) => c.close()));
  }

  async #channel(queue: string): Promise<ChannelHistory> {
    let channel = this.#channels.get(queue);
    if (!channel) {
      channel = new ChannelHistory(join(this.#dir, queue.replace('/', '@')));
      this.#channels.set(queue, channel);
      await channel.open();
    }
    return channel;
  }
}
