import { type KeyObject, randomBytes } from 'node:crypto';
import type { WebSocket } from 'ws';
import { Heartbeat } from '../../link/heartbeat.js';
import { protocolError, WhiskerError } from '../../protocol/errors.js';
import {
  type BrokerFrame,
  type ClientFrame,
  decodeClientFrame,
  type Delivery,
  encodeFrame,
  PROTOCOL_VERSION,
  type PublishResult,
} from '../../protocol/frames.js';
import type { BrokerContext, ConnectedSession } from './ports.js';
import { handleAck, handleFlow, handleTouch } from './handlers/ack.js';
import { handleAuth } from './handlers/auth.js';
import { handlePeerFrame, peerGone } from './handlers/peer.js';
import { handlePublish } from './handlers/publish.js';
import { handleReplay } from './handlers/replay.js';
import { handleAddIds, handleRemoveIds, handleSubscribe, handleUnsubscribe } from './handlers/subscribe.js';
import type { Subscription } from '../queue/subscription.js';
import { DeliverFrames } from './deliver-frames.js';
import { Outbound, type OutboundLimits } from './outbound.js';
import { mirrorLinkBound } from '../mirror/feed.js';

/** 'failing': refused (a revoked key) while its sends were being stored: reads nothing more, answers those, then closes */
type SessionState = 'handshake' | 'authenticating' | 'ready' | 'failing' | 'closed';

/** what the server that owns the slots hears of a session (session/server.ts) */
export interface SessionHooks {
  /** the handshake succeeded: null to take a slot, or the refusal */
  admitted(): WhiskerError | null;
  /** closed: the server's sets forget it */
  gone(): void;
}

const HANDSHAKE_TIMEOUT_MS = 5_000;
const MAX_BATCH = 1_000;
/**
 * A deliver frame holds at most about this many bytes (or maxPayloadBytes when less): a client
 * reads a frame as one string, and V8 keeps a string over 128 KiB in its large-object space,
 * where toString and JSON.parse cost several times more per message (a listener took ~800
 * deliveries a frame, ~210 KB; docs/performance.md#the-socket-path)
 */
const DELIVER_FRAME_BYTES = 64 * 1024;
/** a client owing this many times maxBufferedBytesPerConnection (or maxPayloadBytes) is closed (docs/security.md#limits) */
const HARD_BOUND_FACTOR = 4;
/** `{"messageId":"…"},` around each id in a results frame */
const RESULT_OVERHEAD_BYTES = 16;
/** how long a connection closed for not reading may take to read its close frame */
const CLOSE_GRACE_MS = 1_000;
/**
 * how long a refused session waits for the store to answer the sends it read before the refusal:
 * only a store that answers nothing for that long ends it earlier. It was 2 s: at load 15-25 a
 * pipelining client's sends took longer than that to store, and those stored were told E_AUTH
 * (keys-revoke-sends.test.ts: 1,000 to 4,000 delivered in 4 runs of 26). 30 s is the client's default
 * sendTimeout: a send still unanswered then has failed E_NO_MASTER ("not known to be stored").
 */
const FAIL_DRAIN_MS = 30_000;

/**
 * Why this file is long: the one writer to a socket: handshake, flow control both ways,
 * coalesced deliveries and results; the byte accounting is in outbound.ts, handlers apart.
 *
 * One WebSocket connection, and the only writer to it. Nothing but the handshake is accepted
 * before auth; deliveries and results are coalesced into one frame each per tick.
 */
export class Session implements ConnectedSession {
  readonly node = randomBytes(6).toString('hex');
  readonly nonce: string;
  readonly subscriptions = new Map<number, Subscription>();
  readonly replays = new Set<number>();
  readonly ctx: BrokerContext;
  readonly #ws: WebSocket;
  readonly #hooks: SessionHooks;
  #state: SessionState = 'handshake';
  /** publish frames read and not answered yet (the store is writing them) */
  #publishing = 0;
  /** closes a 'failing' session, once its sends are answered */
  #failed: (() => void) | null = null;
  #clientName = '';
  /** a mirror broker's link: it follows, it does not publish or subscribe (docs/protocol.md#peers) */
  #isPeer = false;
  #key: KeyObject | null = null;
  #handshakeTimer: NodeJS.Timeout | null;
  /** deliveries encoded into their frames when queued, so the bytes not yet written are known (flow control) */
  readonly #deliveries = new DeliverFrames();
  #queuedBytes = 0;
  #results: PublishResult[] = [];
  #resultBytes = 0;
  readonly #outbound: Outbound;
  #flushScheduled = false;
  #writableWaiters: Array<() => void> = [];
  readonly #heartbeat: Heartbeat;

  constructor(ws: WebSocket, ctx: BrokerContext, nonce: string, hooks: SessionHooks) {
    this.#ws = ws;
    this.#hooks = hooks;
    this.ctx = ctx;
    this.nonce = nonce;
    this.#handshakeTimer = setTimeout(() => this.fail(new WhiskerError('E_AUTH', 'Handshake timeout', { reason: 'timeout' })), HANDSHAKE_TIMEOUT_MS);
    this.#outbound = new Outbound(ws, () => this.#bounds(), {
      drained: () => this.#resumeDeliveries(),
      overflowed: (unsent, limit) => this.#overflowed(unsent, limit),
    });
    ws.on('message', (data, isBinary) => this.#onMessage(data.toString(), isBinary));
    // a close the client did not ask for (1000 is the client's disconnect()) leaves its groups held
    ws.on('close', (code: number) => this.#onClose(code !== 1000));
    ws.on('error', () => this.#onClose(true));
    // liveness: a client or peer silent for heartbeatTimeout is gone (SPEC §9)
    this.#heartbeat = new Heartbeat(ws, ctx.policy.config.heartbeatTimeout * 1000, () => {
      ctx.log.info('connection silent past the heartbeat timeout: closed', { client: this.label, heartbeatTimeout: ctx.policy.config.heartbeatTimeout });
      this.#onClose(true);
    });
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
    const refusal = this.#hooks.admitted();
    if (refusal) {
      this.fail(refusal, 1013);
      return;
    }
    this.#clientName = clientName;
    this.#isPeer = isPeer;
    this.#key = key;
    this.#state = 'ready';
    if (this.#handshakeTimer) clearTimeout(this.#handshakeTimer);
    this.#handshakeTimer = null;
    const config = this.ctx.policy.config;
    const epoch = this.ctx.peers.epoch;
    // the cluster map first: the client knows its set when `welcome` makes it ready (SPEC §13, docs/protocol.md#cluster)
    if (!isPeer && this.ctx.cluster) for (const frame of this.ctx.cluster.mapFrames()) this.send(frame);
    this.send({ type: 'welcome', node: this.node, serviceId: config.serviceId, isMaster: this.ctx.router.isMaster, maxPayloadBytes: config.limits.maxPayloadBytes, ...(epoch !== undefined ? { epoch } : {}), features: ['touch', 'flow'] });
    if (isPeer) {
      this.send(this.ctx.peers.state());
      this.ctx.log.info('peer connected', { peer: this.label });
    } else {
      this.ctx.log.debug('client connected', { client: this.label });
    }
  }

  send(frame: BrokerFrame): void {
    if (this.#state === 'closed') return;
    this.#outbound.write(encodeFrame(frame));
  }

  /** a frame encoded by the caller (the mirror feed encodes one for every follower) */
  sendText(text: string): void {
    if (this.#state === 'closed') return;
    this.#outbound.write(text);
  }

  /** an error frame, then close: for protocol and auth failures (docs/protocol.md#errors) */
  fail(error: WhiskerError, closeCode = error.code === 'E_PROTOCOL' ? 1002 : 1008): void {
    if (this.#state === 'closed' || this.#state === 'failing') return;
    this.ctx.log.info('connection refused', { client: this.label, code: error.code, reason: error.message });
    if (this.#state === 'ready' && this.#publishing > 0) {
      // sends read before the refusal are being stored: they are answered before the error, so
      // the client is never told E_AUTH for a send that is stored and will be delivered; it
      // reads nothing more meanwhile, so nothing it sends from now on is stored (issue 28,
      // attacks-28 a10). At most FAIL_DRAIN_MS, as a store that hangs must not keep it open.
      this.#state = 'failing';
      for (const subscription of this.subscriptions.values()) this.ctx.router.unsubscribe(subscription);
      this.subscriptions.clear();
      this.#failed = () => this.#close(error, closeCode);
      setTimeout(() => this.#failed?.(), FAIL_DRAIN_MS).unref();
      return;
    }
    this.#close(error, closeCode);
  }

  #close(error: WhiskerError, closeCode: number): void {
    this.#failed = null;
    if (this.#state === 'closed') return;
    while (this.#results.length > 0) this.send({ type: 'results', results: this.#results.splice(0, MAX_BATCH) });
    this.send({ type: 'error', error: error.toJSON() });
    this.#ws.close(closeCode, error.code);
    this.#onClose();
  }

  get unsentBytes(): number {
    return this.#outbound.unsentBytes;
  }

  /** a mirror owed more than limits.maxMirrorLinkBytes (mirror/feed.ts): closed, it syncs again when back */
  dropLagging(unsentBytes: number, limitBytes: number): void {
    this.#overflowed(unsentBytes, limitBytes);
  }

  isWritable(): boolean {
    return this.#state === 'ready' && !this.#outbound.isFull;
  }

  whenWritable(): Promise<void> {
    if (this.#state === 'closed' || this.isWritable()) return Promise.resolve();
    return new Promise((resolve) => this.#writableWaiters.push(resolve));
  }

  sendAfterDeliveries(frame: BrokerFrame): void {
    this.#flush();
    this.send(frame);
  }

  #wakeWriters(): void {
    const waiters = this.#writableWaiters;
    this.#writableWaiters = [];
    for (const resolve of waiters) resolve();
  }

  revoked(sub: number, ids: readonly string[], error: WhiskerError): void {
    this.send({ type: 'revoked', sub, ids: [...ids], error: error.toJSON() });
  }

  queueDelivery(delivery: Delivery, dataJson?: string): void {
    // frames stay under maxPayloadBytes so a client's frame limit holds, and small enough to read cheaply
    const bytes = this.#deliveries.add(delivery, dataJson, Math.min(this.ctx.policy.config.limits.maxPayloadBytes, DELIVER_FRAME_BYTES), MAX_BATCH);
    this.#queuedBytes += bytes;
    this.#outbound.hold(bytes);
    this.#scheduleFlush();
  }

  /**
   * The answers a publish will need, counted from the moment it is read: a publisher that reads
   * no results is not read either (docs/security.md#limits). Returns what `queueResults` releases.
   */
  expectResults(messages: readonly { readonly messageId: string }[]): number {
    this.#publishing++;
    let bytes = 0;
    for (const m of messages) bytes += m.messageId.length + RESULT_OVERHEAD_BYTES;
    this.#outbound.hold(bytes);
    return bytes;
  }

  queueResults(results: PublishResult[], expectedBytes = 0): void {
    this.#publishing--;
    this.#outbound.release(expectedBytes);
    if (this.#state === 'closed') return;
    if (this.#state === 'failing') {
      this.#results.push(...results);
      if (this.#publishing === 0) this.#failed?.();
      return;
    }
    let bytes = 0;
    for (const result of results) {
      this.#results.push(result);
      bytes += result.error ? JSON.stringify(result).length : result.messageId.length + RESULT_OVERHEAD_BYTES;
    }
    this.#resultBytes += bytes;
    this.#outbound.hold(bytes);
    this.#scheduleFlush();
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
    this.#outbound.release(this.#resultBytes + this.#queuedBytes);
    this.#resultBytes = 0;
    while (this.#results.length > 0) this.send({ type: 'results', results: this.#results.splice(0, MAX_BATCH) });
    if (this.#deliveries.isEmpty) return;
    this.#queuedBytes = 0;
    // a write that completes proves the client reads: a slow one is alive, its ping may wait behind
    for (const frame of this.#deliveries.take()) this.#outbound.write(frame, this.#heard);
  }

  readonly #heard = (): void => this.#heartbeat.heard();

  #bounds(): OutboundLimits {
    const { limits } = this.ctx.policy.config;
    const { maxBufferedBytesPerConnection: softBytes, maxPayloadBytes } = limits;
    // a mirror's link is not paused (its pongs and historyAcks must be read); its sync is paced
    // by the soft bound, and past maxMirrorLinkBytes it is closed: it syncs again when back
    if (this.#isPeer) return { softBytes, hardBytes: mirrorLinkBound(limits), pausesReading: false };
    // the answers to one frame may exceed the soft bound by a frame's worth
    return { softBytes, hardBytes: HARD_BOUND_FACTOR * Math.max(softBytes, maxPayloadBytes), pausesReading: true };
  }

  #resumeDeliveries(): void {
    if (this.#state !== 'ready') return;
    for (const subscription of this.subscriptions.values()) this.ctx.router.resume(subscription);
    this.#wakeWriters();
  }

  /** it reads nothing while it is owed more than the hard bound: closed, so it costs no more */
  #overflowed(unsentBytes: number, limitBytes: number): void {
    if (this.#state === 'closed') return;
    if (this.#isPeer) {
      this.ctx.log.warn('mirror link closed: the mirror does not keep up with what this master sends it (limits.maxMirrorLinkBytes); it syncs again when it reconnects', { peer: this.#clientName, code: 'E_LIMIT', unsentBytes, limitBytes });
    } else {
      this.ctx.log.warn('connection closed: it does not read what it is sent', { client: this.label, code: 'E_LIMIT', unsentBytes, limitBytes });
    }
    this.#ws.close(1008, 'E_LIMIT: not reading');
    setTimeout(() => this.#ws.terminate(), CLOSE_GRACE_MS).unref();
    this.#onClose(true);
  }

  #onMessage(text: string, isBinary: boolean): void {
    if (this.#state === 'closed' || this.#state === 'failing') return;
    if (!this.#isPeer) this.ctx.peers.judgeFence();
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
      case 'replay':
        handleReplay(this, frame);
        return;
      case 'ack':
        handleAck(this, frame);
        return;
      case 'touch':
        handleTouch(this, frame);
        return;
      case 'flow':
        handleFlow(this, frame);
        return;
      case 'peerState':
      case 'follow':
      case 'historyAck':
      case 'offer':
      case 'keys':
        this.fail(protocolError(`${frame.type} is a frame between brokers`));
        return;
      default: {
        const never: never = frame;
        this.fail(protocolError(`unhandled frame ${String((never as { type: unknown }).type)}`));
      }
    }
  }

  /** `lost`: the link was lost rather than closed on purpose: the groups left empty are held (groupHold) */
  #onClose(lost = false): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (this.#handshakeTimer) clearTimeout(this.#handshakeTimer);
    this.#handshakeTimer = null;
    for (const subscription of this.subscriptions.values()) {
      if (lost) this.ctx.router.connectionLost(subscription);
      else this.ctx.router.unsubscribe(subscription);
    }
    this.subscriptions.clear();
    this.#wakeWriters();
    this.#deliveries.clear();
    this.#queuedBytes = 0;
    this.#results = [];
    this.#resultBytes = 0;
    this.#outbound.clear();
    this.#hooks.gone();
    if (this.#isPeer) {
      peerGone(this);
      this.ctx.log.info('peer disconnected', { peer: this.label });
    } else {
      this.ctx.log.debug('client disconnected', { client: this.label });
    }
  }
}
