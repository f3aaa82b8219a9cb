import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { WhiskerError } from '../../protocol/errors.js';
import { encodeFrame } from '../../protocol/frames.js';
import type { Config } from '../../config/types.js';
import { makeNonce } from './keys.js';
import type { Lifecycle } from '../lifecycle.js';
import type { BrokerContext, ConnectedSession } from './ports.js';
import { Session } from './session.js';

const PING_INTERVAL_MS = 30_000;

/** The listening socket: HTTP(S) upgrade -> WebSocket -> one Session per connection. */
export class SocketServer {
  readonly #ctx: BrokerContext;
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #lifecycle: Lifecycle;
  readonly #sessions = new Set<Session>();
  #pinger: NodeJS.Timeout | null = null;

  constructor(config: Config, ctx: BrokerContext, lifecycle: Lifecycle) {
    this.#ctx = ctx;
    this.#lifecycle = lifecycle;
    const tls = config.socketServer.tls;
    this.#http = tls
      ? createHttpsServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key), ...(tls.ca ? { ca: readFileSync(tls.ca) } : {}) })
      : createHttpServer();
    this.#http.on('request', (_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('Whisker speaks WebSocket here\n');
    });
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: config.limits.maxPayloadBytes, perMessageDeflate: false });
    this.#http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.#upgrade(req, socket, head));
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#http.once('error', reject);
      this.#http.listen(port, host, () => {
        this.#http.off('error', reject);
        resolve();
      });
    });
    this.#pinger = setInterval(() => {
      for (const session of this.#sessions) session.ping();
    }, PING_INTERVAL_MS);
    this.#pinger.unref();
    return this.#http.address() as AddressInfo;
  }

  /** every open connection, handshakes included */
  get sessions(): ReadonlySet<ConnectedSession> {
    return this.#sessions;
  }

  async close(): Promise<void> {
    if (this.#pinger) clearInterval(this.#pinger);
    for (const session of [...this.#sessions]) session.close();
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    this.#http.closeAllConnections?.();
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    this.#wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      const limit = this.#ctx.policy.config.limits.maxConnections;
      // soft-stop: sockets that open from now on are refused with E_STOPPING
      if (!this.#lifecycle.isRunning) return refuse(ws, new WhiskerError('E_STOPPING', 'Broker is stopping'));
      if (this.#sessions.size >= limit) return refuse(ws, new WhiskerError('E_LIMIT', `Too many connections (limit ${limit})`));
      this.#sessions.add(new Session(ws, this.#ctx, makeNonce(), (session) => this.#sessions.delete(session)));
    });
  }
}

function refuse(ws: WebSocket, error: WhiskerError): void {
  ws.send(encodeFrame({ type: 'error', error: error.toJSON() }));
  ws.close(1013, error.code);
}
