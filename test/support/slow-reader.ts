import type { Socket } from 'node:net';
import { afterEach } from 'vitest';
import { WebSocket } from 'ws';
import { PROTOCOL_VERSION } from '../../src/protocol/frames.js';
import { type KeyPair, signToken } from './raw-peer.js';

/**
 * An authenticated listener whose TCP socket can stop reading (`pause`), for the slow-consumer
 * test. It only counts deliveries, so the test's own memory does not grow with them.
 */
const readers = new Set<SlowReader>();

afterEach(() => {
  for (const reader of readers) reader.terminate();
  readers.clear();
});

export class SlowReader {
  received = 0;
  readonly #ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
  }

  /**
   * connects as `name`, listens on `endpoint/version/*` and resolves once the broker registered
   * it; `pausedFromReply` stops reading as the reply arrives, before any delivery is read
   */
  static open(port: number, name: string, keys: KeyPair, endpoint: string, version: string, pausedFromReply = false): Promise<SlowReader> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
    const reader = new SlowReader(ws);
    readers.add(reader);
    return new Promise((resolve, reject) => {
      ws.on('error', reject);
      ws.on('close', (code) => reject(new Error(`closed (${code}) before the subscription was registered`)));
      ws.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as { type: string; nonce?: string; serviceId?: string; messages?: unknown[]; error?: unknown };
        switch (frame.type) {
          case 'hello':
            signToken(keys, { iss: name, aud: frame.serviceId!, nonce: frame.nonce! }).then(
              (token) => ws.send(JSON.stringify({ type: 'auth', protocol: PROTOCOL_VERSION, token, publicKey: keys.publicKeyPem })),
              reject,
            );
            return;
          case 'welcome':
            ws.send(JSON.stringify({ type: 'subscribe', req: 1, sub: 1, mode: 'listen', endpoint, version, ids: ['*'] }));
            return;
          case 'reply':
            if (frame.error) return reject(new Error(`subscribe refused: ${JSON.stringify(frame.error)}`));
            if (pausedFromReply) reader.pause();
            resolve(reader);
            return;
          case 'deliver':
            reader.received += frame.messages!.length;
            return;
          default:
            return;
        }
      });
    });
  }

  /** stops reading from the TCP socket: the kernel buffers fill, then the broker's */
  pause(): void {
    this.#socket().pause();
  }

  resume(): void {
    this.#socket().resume();
  }

  terminate(): void {
    this.#ws.terminate();
  }

  #socket(): Socket {
    // ws keeps the net.Socket in a private field; pausing it is the only way to stop reading
    return (this.#ws as unknown as { _socket: Socket })._socket;
  }
}
