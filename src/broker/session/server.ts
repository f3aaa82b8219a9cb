import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { WhiskerError } from '../../protocol/errors.js';
import { encodeFrame } from '../../protocol/frames.js';
import { portError } from '../../config/ports.js';
import type { Config } from '../../config/types.js';
import { makeNonce } from './keys.js';
import type { Lifecycle } from '../lifecycle.js';
import type { BrokerContext, ConnectedSession } from './ports.js';
import { Session } from './session.js';
import { type Stranger, Strangers } from './strangers.js';

/** a stranger still before its upgrade: it is destroyed when its timer fires */
interface Arrival extends Stranger {
  timer: NodeJS.Timeout | null;
}

/**
 * The listening socket: TCP -> HTTP(S) upgrade -> WebSocket -> one Session per connection.
 * Until it authenticates, a connection counts in the strangers' budget, not in maxConnections.
 */
export class SocketServer {
  readonly #ctx: BrokerContext;
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #lifecycle: Lifecycle;
  readonly #sessions = new Set<Session>();
  readonly #strangers = new Strangers();
  /** TCP sockets not upgraded yet, by `address|port` (the same for a TLS socket and its TCP one) */
  readonly #arrivals = new Map<string, Arrival>();
  /** authenticated sessions: what limits.maxConnections bounds */
  readonly #members = new Set<Session>();

  constructor(config: Config, ctx: BrokerContext, lifecycle: Lifecycle) {
    this.#ctx = ctx;
    this.#lifecycle = lifecycle;
    const tls = config.socketServer.tls;
    this.#http = tls
      ? createHttpsServer({
          cert: readFileSync(tls.cert),
          key: readFileSync(tls.key),
          ...(tls.ca ? { ca: readFileSync(tls.ca) } : {}),
          // mutual TLS: a socket without a certificate of `ca` never reaches the upgrade
          ...(tls.requestCert ? { requestCert: true, rejectUnauthorized: true } : {}),
        })
      : createHttpServer();
    this.#http.on('request', (_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('Whisker speaks WebSocket here\n');
    });
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: config.limits.maxPayloadBytes, perMessageDeflate: false });
    this.#http.on('connection', (socket: Socket) => this.#accepted(socket));
    this.#http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.#upgrade(req, socket, head));
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      const failed = (error: NodeJS.ErrnoException) => reject(portError('socketServer.port', host, port, error));
      this.#http.once('error', failed);
      this.#http.listen(port, host, () => {
        this.#http.off('error', failed);
        resolve();
      });
    });
    return this.#http.address() as AddressInfo;
  }

  /** every open connection, handshakes included */
  get sessions(): ReadonlySet<ConnectedSession> {
    return this.#sessions;
  }

  async close(): Promise<void> {
    for (const session of [...this.#sessions]) session.close();
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    this.#http.closeAllConnections?.();
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
  }

  /** a TCP socket: counted as a stranger, and destroyed unless it upgrades within upgradeTimeout */
  #accepted(socket: Socket): void {
    const { limits } = this.#ctx.policy.config;
    const key = `${socket.remoteAddress}|${socket.remotePort}`;
    const arrival: Arrival = { address: socket.remoteAddress ?? '?', evict: () => socket.destroy(), timer: null };
    arrival.timer = setTimeout(() => socket.destroy(), limits.upgradeTimeout * 1000);
    arrival.timer.unref();
    this.#strangers.admit(arrival, { total: limits.maxUnauthenticatedConnections, perAddress: limits.maxUnauthenticatedPerAddress });
    this.#arrivals.set(key, arrival);
    socket.once('close', () => {
      if (arrival.timer) clearTimeout(arrival.timer);
      this.#strangers.settle(arrival);
      if (this.#arrivals.get(key) === arrival) this.#arrivals.delete(key);
    });
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const key = `${req.socket.remoteAddress}|${req.socket.remotePort}`;
    const arrival = this.#arrivals.get(key);
    this.#arrivals.delete(key);
    if (arrival?.timer) clearTimeout(arrival.timer);
    if (arrival) arrival.timer = null;
    this.#wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      const limit = this.#ctx.policy.config.limits.maxConnections;
      // soft-stop: sockets that open from now on are refused with E_STOPPING
      if (!this.#lifecycle.isRunning) return refuse(ws, new WhiskerError('E_STOPPING', 'Broker is stopping'));
      if (this.#members.size >= limit) return refuse(ws, new WhiskerError('E_LIMIT', `Too many connections (limit ${limit})`));
      const session: Session = new Session(ws, this.#ctx, makeNonce(), {
        admitted: () => {
          if (arrival) this.#strangers.settle(arrival);
          const slots = this.#ctx.policy.config.limits.maxConnections;
          if (this.#members.size >= slots) return new WhiskerError('E_LIMIT', `Too many connections (limit ${slots})`);
          this.#members.add(session);
          return null;
        },
        gone: () => {
          this.#sessions.delete(session);
          this.#members.delete(session);
          if (arrival) this.#strangers.settle(arrival);
        },
      });
      // the oldest stranger makes room for a newer one (docs/security.md#limits)
      if (arrival) arrival.evict = () => session.fail(new WhiskerError('E_LIMIT', 'Too many unauthenticated connections'), 1013);
      this.#sessions.add(session);
    });
  }
}

function refuse(ws: WebSocket, error: WhiskerError): void {
  ws.send(encodeFrame({ type: 'error', error: error.toJSON() }));
  ws.close(1013, error.code);
}
