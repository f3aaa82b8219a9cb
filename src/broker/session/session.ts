import { type KeyObject, randomBytes } from 'node:crypto';
import type { WebSocket } from 'ws';
import { protocolError, WhiskerError } from '../../protocol/errors.js';
import {
  type BrokerFrame,
  type ClientFrame,
  decodeClientFrame,
  type Delivery,
  encodeDelivery,
  encodeFrame,
  PROTOCOL_VERSION,
  type PublishResult,
} from '../../protocol/frames.js';
import type { BrokerContext, ConnectedSession } from './ports.js';
import { handleAck } from './handlers/ack.js';
import { handleAuth } from './handlers/auth.js';
import { handlePeerFrame, peerGone } from './handlers/peer.js';
import { handlePublish } from './handlers/publish.js';
import { handleAddIds, handleRemoveIds, handleSubscribe, handleUnsubscribe } from './handlers/subscribe.js';
import type { Subscription } from '../queue/subscription.js';

type SessionState = 'handshake' | 'authenticating' | 'ready' | 'closed';

const HANDSHAKE_TIMEOUT_MS = 5_000;
const MAX_BATCH = 1_000;

/**
 * One WebSocket connection, and the only writer to it. Nothing but the handshake is accepted
 * before auth; deliveries and results are coalesced into one frame each per tick.
 */
export class Session implements ConnectedSession {
  readonly node = randomBytes(6).toString('hex');
  readonly nonce: string;
  readonly subscriptions = new Map<number, Subscription>();
  readonly ctx: BrokerContext;
  readonly #ws: WebSocket;
  /** the server's set of sessions forgets this one */
  readonly #onGone: (session: Session) => void;
  #state: SessionState = 'handshake';
  #clientName = '';
  /** a mirror broker's link: it follows, it does not publish or subscribe (docs/protocol.md#peers) */
  #isPeer = false;
  #key: KeyObject | null = null;
  #handshakeTimer: NodeJS.Timeout | null;
  /** deliveries encoded when queued, so the bytes not yet written are known (flow control) */
  #deliveries: string[] = [];
  #queuedBytes = 0;
  #results: PublishResult[] = [];
  #flushScheduled = false;
  #paused = false;
  #alive = true;

  constructor(ws: WebSocket, ctx: BrokerContext, nonce: string, onGone: (session: Session) => void) {
    this.#ws = ws;
    this.#onGone = onGone;
    this.ctx = ctx;
    this.nonce = nonce;
    this.#handshakeTimer = setTimeout(() => this.fail(new WhiskerError('E_AUTH', 'Handshake timeout')), HANDSHAKE_TIMEOUT_MS);
    ws.on('message', (data, isBinary) => this.#onMessage(data.toString(), isBinary));
    ws.on('close', () => this.#onClose());
    ws.on('error', () => this.#onClose());
    ws.on('pong', () => (this.#alive = true));
    this.send({ type: 'hello', protocol: PROTOCOL_VERSION, nonce, serviceId: ctx.policy.config.serviceId, isMaster: ctx.router.isMaster });
  }

  get clientName(): string {
    return this.#clientName;
  }

  get label(): string {
    return `${this.#clientName || '?'}#${this.node}`;
  }

  /** the key this connection proved at its handshake */
  get key(): KeyObject | null {
    return this.#key;
  }

  get isPeer(): boolean {
    return this.#isPeer;
  }

  get isReady(): boolean {
    return this.#state === 'ready';
  }

  /** the handshake succeeded: from now on this connection is `name` and nothing else */
  authenticated(clientName: string, key: KeyObject, isPeer = false): void {
    if (this.#state !== 'authenticating') return;
    this.#clientName = clientName;
    this.#isPeer = isPeer;
    this.#key = key;
    this.#state = 'ready';
    if (this.#handshakeTimer) clearTimeout(this.#handshakeTimer);
    this.#handshakeTimer = null;
    const config = this.ctx.policy.config;
    this.send({ type: 'welcome', node: this.node, serviceId: config.serviceId, isMaster: this.ctx.router.isMaster, maxPayloadBytes: config.limits.maxPayloadBytes });
    if (isPeer) {
      this.send(this.ctx.peers.state());
      this.ctx.log.info('peer connected', { peer: this.label });
    } else {
      this.ctx.log.debug('client connected', { client: this.label });
    }
  }

  send(frame: BrokerFrame): void {
    if (this.#state === 'closed') return;
    this.#ws.send(encodeFrame(frame));
  }

  /** an error frame, then close: for protocol and auth failures (docs/protocol.md#errors) */
  fail(error: WhiskerError): void {
    if (this.#state === 'closed') return;
    this.ctx.log.info('connection refused', { client: this.label, code: error.code, reason: error.message });
    this.send({ type: 'error', error: error.toJSON() });
    this.#ws.close(error.code === 'E_PROTOCOL' ? 1002 : 1008, error.code);
    this.#onClose();
  }

  isWritable(): boolean {
    const unsent = this.#ws.bufferedAmount + this.#queuedBytes;
    const writable = this.#state === 'ready' && unsent < this.ctx.policy.config.limits.maxBufferedBytesPerConnection;
    if (!writable) this.#paused = true;
    return writable;
  }

  queueDelivery(delivery: Delivery, dataJson?: string): void {
    const encoded = dataJson === undefined ? JSON.stringify(delivery) : encodeDelivery(delivery, dataJson);
    this.#deliveries.push(encoded);
    this.#queuedBytes += encoded.length;
    this.#scheduleFlush();
  }

  queueResults(results: PublishResult[]): void {
    for (const result of results) this.#results.push(result);
    this.#scheduleFlush();
  }

  /** liveness: a peer that did not answer the last ping is gone */
  ping(): void {
    if (this.#state === 'closed') return;
    if (!this.#alive) {
      this.#ws.terminate();
      this.#onClose();
      return;
    }
    this.#alive = false;
    this.#ws.ping();
  }

  close(code = 1001, reason = 'broker stopping'): void {
    if (this.#state === 'closed') return;
    this.#flush();
    this.#ws.close(code, reason);
    this.#onClose();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#state === 'closed') return;
    while (this.#results.length > 0) this.send({ type: 'results', results: this.#results.splice(0, MAX_BATCH) });
    if (this.#deliveries.length === 0) return;
    // frames stay near maxPayloadBytes so a client's frame limit holds: encode one by one
    const maxBytes = this.ctx.policy.config.limits.maxPayloadBytes;
    const deliveries = this.#deliveries;
    this.#deliveries = [];
    this.#queuedBytes = 0;
    let parts: string[] = [];
    let bytes = 0;
    const sendBatch = () => {
      this.#ws.send(`{"type":"deliver","messages":[${parts.join(',')}]}`, () => this.#maybeResume());
      parts = [];
      bytes = 0;
    };
    for (const part of deliveries) {
      if (parts.length > 0 && (bytes + part.length > maxBytes || parts.length >= MAX_BATCH)) sendBatch();
      parts.push(part);
      bytes += part.length;
    }
    sendBatch();
  }

  #maybeResume(): void {
    if (!this.#paused || this.#state !== 'ready') return;
    if (this.#ws.bufferedAmount >= this.ctx.policy.config.limits.maxBufferedBytesPerConnection / 2) return;
    this.#paused = false;
    for (const subscription of this.subscriptions.values()) this.ctx.router.resume(subscription);
  }

  #onMessage(text: string, isBinary: boolean): void {
    if (this.#state === 'closed') return;
    let frame: ClientFrame;
    try {
      if (isBinary) throw protocolError('binary frames are not part of the protocol');
      frame = decodeClientFrame(text);
    } catch (error) {
      this.fail(error instanceof WhiskerError ? error : protocolError('frame cannot be decoded'));
      return;
    }
    if (this.#state !== 'ready') {
      if (this.#state !== 'handshake' || frame.type !== 'auth') {
        this.fail(protocolError(frame.type === 'auth' ? 'second auth frame' : 'frame before the handshake'));
        return;
      }
      this.#state = 'authenticating';
      handleAuth(this, frame);
      return;
    }
    this.#dispatch(frame);
  }

  #dispatch(frame: ClientFrame): void {
    if (this.#isPeer) {
      handlePeerFrame(this, frame);
      return;
    }
    switch (frame.type) {
      case 'auth':
        this.fail(protocolError('already authenticated'));
        return;
      case 'publish':
        handlePublish(this, frame);
        return;
      case 'subscribe':
        handleSubscribe(this, frame);
        return;
      case 'addIds':
        handleAddIds(this, frame);
        return;
      case 'removeIds':
        handleRemoveIds(this, frame);
        return;
      case 'unsubscribe':
        handleUnsubscribe(this, frame);
        return;
      case 'ack':
        handleAck(this, frame);
        return;
      case 'peerState':
      case 'follow':
      case 'offer':
        this.fail(protocolError(`${frame.type} is a frame between brokers`));
        return;
      default: {
        const never: never = frame;
        this.fail(protocolError(`unhandled frame ${String((never as { type: unknown }).type)}`));
      }
    }
  }

  #onClose(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (this.#handshakeTimer) clearTimeout(this.#handshakeTimer);
    this.#handshakeTimer = null;
    for (const subscription of this.subscriptions.values()) this.ctx.router.unsubscribe(subscription);
    this.subscriptions.clear();
    this.#deliveries = [];
    this.#queuedBytes = 0;
    this.#onGone(this);
    if (this.#isPeer) {
      peerGone(this);
      this.ctx.log.info('peer disconnected', { peer: this.label });
    } else {
      this.ctx.log.debug('client disconnected', { client: this.label });
    }
  }
}
