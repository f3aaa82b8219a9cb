import type { WebSocket } from 'ws';

/** the default for clients and brokers alike (docs/configuration.md, SPEC §9) */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 5_000;

/**
 * Liveness of one WebSocket, on either side (SPEC §9): a ping every third of the timeout, and
 * the socket terminated when nothing (frame, ping or pong) was heard for the whole timeout, so a
 * peer cut off by a partition is gone within seconds, not when TCP gives up. A pause of our own
 * event loop longer than two ticks blames nobody: the window starts again.
 */
export class Heartbeat {
  readonly #ws: WebSocket;
  readonly #timeoutMs: number;
  readonly #onDead: () => void;
  readonly #timer: NodeJS.Timeout;
  readonly #tickMs: number;
  #lastHeard: number;
  #lastTick: number;
  /** we chose not to read the socket (backpressure): what the other side sends waits unread */
  #held = false;

  constructor(ws: WebSocket, timeoutMs: number, onDead: () => void) {
    this.#ws = ws;
    this.#timeoutMs = timeoutMs;
    this.#onDead = onDead;
    this.#tickMs = Math.max(10, Math.floor(timeoutMs / 3));
    this.#lastHeard = this.#lastTick = Date.now();
    const heard = () => this.heard();
    ws.on('message', heard);
    ws.on('ping', heard);
    ws.on('pong', heard);
    ws.once('close', () => this.stop());
    this.#timer = setInterval(() => this.#tick(), this.#tickMs);
    this.#timer.unref();
  }

  heard(): void {
    this.#lastHeard = Date.now();
  }

  /** while held, silence blames nobody; released, the window starts again */
  hold(held: boolean): void {
    this.#held = held;
    this.#lastHeard = Date.now();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #tick(): void {
    const now = Date.now();
    // our loop stood still: what the other side sent may be waiting unread in the socket
    if (now - this.#lastTick > this.#tickMs * 2 || this.#held) this.#lastHeard = now;
    this.#lastTick = now;
    if (now - this.#lastHeard >= this.#timeoutMs) {
      this.stop();
      this.#ws.terminate();
      this.#onDead();
      return;
    }
    if (this.#ws.readyState === this.#ws.OPEN) this.#ws.ping();
  }
}
