// Why this file is long: one broker link owns its whole life (dial, back-off, handshake, batching,
// close after the acks are written, holding off a refused key); split along those seams next.
import { WebSocket } from 'ws';
import { errorFromPayload, protocolError, WhiskerError } from '../protocol/errors.js';
import {
  type Ack,
  type BrokerFrame,
  type ClientFrame,
  decodeBrokerFrame,
  encodeFrame,
  PROTOCOL_VERSION,
  type PublishedMessage,
  type ReplyFrame,
} from '../protocol/frames.js';
import { DEFAULT_HEARTBEAT_TIMEOUT_MS, Heartbeat } from './heartbeat.js';
import type { HostTarget } from './hosts.js';
import { type ClientKeys, signHandshake } from './keys.js';

export type ConnectionStatus = 'idle' | 'connecting' | 'ready' | 'closed';

export interface ConnectionOwner {
  readonly clientId: string;
  readonly keys: ClientKeys;
  /** a mirror broker's link to a peer (docs/protocol.md#peers) */
  readonly role?: 'peer';
  /** `cert` and `key`: a client certificate, for a broker that asks for one (mutual TLS) */
  readonly tls: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer; rejectUnauthorized?: boolean } | undefined;
  /** a link silent this long is closed (src/link/heartbeat.ts); read at every dial */
  readonly heartbeatTimeoutMs?: number;
  /** `authRetryMs`: the wait after a refusal of the key itself (`revoked`, `other-key`); without it, the back-off */
  readonly reconnect: { initialMs: number; maxMs: number; factor: number; authRetryMs?: number };
  onReady(connection: Connection): void;
  /** the socket was lost or refused; `error` is the broker's refusal, when there was one */
  onDown(connection: Connection, error: WhiskerError | null): void;
  /** `bytes`: the frame's size as read (a mirror's link bounds what it has not applied yet) */
  onFrame(connection: Connection, frame: BrokerFrame, bytes: number): void;
}

const STABLE_MS = 60_000;
/**
 * a broker that was connected within RECENT_MS is redialled at least every RECENT_CAP_MS: one
 * that restarts is reached within ~2 s of accepting again (SPEC §3, docs/client.md#connect)
 */
const RECENT_MS = 5 * 60_000;
const RECENT_CAP_MS = 1_500;
const TLS_REFUSALS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const MAX_BATCH = 1_000;
/**
 * A publish frame holds at most about this many bytes of messages (or maxPayloadBytes' 90% when
 * less): the broker reads a frame as one string, and V8 makes a string over 128 KiB (1,000
 * ~100-byte messages are ~244 KB) in its large-object space, where toString and JSON.parse cost
 * 4-10x more per message than in frames under it (docs/performance.md#the-socket-path)
 */
const PUBLISH_FRAME_BYTES = 64 * 1024;
/** E_AUTH reasons no retry can fix: the key was revoked, or the name has another one (SPEC §4) */
const FINAL_AUTH_REASONS = new Set(['revoked', 'other-key']);

/** the refusal's reason when it is one no redial can fix, else null */
export function finalAuthReason(error: WhiskerError | null): string | null {
  if (error?.code !== 'E_AUTH') return null;
  const reason = (error.details as { reason?: unknown } | undefined)?.reason;
  return typeof reason === 'string' && FINAL_AUTH_REASONS.has(reason) ? reason : null;
}

/**
 * One broker: dial, handshake with a fresh token, batch outgoing frames per tick, and
 * redial with back-off until closed (docs/protocol.md#handshake). The client library uses one
 * per host; a broker uses one per peer (src/broker/mirror/peer-link.ts).
 */
export class Connection {
  readonly target: HostTarget;
  readonly #owner: ConnectionOwner;
  #ws: WebSocket | null = null;
  #status: ConnectionStatus = 'idle';
  #serviceId: string;
  #isMaster = false;
  /** the election epoch the broker announced last (docs/protocol.md#epochs), if it runs one */
  #epoch: number | undefined;
  #maxPayloadBytes = 1_048_576;
  /** optional frames the broker announced in `welcome` (`touch`) */
  #features: readonly string[] = [];
  #attempt = 0;
  #retryTimer: NodeJS.Timeout | null = null;
  /** the next dial waits out `authRetryMs`: the broker refused the key itself */
  #heldByRefusal = false;
  #readySince = 0;
  /** when this connection was last lost while ready (ms epoch); 0: never ready */
  #lostAt = 0;
  #nextReq = 1;
  readonly #requests = new Map<number, (reply: ReplyFrame | null) => void>();
  #publishes: PublishedMessage[] = [];
  #publishBytes = 0;
  #acks: Ack[] = [];
  #flushScheduled = false;
  #heartbeat: Heartbeat | null = null;
  /** the owner asked not to read (a mirror's backlog): applies to every socket until resumed */
  #readingPaused = false;

  constructor(target: HostTarget, owner: ConnectionOwner) {
    this.target = target;
    this.#owner = owner;
    this.#serviceId = target.serviceId ?? target.spec;
  }

  get status(): ConnectionStatus {
    return this.#status;
  }

  get isReady(): boolean {
    return this.#status === 'ready';
  }

  get epoch(): number | undefined {
    return this.#epoch;
  }

  get isMaster(): boolean {
    return this.#status === 'ready' && this.#isMaster;
  }

  get serviceId(): string {
    return this.#serviceId;
  }

  get maxPayloadBytes(): number {
    return this.#maxPayloadBytes;
  }

  /** the broker understands this optional frame (docs/protocol.md#handshake, `features`) */
  supports(feature: string): boolean {
    return this.#features.includes(feature);
  }

  start(): void {
    if (this.#status !== 'idle') return;
    this.#dial();
  }

  /** held after a refusal of the key: dial now (a new connect(), docs/client.md#errors) */
  retryNow(): boolean {
    if (!this.#heldByRefusal || this.#status !== 'connecting' || !this.#retryTimer) return false;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
    this.#heldByRefusal = false;
    this.#dial();
    return true;
  }

  /**
   * Acks and nacks already made are written first, the close follows on their write callback
   * (SPEC §3: a done() just before disconnect() is never lost); batched publishes are not.
   */
  close(): Promise<void> {
    const acks = this.#status === 'ready' ? this.#acks : [];
    this.#status = 'closed';
    this.#publishes = [];
    this.#publishBytes = 0;
    this.#acks = [];
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#failRequests();
    const ws = this.#ws;
    this.#ws = null;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      ws.once('close', () => resolve());
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else if (ws.readyState === WebSocket.OPEN && acks.length > 0) ws.send(encodeFrame({ type: 'ack', acks }), () => ws.close(1000, 'client disconnect'));
      else ws.close(1000, 'client disconnect');
    });
  }

  /**
   * Backpressure (a slave's backlog from its master, docs/security.md#limits): the socket is not
   * read, so the broker's writes wait in TCP, then in its own bound; the heartbeat blames nobody
   * for the silence meanwhile. A new socket (a redial) is read: its handshake must be, and the
   * owner pauses it again at its next frame if it still has to.
   */
  pauseReading(): void {
    if (this.#readingPaused) return;
    this.#readingPaused = true;
    this.#ws?.pause();
    this.#heartbeat?.hold(true);
  }

  resumeReading(): void {
    if (!this.#readingPaused) return;
    this.#readingPaused = false;
    this.#ws?.resume();
    this.#heartbeat?.hold(false);
  }

  get readingPaused(): boolean {
    return this.#readingPaused;
  }

  /** frames leave in the order they were made: batched publishes and acks go first */
  send(frame: ClientFrame): void {
    if (this.#publishes.length > 0 || this.#acks.length > 0) this.#flush();
    this.#write(frame);
  }

  /**
   * Written at once, ahead of the publishes and acks collected this turn (they follow at the
   * flush): a `flow` that lowers a limit is read before the acks that free the slots.
   */
  sendAhead(frame: ClientFrame): void {
    this.#write(frame);
  }

  #write(frame: ClientFrame): void {
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.send(encodeFrame(frame));
  }

  /** a frame with a `req`, answered by one `reply`; null when the connection went down first */
  request(build: (req: number) => ClientFrame, onReply: (reply: ReplyFrame | null) => void): void {
    if (!this.isReady) {
      onReply(null);
      return;
    }
    const req = this.#nextReq++;
    this.#requests.set(req, onReply);
    this.send(build(req));
  }

  queuePublish(message: PublishedMessage, bytes: number): void {
    const frameBytes = Math.min(this.#maxPayloadBytes * 0.9, PUBLISH_FRAME_BYTES);
    if ((this.#publishBytes + bytes > frameBytes && this.#publishes.length > 0) || this.#publishes.length >= MAX_BATCH) this.#flush();
    this.#publishes.push(message);
    this.#publishBytes += bytes;
    this.#scheduleFlush();
  }

  queueAck(ack: Ack): void {
    this.#acks.push(ack);
    if (this.#acks.length >= MAX_BATCH) this.#flush();
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (!this.isReady) {
      this.#publishes = [];
      this.#publishBytes = 0;
      this.#acks = [];
      return;
    }
    if (this.#publishes.length > 0) {
      const messages = this.#publishes;
      this.#publishes = [];
      this.#publishBytes = 0;
      this.#write({ type: 'publish', messages });
    }
    if (this.#acks.length > 0) {
      const acks = this.#acks;
      this.#acks = [];
      this.#write({ type: 'ack', acks });
    }
  }

  #dial(): void {
    this.#status = 'connecting';
    const tls = this.#owner.tls;
    const ws = new WebSocket(this.target.url, {
      perMessageDeflate: false,
      handshakeTimeout: 10_000,
      ...(tls?.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls?.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls?.key !== undefined ? { key: tls.key } : {}),
      ...(tls?.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
    });
    this.#ws = ws;
    let refusal: WhiskerError | null = null;
    // the heartbeat terminates a silent socket; its 'close' below redials as for any loss
    ws.once('open', () => {
      const heartbeat = new Heartbeat(ws, this.#owner.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS, () => undefined);
      if (this.#ws === ws) this.#heartbeat = heartbeat;
    });
    ws.on('message', (data) => {
      let frame: BrokerFrame;
      const text = data.toString();
      try {
        frame = decodeBrokerFrame(text);
      } catch (error) {
        // the decoder's reason ("message without data"...) is what an operator needs to see
        refusal = protocolError(`broker sent a malformed frame (${(error as Error).message})`);
        ws.terminate();
        return;
      }
      if (frame.type === 'error') {
        refusal = errorFromPayload(frame.error);
        return;
      }
      this.#onFrame(ws, frame, text.length);
    });
    ws.on('error', (error: NodeJS.ErrnoException) => {
      // an untrusted certificate is a refusal, not a network fault to wait out (docs/security.md#tls)
      if (error.code && TLS_REFUSALS.has(error.code)) refusal = new WhiskerError('E_AUTH', `Broker certificate not trusted (${error.code})`);
    });
    ws.on('close', (code) => {
      if (this.#ws !== ws && this.#status !== 'closed') return;
      if (!refusal && code === 1009) refusal = new WhiskerError('E_TOO_LARGE', 'Frame too large for the broker');
      this.#down(refusal);
    });
  }

  #onFrame(ws: WebSocket, frame: BrokerFrame, bytes: number): void {
    switch (frame.type) {
      case 'hello':
        this.#serviceId = this.target.serviceId ?? frame.serviceId;
        signHandshake(this.#owner.keys, this.#owner.clientId, this.#serviceId, frame.nonce).then(
          (token) => {
            if (this.#ws !== ws) return;
            this.send({
              type: 'auth',
              protocol: PROTOCOL_VERSION,
              token,
              publicKey: this.#owner.keys.publicKeyPem,
              ...(this.target.socketToken ? { socketToken: this.target.socketToken } : {}),
              ...(this.#owner.role ? { role: this.#owner.role } : {}),
            });
          },
          () => ws.terminate(),
        );
        return;
      case 'welcome':
        this.#status = 'ready';
        this.#isMaster = frame.isMaster;
        this.#epoch = frame.epoch;
        this.#maxPayloadBytes = frame.maxPayloadBytes;
        this.#features = frame.features ?? [];
        this.#readySince = Date.now();
        this.#owner.onReady(this);
        return;
      case 'reply': {
        const onReply = this.#requests.get(frame.req);
        this.#requests.delete(frame.req);
        onReply?.(frame);
        return;
      }
      case 'role':
        this.#isMaster = frame.isMaster;
        if (frame.epoch !== undefined) this.#epoch = frame.epoch;
        this.#owner.onFrame(this, frame, bytes);
        return;
      case 'error':
      case 'results':
      case 'deliver':
      case 'revoked':
      case 'replayEnd':
      case 'peerState':
      case 'sync':
      case 'history':
      case 'feed':
      case 'keys':
      case 'reservations':
      case 'cluster':
        this.#owner.onFrame(this, frame, bytes);
        return;
      default: {
        const never: never = frame;
        void never;
      }
    }
  }

  #failRequests(): void {
    const pending = [...this.#requests.values()];
    this.#requests.clear();
    for (const onReply of pending) onReply(null);
  }

  #down(refusal: WhiskerError | null): void {
    const wasClosed = this.#status === 'closed';
    this.#ws = null;
    this.#heartbeat = null;
    this.#readingPaused = false;
    this.#isMaster = false;
    this.#publishes = [];
    this.#acks = [];
    if (!wasClosed) this.#status = 'connecting';
    this.#failRequests();
    this.#owner.onDown(this, refusal);
    if (wasClosed) return;
    const now = Date.now();
    if (this.#readySince && now - this.#readySince > STABLE_MS) this.#attempt = 0;
    if (this.#readySince) this.#lostAt = now;
    this.#readySince = 0;
    const { initialMs, maxMs, factor, authRetryMs } = this.#owner.reconnect;
    // a refusal (E_AUTH...) backs off as usual: only a broker that cannot be reached is redialled soon
    const cap = refusal === null && now - this.#lostAt < RECENT_MS ? Math.min(maxMs, RECENT_CAP_MS) : maxMs;
    const base = Math.min(cap, initialMs * factor ** this.#attempt++);
    this.#heldByRefusal = authRetryMs !== undefined && finalAuthReason(refusal) !== null;
    const delay = this.#heldByRefusal ? authRetryMs! : base / 2 + Math.random() * (base / 2);
    // not unref'd: a consumer whose brokers are all down must stay alive to reconnect
    this.#retryTimer = setTimeout(() => {
      this.#heldByRefusal = false;
      this.#dial();
    }, delay);
  }
}
