import type { Logger } from '../../runtime/logger.js';

/** the link a backlog holds back: a slave's connection to its master (link/connection.ts) */
export interface PausableLink {
  readonly readingPaused: boolean;
  pauseReading(): void;
  resumeReading(): void;
}

/** one frame from the master waiting to be applied */
export interface Unapplied {
  readonly at: number;
  readonly items: number;
  readonly bytes: number;
}

/** the pauses of a lagging link are logged once in this long, with the count since */
const PAUSE_LOG_EVERY_MS = 60_000;

/**
 * What a slave read from its master and has not applied yet (docs/security.md#limits): past
 * limits.maxMirrorBacklogBytes the link is not read (the master's writes wait in TCP, then in
 * its limits.maxMirrorLinkBytes), and is read again under half.
 */
export class ApplyBacklog {
  readonly #frames: Unapplied[] = [];
  #bytes = 0;
  #pausedAt = 0;
  #pauseLoggedAt = -Infinity;
  #pausesSinceLog = 0;
  readonly #link: PausableLink;
  readonly #bound: () => number;
  readonly #log: Logger;
  readonly #master: string;

  constructor(link: PausableLink, bound: () => number, log: Logger, master: string) {
    this.#link = link;
    this.#bound = bound;
    this.#log = log;
    this.#master = master;
  }

  /** messages and settlements waiting */
  get items(): number {
    return this.#frames.reduce((sum, frame) => sum + frame.items, 0);
  }

  /** how long the oldest has waited */
  get seconds(): number {
    return this.#frames.length > 0 ? (Date.now() - this.#frames[0]!.at) / 1000 : 0;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** a frame read: it waits in the apply chain; past the bound, the link is not read */
  received(items: number, bytes: number): Unapplied {
    const frame = { at: Date.now(), items, bytes };
    this.#frames.push(frame);
    this.#bytes += bytes;
    const bound = this.#bound();
    if (this.#bytes <= bound || this.#link.readingPaused) return frame;
    this.#link.pauseReading();
    this.#pausedAt = Date.now();
    this.#pausesSinceLog++;
    // a slave that keeps lagging pauses often: one line a minute, with the count
    if (this.#pausedAt - this.#pauseLoggedAt >= PAUSE_LOG_EVERY_MS) {
      this.#log.info('not reading the master until what it sent is applied (limits.maxMirrorBacklogBytes)', { master: this.#master, backlogBytes: this.#bytes, limitBytes: bound, pauses: this.#pausesSinceLog });
      this.#pauseLoggedAt = this.#pausedAt;
      this.#pausesSinceLog = 0;
    }
    return frame;
  }

  /** applied (or failed): under half the bound, the link is read again */
  applied(frame: Unapplied): void {
    this.#frames.splice(this.#frames.indexOf(frame), 1);
    this.#bytes -= frame.bytes;
    if (!this.#link.readingPaused || this.#bytes > this.#bound() / 2) return;
    this.#link.resumeReading();
    this.#log.debug('reading the master again', { master: this.#master, pausedMs: Date.now() - this.#pausedAt });
  }
}
