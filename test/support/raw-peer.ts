import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterEach } from 'vitest';
import { WebSocket } from 'ws';
import type { ErrorPayload } from '../../src/protocol/errors.js';
import {
  type BrokerFrame,
  decodeBrokerFrame,
  type Delivery,
  type HelloFrame,
  PROTOCOL_VERSION,
  type ReplyFrame,
  type WelcomeFrame,
} from '../../src/protocol/frames.js';

/**
 * A hand-driven WebSocket peer for hostile-input tests: it speaks (or breaks) the protocol
 * frame by frame, records everything the broker sends, and is closed after each test.
 */
const peers = new Set<RawPeer>();

afterEach(async () => {
  const open = [...peers];
  peers.clear();
  await Promise.all(open.map((peer) => peer.terminate()));
});

export type Algorithm = 'EdDSA' | 'ES256' | 'ES512';

export interface KeyPair {
  readonly privateKey: KeyObject;
  readonly publicKeyPem: string;
  readonly algorithm: Algorithm;
}

/** a fresh key pair, Ed25519 unless asked otherwise */
export function newKeyPair(algorithm: Algorithm = 'EdDSA'): KeyPair {
  const pair =
    algorithm === 'EdDSA'
      ? generateKeyPairSync('ed25519')
      : generateKeyPairSync('ec', { namedCurve: algorithm === 'ES256' ? 'prime256v1' : 'secp521r1' });
  return { privateKey: pair.privateKey, publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(), algorithm };
}

export interface TokenClaims {
  iss?: string;
  aud?: string | string[];
  nonce?: string;
  /** seconds since the epoch; default now */
  iat?: number;
  /** seconds since the epoch; default iat + 120 */
  exp?: number;
}

/** a handshake JWT; a claim set to `undefined` explicitly is left out of the token */
export function signToken(keys: KeyPair, claims: TokenClaims): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const iat = 'iat' in claims ? claims.iat : now;
  const exp = 'exp' in claims ? claims.exp : (iat ?? now) + 120;
  const jwt = new SignJWT(claims.nonce === undefined ? {} : { nonce: claims.nonce }).setProtectedHeader({ alg: keys.algorithm });
  if (claims.iss !== undefined) jwt.setIssuer(claims.iss);
  if (claims.aud !== undefined) jwt.setAudience(claims.aud);
  if (iat !== undefined) jwt.setIssuedAt(iat);
  if (exp !== undefined) jwt.setExpirationTime(exp);
  return jwt.sign(keys.privateKey);
}

/** an unsigned token (`alg: none`), which no broker may accept */
export function unsignedToken(payload: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(payload)}.`;
}

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

interface Waiter {
  readonly match: (frame: BrokerFrame) => boolean;
  readonly resolve: (frame: BrokerFrame) => void;
  readonly reject: (error: Error) => void;
}

export interface AuthOptions {
  keys: KeyPair;
  /** default: the serviceId the broker announced */
  serviceId?: string;
  /** default: this socket's nonce */
  nonce?: string;
  /** send the public key (needed only to register a new name); default true */
  sendPublicKey?: boolean;
  socketToken?: string;
  protocol?: number;
}

export class RawPeer {
  /** every frame the broker sent, decoded, in order */
  readonly frames: BrokerFrame[] = [];
  /** false: frames are not kept in `frames` (a large replay), only seen by `onFrame` and waiters */
  keepFrames = true;
  onFrame: ((frame: BrokerFrame) => void) | null = null;
  /** resolves when the socket is closed, whoever closed it */
  readonly closed: Promise<Closed>;
  readonly #ws: WebSocket;
  #waiters: Waiter[] = [];
  #isClosed = false;
  #hello: HelloFrame | null = null;
  #nextReq = 1;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => this.#onMessage(data.toString(), isBinary));
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.#isClosed = true;
        for (const waiter of this.#waiters) waiter.reject(new Error(`socket closed (${code}) before the expected frame`));
        this.#waiters = [];
        resolve({ code, reason: reason.toString() });
      });
    });
  }

  /** opens a socket to a broker and waits for its `hello` */
  /** a peer that logs in with `keys` as `role: 'peer'` to broker `serviceId` and says it is a follower, not a master (a raw mirror follower) */
  static async follower(port: number, serviceId: string, keys: KeyPair): Promise<RawPeer> {
    const peer = await RawPeer.open(port);
    const token = await signToken(keys, { iss: 'raw', aud: serviceId, nonce: peer.nonce });
    peer.sendJson({ type: 'auth', protocol: PROTOCOL_VERSION, token, publicKey: keys.publicKeyPem, role: 'peer' });
    await peer.next('welcome');
    peer.sendJson({ type: 'peerState', serviceId: 'raw', configuredMaster: false, isMaster: false });
    return peer;
  }

  static async open(port: number, host = '127.0.0.1'): Promise<RawPeer> {
    const ws = new WebSocket(`ws://${host}:${port}`, { perMessageDeflate: false });
    const peer = new RawPeer(ws);
    peers.add(peer);
    const hello = await peer.next('hello');
    peer.#hello = hello;
    return peer;
  }

  get hello(): HelloFrame {
    if (!this.#hello) throw new Error('no hello yet');
    return this.#hello;
  }

  get nonce(): string {
    return this.hello.nonce;
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** sends text as is (no JSON encoding), or a Buffer as a binary frame */
  sendRaw(data: string | Buffer): void {
    this.#ws.send(data, { binary: Buffer.isBuffer(data) });
  }

  /** sends any value as one JSON text frame */
  sendJson(value: unknown): void {
    this.sendRaw(JSON.stringify(value));
  }

  /** the first frame of that type (already received or still to come) that passes `where` */
  next<T extends BrokerFrame['type']>(type: T, where: (frame: Extract<BrokerFrame, { type: T }>) => boolean = () => true, timeoutMs = 5000): Promise<Extract<BrokerFrame, { type: T }>> {
    type F = Extract<BrokerFrame, { type: T }>;
    return this.#wait((frame) => frame.type === type && where(frame as F), `${type} frame`, timeoutMs) as Promise<F>;
  }

  /** the error frame the broker sent (it must come before the close) */
  async error(): Promise<ErrorPayload> {
    return (await this.next('error')).error;
  }

  /** the error frame's payload and the close that follows it */
  async refusal(): Promise<{ error: ErrorPayload; closed: Closed }> {
    const error = await this.error();
    return { error, closed: await this.closed };
  }

  /** an `auth` frame signed as `name`; resolves with the broker's answer: welcome or error */
  async authenticate(name: string, options: AuthOptions): Promise<WelcomeFrame | ErrorPayload> {
    const token = await signToken(options.keys, { iss: name, aud: options.serviceId ?? this.hello.serviceId, nonce: options.nonce ?? this.nonce });
    return this.sendAuth(token, options);
  }

  /** sends an `auth` frame carrying `token`; resolves with welcome or the error payload */
  async sendAuth(token: string, options: Partial<AuthOptions> = {}): Promise<WelcomeFrame | ErrorPayload> {
    this.sendJson({
      type: 'auth',
      protocol: options.protocol ?? PROTOCOL_VERSION,
      token,
      ...(options.keys && options.sendPublicKey !== false ? { publicKey: options.keys.publicKeyPem } : {}),
      ...(options.socketToken !== undefined ? { socketToken: options.socketToken } : {}),
    });
    const answer = await this.#wait((frame) => frame.type === 'welcome' || frame.type === 'error', 'welcome or error frame', 5000);
    if (answer.type === 'welcome') return answer;
    if (answer.type === 'error') return answer.error;
    throw new Error(`unexpected ${answer.type} frame`);
  }

  /** authenticates and insists on a welcome */
  async login(name: string, keys: KeyPair): Promise<WelcomeFrame> {
    const answer = await this.authenticate(name, { keys });
    if (!('type' in answer)) throw new Error(`login as ${name} refused: ${answer.code}`);
    return answer;
  }

  /** sends a request frame with a fresh `req` and waits for its reply */
  async request(frame: Record<string, unknown>): Promise<ReplyFrame> {
    const req = this.#nextReq++;
    this.sendJson({ ...frame, req });
    return this.next('reply', (reply) => reply.req === req);
  }

  /** every delivery received so far */
  deliveries(): Delivery[] {
    return this.frames.flatMap((frame) => (frame.type === 'deliver' ? frame.messages : []));
  }

  /** waits for a delivery of `messageId` */
  async delivery(messageId: string): Promise<Delivery> {
    await this.next('deliver', (frame) => frame.messages.some((m) => m.messageId === messageId));
    return this.deliveries().find((m) => m.messageId === messageId)!;
  }

  /** stops reading the socket (the broker's writes back up), until resume() */
  pause(): void {
    this.#ws.pause();
  }

  resume(): void {
    this.#ws.resume();
  }

  terminate(): Promise<Closed> {
    if (!this.#isClosed) this.#ws.terminate();
    return this.closed;
  }

  #wait(match: (frame: BrokerFrame) => boolean, what: string, timeoutMs: number): Promise<BrokerFrame> {
    const seen = this.frames.find(match);
    if (seen) return Promise.resolve(seen);
    if (this.#isClosed) return Promise.reject(new Error(`socket closed, no ${what}`));
    return new Promise<BrokerFrame>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new Error(`no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter: Waiter = {
        match,
        resolve: (frame) => {
          clearTimeout(timer);
          resolve(frame);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.#waiters.push(waiter);
    });
  }

  #onMessage(text: string, isBinary: boolean): void {
    // the broker must only ever send well-formed text frames: anything else fails the waiters
    let frame: BrokerFrame;
    try {
      if (isBinary) throw new Error('the broker sent a binary frame');
      frame = decodeBrokerFrame(text);
    } catch (error) {
      for (const waiter of this.#waiters) waiter.reject(error as Error);
      this.#waiters = [];
      return;
    }
    if (this.keepFrames) this.frames.push(frame);
    this.onFrame?.(frame);
    this.#waiters = this.#waiters.filter((waiter) => {
      if (!waiter.match(frame)) return true;
      waiter.resolve(frame);
      return false;
    });
  }
}
