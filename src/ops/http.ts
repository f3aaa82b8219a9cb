import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { sameSecret } from './secret.js';
import type { Config } from '../config/types.js';
import type { Logger } from './logger.js';
import { clientsView, healthView, type ManagedBroker, queueDetailView, queuesView, uptimeSeconds } from './api.js';
import { DASHBOARD_CSP, DASHBOARD_HTML } from './dashboard.js';
import { BrokerMetrics } from './metrics.js';
import { RateWindow } from './rates.js';

export type ManagementConfig = NonNullable<Config['management']>;

export interface ManagementOptions {
  metrics: BrokerMetrics;
  log: Logger;
  now?: () => number;
  /** how often queue counters are sampled for rates */
  sampleIntervalMs?: number;
}

export interface ManagementServer {
  readonly host: string;
  /** the port actually bound (useful with port 0) */
  readonly port: number;
  close(): Promise<void>;
}

type Reply = { status: number; type: string; body: string; headers?: Record<string, string> };

const JSON_TYPE = 'application/json; charset=utf-8';
const IDS_LIMIT = 1000;
const MAX_IDS_LIMIT = 100_000;

const escapeChar = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
/** `<`, `>` and `&` as \u escapes: the same JSON to a parser, inert if something renders it as HTML */
const json = (status: number, value: unknown): Reply => ({ status, type: JSON_TYPE, body: JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, escapeChar) + '\n' });
const notFound = (): Reply => json(404, { error: 'not found' });

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
 * JSON API and the dashboard. GET only; a bearer token on everything but the static page
 * when `management.token` is set.
 */
export async function startManagement(broker: ManagedBroker, config: ManagementConfig, options: ManagementOptions): Promise<ManagementServer> {
  const { metrics, log } = options;
  const now = options.now ?? Date.now;
  const rates = new RateWindow();
  const sample = () => rates.record(now(), broker.router.queues.values());
  metrics.bind({
    queues: () => broker.router.queues.values(),
    get connections() { return broker.sessions.size; },
    get isMaster() { return broker.router.isMaster; },
    get reloadFailures() { return broker.reloadFailures ?? 0; },
    get isStoreHealthy() { return broker.isStoreHealthy; },
    get uptimeSeconds() { return uptimeSeconds(broker, now()); },
    get conflictingMasters() { return broker.peers?.conflict?.masters.length ?? 0; },
    get peersConnected() { return broker.peers?.status().filter((p) => p.connected).length ?? 0; },
  });

  // the whole block needs a restart (docs/operations.md#what-a-reload-applies)
  const expected = config.token;

  const routes: Record<string, (url: URL) => Reply | Promise<Reply>> = {
    '/': () => ({ status: 200, type: 'text/html; charset=utf-8', body: DASHBOARD_HTML, headers: { 'Content-Security-Policy': DASHBOARD_CSP } }),
    '/metrics': async () => ({ status: 200, type: metrics.contentType, body: await metrics.text() }),
    '/statistics': async () => ({ status: 200, type: metrics.contentType, body: await metrics.text() }),
    '/health': () => {
      const view = healthView(broker, now());
      return json(view.status === 'ok' ? 200 : 503, view);
    },
    '/api/queues': () => json(200, queuesView(broker, rates, now())),
    '/api/clients': () => json(200, clientsView(broker)),
  };

  function route(path: string): ((url: URL) => Reply | Promise<Reply>) | null {
    if (Object.hasOwn(routes, path)) return routes[path]!;
    if (!path.startsWith('/api/queues/')) return null;
    let name: string;
    try {
      // `endpoint/version`, URL-encoded (`news%2Fv1`) or not (`news/v1`)
      name = decodeURIComponent(path.slice('/api/queues/'.length));
    } catch {
      return () => json(400, { error: 'bad queue name encoding' });
    }
    return (url) => {
      const detail = queueDetailView(broker, name, rates, now(), idsLimit(url));
      return detail ? json(200, detail) : json(404, { error: 'unknown queue' });
    };
  }

  async function answer(req: IncomingMessage): Promise<Reply> {
    if (!hostAllowed(req.headers.host, config.host, expected !== undefined)) return json(403, { error: 'unexpected Host header' });
    // concatenated, not resolved: `//other/x` stays a path here, it does not name a host
    const target = req.url ?? '/';
    if (!target.startsWith('/')) return json(400, { error: 'bad request target' });
    const url = new URL(`http://management.invalid${target}`);
    const handler = route(url.pathname);
    if (!handler) return notFound();
    if (req.method !== 'GET') return { ...json(405, { error: 'method not allowed' }), headers: { Allow: 'GET' } };
    // the page holds no data; what it fetches needs the token
    if (url.pathname !== '/' && expected !== undefined && !sameSecret(bearer(req.headers.authorization), expected)) {
      return { ...json(401, { error: 'bearer token required' }), headers: { 'WWW-Authenticate': 'Bearer realm="whisker"' } };
    }
    return handler(url);
  }

  const server: Server = createServer((req, res) => {
    answer(req).then(
      // a request body is never read, so a connection that sent one is not reused
      (reply) => send(res, reply, req.method !== 'GET'),
      (error: unknown) => {
        log.error('management request failed', { path: req.url, error: (error as Error).message });
        send(res, json(500, { error: 'internal error' }), true);
      },
    );
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  const address = await new Promise<AddressInfo>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
  server.on('error', (error) => log.error('management server error', { error: error.message }));
  const sampler = setInterval(sample, options.sampleIntervalMs ?? 1000);
  sampler.unref();
  sample();
  log.info('management listening', { url: `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`, token: expected !== undefined });

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

function send(res: ServerResponse, reply: Reply, closeAfter: boolean): void {
  res.writeHead(reply.status, { ...COMMON_HEADERS, 'Content-Type': reply.type, ...reply.headers, ...(closeAfter ? { Connection: 'close' } : {}) });
  res.end(reply.body);
}

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}

function idsLimit(url: URL): number {
  const asked = Number(url.searchParams.get('limit') ?? IDS_LIMIT);
  return Number.isInteger(asked) && asked > 0 ? Math.min(asked, MAX_IDS_LIMIT) : IDS_LIMIT;
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
