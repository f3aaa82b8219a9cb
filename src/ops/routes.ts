import { clientsView, HandlerRates, healthView, type ManagedBroker, queueDetailView, queuesView, uptimeSeconds } from './api.js';
import { clusterStatus, MAX_PLACEMENTS_LISTED, placementLimit } from './cluster.js';
import { DASHBOARD_CSP, DASHBOARD_HTML } from './dashboard.js';
import type { RateHistory } from './history.js';
import { type InspectedBroker, listDeadLetters, OperatorError, peek, purgeDeadLetters, replayDeadLetters } from './messages.js';
import type { BrokerMetrics } from './metrics.js';
import type { RateWindow } from './rates.js';

export type Reply = { status: number; type: string; body: string | Buffer; headers?: Record<string, string> };
export type Route = (url: URL, body: unknown) => Reply | Promise<Reply>;

const JSON_TYPE = 'application/json; charset=utf-8';
const IDS_LIMIT = 1000;
const MAX_IDS_LIMIT = 100_000;

const escapeChar = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
/** `<`, `>` and `&` as \u escapes: the same JSON to a parser, inert if something renders it as HTML */
export const json = (status: number, value: unknown): Reply => ({ status, type: JSON_TYPE, body: JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, escapeChar) + '\n' });

const OPERATOR_STATUS: Record<OperatorError['code'], number> = { E_NOT_FOUND: 404, E_BAD_REQUEST: 400, E_NOT_MASTER: 409, E_REFUSED: 409 };

async function operator(work: () => unknown): Promise<Reply> {
  try {
    return json(200, await work());
  } catch (error) {
    if (error instanceof OperatorError) return json(OPERATOR_STATUS[error.code], { error: error.message, code: error.code });
    throw error;
  }
}

export interface RouteContext {
  readonly broker: ManagedBroker & InspectedBroker;
  readonly metrics: BrokerMetrics;
  readonly rates: RateWindow;
  readonly history: RateHistory;
  readonly now: () => number;
  /** a token is configured: the dead-letter actions are served */
  readonly actions: boolean;
}

/** GET routes by exact path (docs/management.md#endpoints) */
export function getRoutes(ctx: RouteContext): Record<string, Route> {
  const { broker, metrics, rates, history, now } = ctx;
  return {
    '/': () => ({ status: 200, type: 'text/html; charset=utf-8', body: DASHBOARD_HTML, headers: { 'Content-Security-Policy': DASHBOARD_CSP } }),
    '/metrics': async () => ({ status: 200, type: metrics.contentType, body: await metrics.text() }),
    '/statistics': async () => ({ status: 200, type: metrics.contentType, body: await metrics.text() }),
    '/health': () => {
      const view = healthView(broker, now());
      return json(view.status === 'ok' ? 200 : 503, view);
    },
    // liveness: the process answers, degraded or not; a restart would not bring etcd or a master back
    '/health/live': () => json(200, { status: 'alive', serviceId: broker.config.serviceId, uptimeSeconds: uptimeSeconds(broker, now()) }),
    '/api/queues': () => json(200, queuesView(broker, rates, now())),
    '/api/clients': () => json(200, clientsView(broker)),
    // the sets as this broker last read them from etcd; `?placements=N` adds the first N placements (`&set=` one set's)
    '/api/cluster': (url) => {
      const asked = url.searchParams.get('placements');
      const limit = asked === null ? null : placementLimit(asked);
      if (asked !== null && limit === null) return json(400, { error: `placements is a whole number from 1 to ${MAX_PLACEMENTS_LISTED}` });
      const set = url.searchParams.get('set');
      const view = clusterStatus(broker, limit === null ? undefined : { limit, ...(set !== null ? { set } : {}) });
      return view ? json(200, view) : json(404, { error: 'this broker runs without a cluster block' });
    },
    // the total, and one queue's line when `?queue=` names it (the page shows one at a time)
    '/api/history': (url) => {
      const only = url.searchParams.get('queue');
      const points = history.points(now(), broker.queues.values()).map((p) => ({ at: p.at, total: p.total, queues: only !== null && Object.hasOwn(p.queues, only) ? { [only]: p.queues[only] } : {} }));
      return json(200, { stepMs: history.stepMs, points });
    },
    '/api/dead-letters': async (url) => {
      const reply = await operator(async () => ({ ...(await listDeadLetters(broker, url.searchParams.get('queue') ?? undefined, url.searchParams.get('limit') ?? undefined)), actions: ctx.actions }));
      return reply;
    },
  };
}

/** `/api/queues/:queue` and `/api/queues/:queue/messages`; null for another path */
export function queueRoute(ctx: RouteContext, path: string, handlerRates: HandlerRates): Route | null {
  if (!path.startsWith('/api/queues/')) return null;
  let parts: string[];
  try {
    // `endpoint/version`, URL-encoded (`news%2Fv1`) or not (`news/v1`); neither part has a `/`
    parts = decodeURIComponent(path.slice('/api/queues/'.length)).split('/');
  } catch {
    return () => json(400, { error: 'bad queue name encoding' });
  }
  const name = `${parts[0]}/${parts[1]}`;
  if (parts.length === 3 && parts[2] === 'messages') {
    // a peek: the oldest held messages, taking nothing; bodies only with showBodies
    return (url) => operator(() => peek(ctx.broker, name, { rawId: url.searchParams.get('id') ?? undefined, limit: url.searchParams.get('limit') ?? undefined }));
  }
  if (parts.length !== 2) return null;
  return (url) => {
    const detail = queueDetailView(ctx.broker, name, ctx.rates, ctx.now(), idsLimit(url), handlerRates);
    return detail ? json(200, detail) : json(404, { error: 'unknown queue' });
  };
}

/**
 * POST routes: the dashboard's actions on dead letters. Only with a token configured (the
 * server checks it before), a JSON body, and the page asks the operator to confirm first.
 */
export function postRoutes(ctx: RouteContext): Record<string, Route> {
  const ids = (body: unknown): unknown[] => (Array.isArray((body as { messageIds?: unknown }).messageIds) ? (body as { messageIds: unknown[] }).messageIds : []);
  const queue = (body: unknown): unknown => (body as { queue?: unknown }).queue;
  return {
    '/api/dead-letters/replay': (_url, body) => operator(() => replayDeadLetters(ctx.broker, queue(body), ids(body))),
    '/api/dead-letters/purge': (_url, body) => operator(() => purgeDeadLetters(ctx.broker, queue(body), (body as { all?: unknown }).all === true ? 'all' : ids(body))),
  };
}

function idsLimit(url: URL): number {
  const asked = Number(url.searchParams.get('limit') ?? IDS_LIMIT);
  return Number.isInteger(asked) && asked > 0 ? Math.min(asked, MAX_IDS_LIMIT) : IDS_LIMIT;
}
