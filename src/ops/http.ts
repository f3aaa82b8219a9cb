import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { sameSecret } from '../runtime/secret.js';
import { portError } from '../config/ports.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../runtime/logger.js';
import { HandlerRates, type ManagedBroker, subscriberCounts, uptimeSeconds } from './api.js';
import { clusterStatus } from './cluster.js';
import { RateHistory } from './history.js';
import type { InspectedBroker } from './messages.js';
import type { BrokerMetrics } from './metrics.js';
import { RateWindow } from './rates.js';
import { getRoutes, json, postRoutes, queueRoute, type Reply, type Route, type RouteContext } from './routes.js';
import { RenderCache } from './render-cache.js';

export type ManagementConfig = NonNullable<Config['management']>;

export interface ManagementOptions {
  metrics: BrokerMetrics;
  log: Logger;
  now?: () => number;
  /** how often queue counters are sampled for rates */
  sampleIntervalMs?: number;
  /** the port bound already by bindManagement (before the broker claims anything) */
  bound?: Server;
}

export interface ManagementServer {
  readonly host: string;
  /** the port actually bound (useful with port 0) */
  readonly port: number;
  close(): Promise<void>;
}

/** a grey dot: what the dashboard's tab shows */
const FAVICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#778"/></svg>';
/** answers not yet read by their client hold at most this much; past it, data is 503 (docs/management.md) */
const MAX_UNREAD_BYTES = 16 * 1_048_576;
/** a connection that takes nothing for this long is closed, answer or not */
const IDLE_TIMEOUT_MS = 10_000;
const notFound = (): Reply => json(404, { error: 'not found' });
/** a POST body larger than this is refused: the actions take a queue and some message ids */
const MAX_BODY_BYTES = 64 * 1024;

/** headers on every answer: nothing is cached, sniffed, framed or sent a referrer */
const COMMON_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
};

/**
 * The management HTTP surface (SPEC §11, docs/management.md): metrics, health, a read-only
 * JSON API and the dashboard. GET, and POST for the dashboard's dead-letter actions (only
 * with a token); a bearer token on everything but the static page when `management.token` is set.
 */
export async function startManagement(broker: ManagedBroker & InspectedBroker, config: ManagementConfig, options: ManagementOptions): Promise<ManagementServer> {
  const { metrics, log } = options;
  const now = options.now ?? Date.now;
  const rates = new RateWindow();
  const history = new RateHistory();
  const sample = () => {
    rates.record(now(), broker.queues.values());
    history.record(now(), broker.queues.values());
  };
  metrics.bind({
    queues: () => broker.queues.values(),
    subscriberCounts: () => subscriberCounts(broker),
    peers: () => broker.peers?.status() ?? [],
    now,
    get connections() { return broker.sessions.size; },
    get isMaster() { return broker.isMaster; },
    get reloadFailures() { return broker.reloadFailures ?? 0; },
    get isStoreHealthy() { return broker.isStoreHealthy; },
    get uptimeSeconds() { return uptimeSeconds(broker, now()); },
    get conflictingMasters() { return broker.peers?.conflict?.masters.length ?? 0; },
    get peersConnected() { return broker.peers?.status().filter((p) => p.connected).length ?? 0; },
    get election() { return broker.election ?? null; },
    get offeredToMaster() { return broker.peers?.offeredToMaster ?? 0; },
    get settledBySync() { return broker.peers?.settledBySync ?? 0; },
    histories: () => broker.history?.list() ?? [],
    cluster: () => clusterStatus(broker),
    get replays() { return { served: broker.history?.replays ?? 0, inProgress: broker.history?.replaying ?? 0, messages: broker.history?.replayedMessages ?? 0 }; },
  }, config);

  // the whole block needs a restart (docs/operations.md#what-a-reload-applies)
  const expected = config.token;
  const handlerRates = new HandlerRates();
  const ctx: RouteContext = { broker, metrics, rates, history, now, actions: expected !== undefined };
  const gets = getRoutes(ctx);
  const posts = postRoutes(ctx);

  // a kept render is not served once the role or the epoch changed (render-cache.ts)
  const rendered = new RenderCache(() => metrics.text(), undefined, () => `${broker.isMaster}:${broker.election?.epoch ?? 0}`);
  const unread = new UnreadAnswers();
  const busy = (): Reply => ({ ...json(503, { error: 'busy: too many answers not read yet, retry' }), headers: { 'Retry-After': '1' } });
  /** data views make new bodies: refused while unread answers hold too much (a fresh render costs nothing) */
  const guarded = (make: Route): Route => (url, body) => (unread.bytes >= MAX_UNREAD_BYTES ? busy() : make(url, body));
  const metricsReply = async (): Promise<Reply> => {
    const fresh = rendered.fresh;
    if (!fresh && unread.bytes >= MAX_UNREAD_BYTES) return busy();
    return { status: 200, type: metrics.contentType, body: fresh ?? (await rendered.get()) };
  };
  for (const path of Object.keys(gets)) if (path.startsWith('/api/')) gets[path] = guarded(gets[path]!);
  gets['/metrics'] = metricsReply;
  gets['/statistics'] = metricsReply;
  // browsers ask for it on every page load: a tiny icon, not a 404 in the console
  gets['/favicon.ico'] = () => ({ status: 200, type: 'image/svg+xml', body: FAVICON_SVG, headers: { 'Cache-Control': 'max-age=86400' } });

  async function answer(req: IncomingMessage): Promise<Reply> {
    if (!hostAllowed(req.headers.host, config.host, expected !== undefined)) return json(403, { error: 'unexpected Host header' });
    // concatenated, not resolved: `//other/x` stays a path here, it does not name a host
    const target = req.url ?? '/';
    if (!target.startsWith('/')) return json(400, { error: 'bad request target' });
    const url = new URL(`http://management.invalid${target}`);
    const path = url.pathname;
    const queue = Object.hasOwn(gets, path) ? null : queueRoute(ctx, path, handlerRates);
    const get = Object.hasOwn(gets, path) ? gets[path]! : queue ? guarded(queue) : null;
    const post = Object.hasOwn(posts, path) ? posts[path]! : null;
    if (!get && !post) return notFound();
    const handler = req.method === 'GET' ? get : req.method === 'POST' ? post : null;
    if (!handler) return { ...json(405, { error: 'method not allowed' }), headers: { Allow: get ? 'GET' : 'POST' } };
    // the page (and its icon) hold no data; what it fetches needs the token
    if (path !== '/' && path !== '/favicon.ico' && expected !== undefined && !sameSecret(bearer(req.headers.authorization), expected)) {
      return { ...json(401, { error: 'bearer token required' }), headers: { 'WWW-Authenticate': 'Bearer realm="whisker"' } };
    }
    if (req.method !== 'POST') return handler(url, undefined);
    // actions change the broker: never without a token (a page elsewhere cannot send one)
    if (expected === undefined) return json(403, { error: 'actions need management.token in the config' });
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return json(415, { error: 'a JSON body (Content-Type: application/json) is expected' });
    const body = await readBody(req);
    if (body === undefined) return json(400, { error: `the body is not a JSON object under ${MAX_BODY_BYTES} bytes` });
    log.info('management action', { path, queue: (body as { queue?: unknown }).queue });
    return handler(url, body);
  }

  const server: Server = options.bound ?? (await bindManagement(config));
  server.removeAllListeners('request'); // bindManagement's 'starting' answer
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    answer(req).then(
      // a request body left unread: the connection is not reused
      (reply) => send(res, reply, req.method !== 'GET' && !req.readableEnded, unread),
      (error: unknown) => {
        log.error('management request failed', { path: req.url, error: (error as Error).message });
        send(res, json(500, { error: 'internal error' }), true, unread);
      },
    );
  });
  const address = server.address() as AddressInfo;
  server.on('error', (error) => log.error('management server error', { error: error.message }));
  const sampler = setInterval(sample, options.sampleIntervalMs ?? 1000);
  sampler.unref();
  sample();
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  log.info('management listening', { url, token: expected !== undefined });
  if (expected === undefined) {
    // the data views (queues, ids, client names) are then anyone's who can reach the port
    const who = isLoopback(address.address) ? 'every local user of this host' : 'everyone who can reach this address';
    log.warn(`management HTTP has no token: ${who} can read its metrics and API (set management.token)`, { url });
  }

  let closed: Promise<void> | null = null;
  return {
    host: address.address,
    port: address.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        clearInterval(sampler);
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/**
 * The management port, bound before the broker claims a role, so a port in use stops it with
 * nothing announced (the error names the key). Until the broker is up every request is answered
 * 503 `starting`: a probe polling from the first moment never hangs on a request nobody serves.
 */
export async function bindManagement(config: Pick<ManagementConfig, 'host' | 'port'>): Promise<Server> {
  const server = createServer((_req, res) => {
    res.writeHead(503, { ...COMMON_HEADERS, 'Content-Type': 'application/json; charset=utf-8', 'Retry-After': '1' });
    res.end(JSON.stringify({ status: 'starting', reason: 'the broker is starting' }));
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  server.timeout = IDLE_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(portError('management.port', config.host, config.port, error)));
    server.listen(config.port, config.host, () => {
      server.removeAllListeners('error');
      resolve();
    });
  });
  return server;
}

function send(res: ServerResponse, reply: Reply, closeAfter: boolean, unread: UnreadAnswers): void {
  res.writeHead(reply.status, { ...COMMON_HEADERS, 'Content-Type': reply.type, ...reply.headers, ...(closeAfter ? { Connection: 'close' } : {}) });
  unread.track(res, reply.body);
  res.end(reply.body);
}

/** the bodies of answers still being written, each counted once however many sockets share it */
class UnreadAnswers {
  readonly #bodies = new Map<string | Buffer, number>();
  #bytes = 0;

  get bytes(): number {
    return this.#bytes;
  }

  track(res: ServerResponse, body: string | Buffer): void {
    const sharing = this.#bodies.get(body) ?? 0;
    if (sharing === 0) this.#bytes += body.length;
    this.#bodies.set(body, sharing + 1);
    res.once('close', () => {
      const left = this.#bodies.get(body)! - 1;
      if (left > 0) return void this.#bodies.set(body, left);
      this.#bodies.delete(body);
      this.#bytes -= body.length;
    });
  }
}

function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}

/** the JSON object of a POST, or undefined when it is not one or too large */
async function readBody(req: IncomingMessage): Promise<object | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Without a token, a page on another site could read this server through DNS rebinding; the
 * Host header of such a request names that site, so only IP literals, `localhost` and the
 * configured host are served (docs/security.md).
 */
function hostAllowed(hostHeader: string | undefined, configuredHost: string, hasToken: boolean): boolean {
  if (hasToken) return true;
  if (!hostHeader) return false;
  const name = hostHeader.startsWith('[') ? hostHeader.slice(1, hostHeader.indexOf(']')) : hostHeader.replace(/:\d*$/, '');
  return isIP(name) !== 0 || name.toLowerCase() === 'localhost' || name.toLowerCase() === configuredHost.toLowerCase();
}
