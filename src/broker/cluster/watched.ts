import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import type { Logger } from '../../runtime/logger.js';
import { withTimeout } from '../mirror/election.js';

export interface PrefixEvents {
  /** a key under the prefix holds `value` (after the first read, and on every put) */
  put(key: string, value: string): void;
  /** `previous`: the value it held, when the watch was asked for it (`withPrevious`) and etcd still had it */
  deleted(key: string, previous?: string): void;
  /** the first read is done: the copy is complete from now on */
  loaded(): void;
}

const RETRY_MS = 1_000;

/**
 * A copy of the keys under one etcd prefix, kept by a read and then a watch from the revision
 * after it (SPEC §13: every broker caches the map and follows it). etcd3's watcher resumes
 * itself after a lost connection; the first read is retried until etcd answers.
 */
export class WatchedPrefix {
  readonly #client: Etcd3;
  readonly #prefix: string;
  readonly #events: PrefixEvents;
  readonly #log: Logger;
  readonly #timeoutMs: number;
  #watcher: Watcher | null = null;
  #closed = false;
  #timer: NodeJS.Timeout | null = null;
  #loaded = false;
  readonly #withPrevious: boolean;

  constructor(client: Etcd3, prefix: string, events: PrefixEvents, log: Logger, timeoutMs: number, withPrevious = false) {
    this.#client = client;
    this.#withPrevious = withPrevious;
    this.#prefix = prefix;
    this.#events = events;
    this.#log = log;
    this.#timeoutMs = timeoutMs;
  }

  start(): void {
    void this.#load();
  }

  /** the first read is done (etcd answered once since start) */
  get loaded(): boolean {
    return this.#loaded;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#watcher?.cancel().catch(() => undefined);
  }

  async #load(): Promise<void> {
    try {
      const read = await withTimeout(this.#client.getAll().prefix(this.#prefix).exec(), this.#timeoutMs);
      if (this.#closed) return;
      for (const kv of read.kvs) this.#events.put(this.#key(kv), kv.value.toString());
      this.#loaded = true;
      this.#events.loaded();
      const builder = this.#client.watch().prefix(this.#prefix).startRevision(String(Number(read.header.revision) + 1));
      const watcher = await withTimeout((this.#withPrevious ? builder.withPreviousKV() : builder).create(), this.#timeoutMs);
      if (this.#closed) return void watcher.cancel().catch(() => undefined);
      this.#watcher = watcher;
      watcher.on('put', (kv) => this.#events.put(this.#key(kv), kv.value.toString()));
      watcher.on('delete', (kv, previous) => this.#events.deleted(this.#key(kv), previous?.value.toString()));
      watcher.on('error', (error) => this.#log.warn('etcd watch failed', { prefix: this.#prefix, error: error.message }));
    } catch (error) {
      if (this.#closed) return;
      this.#log.debug('etcd read failed, trying again', { prefix: this.#prefix, error: (error as Error).message });
      this.#timer = setTimeout(() => void this.#load(), RETRY_MS);
      this.#timer.unref();
    }
  }

  #key(kv: IKeyValue): string {
    return kv.key.toString().slice(this.#prefix.length);
  }
}
