import type { Socket } from 'node:net';
import { afterEach } from 'vitest';
import { WebSocket } from 'ws';
import { PROTOCOL_VERSION } from '../../src/protocol/frames.js';
import { type KeyPair, signToken } from './raw-peer.js';

/**
 * An authenticated connection that stops reading its socket and then writes one frame over and
 * over, as fast as the broker takes it (the bounds tests: a publisher that never reads results).
 */
const open = new Set<Flooder>();

afterEach(() => {
  for (const flooder of open) flooder.terminate();
  open.clear();
});

export interface FloodOutcome {
  /** bytes the broker's side took from the socket (what this side wrote minus what it still holds) */
  readonly taken: number;
  /** true when writing stopped because the broker stopped taking bytes for `stallMs` */
  readonly stalled: boolean;
  readonly closed: { code: number; reason: string } | null;
}

export class Flooder {
  readonly #ws: WebSocket;
  #closed: { code: number; reason: string } | null = null;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('error', () => {});
    ws.on('close', (code, reason) => (this.#closed = { code, reason: reason.toString() }));
    open.add(this);
  }

  /** logs in as `name`, then stops reading: nothing the broker sends is read from then on */
  static login(port: number, name: string, keys: KeyPair): Promise<Flooder> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
    const flooder = new Flooder(ws);
    return new Promise((resolve, reject) => {
      ws.once('close', (code) => reject(new Error(`closed (${code}) before welcome`)));
      ws.on('message', function onMessage(data) {
        const frame = JSON.parse(data.toString()) as { type: string; nonce?: string; serviceId?: string };
        if (frame.type === 'hello') {
          signToken(keys, { iss: name, aud: frame.serviceId!, nonce: frame.nonce! }).then(
            (token) => ws.send(JSON.stringify({ type: 'auth', protocol: PROTOCOL_VERSION, token, publicKey: keys.publicKeyPem })),
            reject,
          );
        } else if (frame.type === 'welcome') {
          ws.off('message', onMessage);
          (ws as unknown as { _socket: Socket })._socket.pause();
          resolve(flooder);
        }
      });
    });
  }

  /**
   * writes `frame` until `totalBytes` are taken by the broker, or it took nothing for `stallMs`,
   * or the connection closed; at most 4 frames are ever waiting on this side
   */
  async flood(frame: string, totalBytes: number, stallMs: number): Promise<FloodOutcome> {
    let written = 0;
    let stalled = false;
    const pending: Array<Promise<void>> = [];
    while (this.#closed === null && written - this.#ws.bufferedAmount < totalBytes) {
      while (pending.length < 4 && written < totalBytes) {
        pending.push(new Promise<void>((resolve) => this.#ws.send(frame, () => resolve())));
        written += frame.length;
      }
      let timer: NodeJS.Timeout | undefined;
      const progress = await Promise.race([
        pending.shift()!.then(() => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), stallMs))),
      ]);
      clearTimeout(timer);
      if (!progress) {
        stalled = true;
        break;
      }
    }
    return { taken: written - this.#ws.bufferedAmount, stalled, closed: this.#closed };
  }

  /** resolves when the broker closed this connection */
  get closed(): { code: number; reason: string } | null {
    return this.#closed;
  }

  terminate(): void {
    this.#ws.terminate();
  }
}
