import type { WebSocket } from 'ws';

const TEXT = { binary: false } as const;

export interface OutboundLimits {
  /** at this many unsent bytes the connection is not read and gets no new deliveries */
  readonly softBytes: number;
  /** past this many it is closed; null: never (a mirror's link, whose sync is large by design) */
  readonly hardBytes: number | null;
  /**
   * false for a mirror's link: its sync may take longer to drain than the ping interval, and its
   * pongs must still be read (it sends little else)
   */
  readonly pausesReading: boolean;
}

export interface OutboundEvents {
  /** unsent bytes fell under half the soft bound after reaching it: deliveries may resume */
  drained(): void;
  /** unsent bytes passed the hard bound: the owner closes the connection */
  overflowed(unsentBytes: number, limitBytes: number): void;
}

/**
 * Every byte the broker owes one connection (docs/security.md#limits): what the session encoded
 * and holds for its next flush, plus what the socket has not written yet. At the soft bound the
 * broker stops reading the connection (backpressure: a publisher that reads no results cannot
 * make it answer more); under half of it, reading resumes.
 */
export class Outbound {
  readonly #ws: WebSocket;
  readonly #limits: () => OutboundLimits;
  readonly #events: OutboundEvents;
  #held = 0;
  #full = false;
  #readingPaused = false;
  #overflowed = false;

  constructor(ws: WebSocket, limits: () => OutboundLimits, events: OutboundEvents) {
    this.#ws = ws;
    this.#limits = limits;
    this.#events = events;
  }

  get unsentBytes(): number {
    return this.#ws.bufferedAmount + this.#held;
  }

  /** at the soft bound: no new deliveries until `drained` */
  get isFull(): boolean {
    if (!this.#full && this.unsentBytes >= this.#limits().softBytes) this.#fill();
    return this.#full;
  }

  /** bytes encoded and kept for the next flush */
  hold(bytes: number): void {
    this.#held += bytes;
    this.#check();
  }

  /** the held bytes are about to be written (or dropped) */
  release(bytes: number): void {
    this.#held = Math.max(0, this.#held - bytes);
  }

  /** a text frame (a Buffer holds its UTF-8); `onWritten` when the socket took it (a sign of life of the reader) */
  write(text: string | Buffer, onWritten?: () => void): void {
    if (this.#overflowed) return;
    const done = onWritten ? (error?: Error) => (this.#written(), error ? undefined : onWritten()) : this.#written;
    if (typeof text === 'string') this.#ws.send(text, done);
    else this.#ws.send(text, TEXT, done);
    this.#check();
  }

  /** the connection closed: nothing held is owed any more */
  clear(): void {
    this.#held = 0;
  }

  #check(): void {
    const unsent = this.unsentBytes;
    const { softBytes, hardBytes } = this.#limits();
    if (hardBytes !== null && unsent > hardBytes && !this.#overflowed) {
      this.#overflowed = true;
      this.#events.overflowed(unsent, hardBytes);
      return;
    }
    if (!this.#full && unsent >= softBytes) this.#fill();
  }

  #fill(): void {
    this.#full = true;
    if (!this.#limits().pausesReading) return;
    this.#readingPaused = true;
    this.#ws.pause();
  }

  /** each write's callback: the socket took it; under half the bound the connection is read again */
  readonly #written = (): void => {
    if (!this.#full || this.#overflowed) return;
    if (this.unsentBytes >= this.#limits().softBytes / 2) return;
    this.#full = false;
    if (this.#readingPaused) {
      this.#readingPaused = false;
      this.#ws.resume();
    }
    this.#events.drained();
  };
}
