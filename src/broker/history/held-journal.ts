import { constants, type FileHandle, mkdir, open, readFile, rename, truncate, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { HistoryRecord } from './segment.js';

/** past this many bytes on disk the journal is written anew with only the records still held */
const REWRITE_BYTES = 32 * 1_048_576;
const HEADER = 8;

/** a record the history holds out of its files, and its channel */
export interface Journaled {
  readonly queue: string;
  readonly record: HistoryRecord;
}

function encode(payload: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(payload));
  const header = Buffer.allocUnsafe(HEADER);
  header.writeUInt32LE(body.length, 0);
  header.writeUInt32LE(crc32(body), 4);
  return Buffer.concat([header, body]);
}

function encodeHeld({ queue, record: r }: Journaled): Buffer {
  return encode({ q: queue, m: r.messageId, i: r.id, a: r.acceptedAt, c: r.created, f: r.from, d: r.data });
}

/**
 * Issue 27 item 4 (outside check atk27j F1): the records a History holds in memory (`#held`: a
 * slave's clients' copies waiting for its master's feed, a master's while it catches up, a side
 * line's recent records taken off the disk at a join to wait with them; `#moving`: a queue's new
 * records waiting for a hand-over) are in no history file meanwhile, and their messages may be
 * settled (gone from the message log) before they are written. Each one is written here first
 * (`hold`, one synced write for what arrives together), and marked out once its channel's files
 * have it (`done`): at a restart after a kill -9 what is still held here goes back into the
 * history (History.recover). `dataDirectory/history/held.journal`, entries `[u32 length][u32
 * crc32][JSON]` like a segment's records: `{q, m, i, a, c, f, d}` held, `{o: [ids]}` out. Emptied
 * whenever nothing is held; written anew with what is held past REWRITE_BYTES.
 *
 * Cost: only records that are held (on a master, those of a catch-up hold; on a slave in step,
 * every client's copy): each is written once more (its segment encoding plus its channel's name,
 * in the same synced write as the others held with it) and its id once more (out, not awaited).
 */
export class HeldJournal {
  readonly #path: string;
  #handle: FileHandle | null = null;
  #bytes = 0;
  /** what the file holds and the history's files do not have yet, in the order held */
  readonly #pending = new Map<string, Journaled>();
  #queued: Buffer[] = [];
  #waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  #writing: Promise<void> | null = null;

  constructor(dir: string) {
    this.#path = join(dir, 'held.journal');
  }

  /** what an earlier run held and did not mark out (a torn last entry is left out), in the order held */
  async open(): Promise<Journaled[]> {
    let buffer: Buffer;
    try {
      buffer = await readFile(this.#path);
    } catch {
      return [];
    }
    let at = 0;
    while (at + HEADER <= buffer.length) {
      const length = buffer.readUInt32LE(at);
      if (at + HEADER + length > buffer.length) break;
      const body = buffer.subarray(at + HEADER, at + HEADER + length);
      if (crc32(body) !== buffer.readUInt32LE(at + 4)) break;
      at += HEADER + length;
      const entry = JSON.parse(body.toString('utf8')) as { o?: string[]; q: string; m: string; i: string; a: number; c: number; f: string; d: unknown };
      if (entry.o) for (const messageId of entry.o) this.#pending.delete(messageId);
      else this.#pending.set(entry.m, { queue: entry.q, record: { messageId: entry.m, id: entry.i, acceptedAt: entry.a, created: entry.c, from: entry.f, data: entry.d } });
    }
    // a torn last entry (killed during its write) is cut: what is appended next is read after the rest
    if (at < buffer.length) await truncate(this.#path, at);
    this.#bytes = at;
    return [...this.#pending.values()];
  }

  get size(): number {
    return this.#pending.size;
  }

  has(messageId: string): boolean {
    return this.#pending.has(messageId);
  }

  /** these records are held out of the history's files: resolves once they are on disk here */
  hold(entries: readonly Journaled[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    for (const entry of entries) {
      this.#pending.set(entry.record.messageId, entry);
      this.#queued.push(encodeHeld(entry));
    }
    return this.#flush();
  }

  /** the history's files have these records now (or never will: not retained, or another record of it was written) */
  done(messageIds: readonly string[]): void {
    const out = messageIds.filter((messageId) => this.#pending.delete(messageId));
    if (out.length === 0) return;
    this.#queued.push(encode({ o: out }));
    this.#flush().catch(() => undefined);
  }

  #flush(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      this.#writing ??= this.#drain();
    });
  }

  /** one write at a time, of everything queued meanwhile */
  async #drain(): Promise<void> {
    while (this.#waiters.length > 0) {
      const chunks = this.#queued;
      const waiters = this.#waiters;
      this.#queued = [];
      this.#waiters = [];
      try {
        await this.#write(chunks);
        for (const waiter of waiters) waiter.resolve();
      } catch (error) {
        for (const waiter of waiters) waiter.reject(error);
      }
    }
    this.#writing = null;
  }

  async #write(chunks: readonly Buffer[]): Promise<void> {
    if (this.#pending.size === 0) {
      // nothing held: what the file says is all done (what these chunks say too)
      if (this.#bytes > 0) {
        if (this.#handle) await this.#handle.truncate(0);
        else await unlink(this.#path).catch(() => undefined);
        this.#bytes = 0;
      }
      return;
    }
    const bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    if (this.#bytes + bytes > REWRITE_BYTES) return this.#rewrite();
    const handle = await this.#open();
    await handle.write(Buffer.concat(chunks, bytes));
    this.#bytes += bytes;
  }

  /** the journal anew: only what is held now */
  async #rewrite(): Promise<void> {
    const buffer = Buffer.concat([...this.#pending.values()].map(encodeHeld));
    const tmp = `${this.#path}.tmp`;
    const file = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_DSYNC, 0o600);
    try {
      await file.write(buffer);
    } finally {
      await file.close();
    }
    await rename(tmp, this.#path);
    await this.#handle?.close();
    this.#handle = null;
    this.#bytes = buffer.length;
  }

  async #open(): Promise<FileHandle> {
    if (this.#handle) return this.#handle;
    await mkdir(dirname(this.#path), { recursive: true, mode: 0o700 });
    this.#handle = await open(this.#path, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_DSYNC, 0o600);
    return this.#handle;
  }

  async close(): Promise<void> {
    while (this.#writing) await this.#writing;
    await this.#handle?.close();
    this.#handle = null;
  }
}
