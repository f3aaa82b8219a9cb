import type { Broker, QueueView } from '../broker/api.js';
import { canonicalIdSegment, checkQueueParts } from '../protocol/channel.js';
import { WhiskerError } from '../protocol/errors.js';
import { CLIENT_NAME } from '../protocol/frames.js';
import type { Logger } from '../runtime/logger.js';
import { healthView } from './api.js';
import { clusterStatus, MAX_PLACEMENTS_LISTED, placementLimit } from './cluster.js';
import { operatorCommand } from './commands.js';
import { ControlError, type ControlHandler, type ControlRequest, type ControlResponse } from './control.js';

const MAX_LISTED = 1000;

/**
 * What the control socket answers (docs/operations.md#commands): one function per command,
 * reading the broker through its owners' methods. Message bodies are never sent.
 */
const ok = (result: unknown): ControlResponse => ({ ok: true, result });

export function controlHandler(broker: Broker, log: Logger): ControlHandler {
  return (request, stream) => {
    switch (request.command) {
      case 'status':
        return ok(statusView(broker));
      case 'cluster-status':
        return ok(clusterStatusCommand(broker, request));
      case 'reload': {
        const outcome = broker.reloadFromFile();
        if (outcome.ok) return ok({ restartNeeded: outcome.restartNeeded, warnings: outcome.warnings });
        return { ok: false, error: { code: 'E_CONFIG', message: outcome.error, ...(outcome.key !== undefined ? { key: outcome.key } : {}) } };
      }
      case 'soft-stop':
      case 'stop': {
        const soft = request.command === 'soft-stop';
        // after this answer is written: the stop closes the control socket last
        setImmediate(() => (soft ? broker.softStop() : broker.stop()).catch(() => undefined)); // failures: logged, and in `closed`
        if (soft) {
          // progress for `whisker soft-stop`: what is still in flight, twice a second, until the socket closes
          const progress = setInterval(() => stream.write({ inFlight: broker.inFlightCount }), 500).unref();
          stream.onClose(() => clearInterval(progress));
        }
        return ok({ stopping: soft ? 'soft' : 'now', inFlight: broker.inFlightCount, softStopTimeout: broker.config.softStopTimeout });
      }
      case 'move': {
        if (!broker.cluster) throw new ControlError('E_COMMAND', 'this broker runs without a cluster block');
        const queue = queueArgument(request.queue);
        const to = request.to;
        if (typeof to !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(to)) throw new ControlError('E_COMMAND', 'move needs --to SET, a set name');
        const seconds = typeof request.timeoutSeconds === 'number' && request.timeoutSeconds > 0 ? Math.min(request.timeoutSeconds, 86_400) : 120;
        return broker.moveQueue(queue, to, (phase) => log.info('move', { queue, to, phase }), seconds * 1000).then(ok, (error: Error & { code?: string }) => ({ ok: false, error: { code: error.code ?? 'E_COMMAND', message: error.message } }));
      }
      case 'step-down':
        // answers once the lease is given up: deliveries in flight acked first (docs/operations.md#automatic-failover)
        return broker.stepDown().then((outcome) => (outcome.ok ? ok({ steppedDown: true }) : { ok: false, error: { code: 'E_COMMAND', message: outcome.error ?? 'could not step down' } }));
      case 'list':
        return ok(listView(broker, request));
      case 'delete':
      {
        const result = deleteIds(broker, request);
        return result instanceof Promise ? result.then(ok) : ok(result);
      }
      case 'keys-list':
        return ok(keysView(broker));
      case 'keys-revoke':
        return revokeKey(broker, request).then(ok);
      case 'reservations-list':
        return ok(reservationsView(broker));
      case 'reservations-release':
        return ok(releaseReservation(broker, log, request));
      default: {
        // stat, peek, tail, dlq: the operator's views, in src/ops (docs/operations.md#commands)
        const answer = operatorCommand(broker, request, stream);
        if (answer) return answer;
        throw new ControlError('E_COMMAND', `unknown command "${request.command}"`);
      }
    }
  };
}

export function statusView(broker: Broker) {
  let waiting = 0;
  for (const queue of broker.queues.values()) waiting += queue.depth;
  const config = broker.config;
  // what /health says, reason included (docs/management.md#health)
  const health = healthView(broker, Date.now());
  return {
    serviceId: config.serviceId,
    role: broker.isMaster ? 'master' : 'slave',
    state: broker.isStopping ? 'stopping' : 'running',
    health: health.status,
    ...(health.reason ? { reason: health.reason } : {}),
    pid: process.pid,
    uptimeSeconds: Math.max(0, Math.floor((Date.now() - broker.startedAt) / 1000)),
    url: broker.url,
    connections: broker.sessions.size,
    clients: [...broker.sessions].filter((s) => s.isReady).length,
    queues: broker.queues.size,
    waiting,
    inFlight: broker.inFlightCount,
    configPath: config.configPath,
    dataDirectory: config.dataDirectory,
    reloadFailures: broker.reloadFailures,
    lastReloadError: broker.lastReloadError,
    storeHealthy: broker.isStoreHealthy,
    conflict: broker.peers.conflict,
    peers: broker.peers.status(),
    // without an election block the configured master rules (SPEC §9)
    election: broker.election ?? { mode: 'configured', reason: config.isMaster ? (broker.isMaster ? 'isMaster: true in the config' : 'isMaster: true, but another configured master with a lower serviceId delivers') : 'isMaster: false in the config' },
  };
}

/** `whisker cluster status [--placements [--set S] [-n N]]`: answered from this broker's copy of the map, never waiting on etcd */
function clusterStatusCommand(broker: Broker, request: ControlRequest) {
  let query;
  if (request.placements === true) {
    const limit = placementLimit(request.limit);
    if (limit === null) throw new ControlError('E_BAD_LIMIT', `--limit is a whole number from 1 to ${MAX_PLACEMENTS_LISTED}`);
    query = { limit, ...(typeof request.set === 'string' ? { set: request.set } : {}) };
  }
  const status = clusterStatus(broker, query);
  if (!status) throw new ControlError('E_COMMAND', 'this broker runs without a cluster block');
  return status;
}

function queueArgument(value: unknown): string {
  const parts = typeof value === 'string' ? value.split('/') : [];
  try {
    if (parts.length !== 2) throw new WhiskerError('E_BAD_CHANNEL', 'Bad queue');
    checkQueueParts(parts[0], parts[1]);
  } catch (error) {
    throw new ControlError('E_BAD_QUEUE', `a queue is "endpoint/version": ${(error as Error).message}`);
  }
  return value as string;
}

/** ids are written as in channel strings: `/`, `*` and `%` percent-encoded */
function idArgument(value: unknown): string {
  try {
    if (typeof value !== 'string') throw new Error('Bad id');
    return canonicalIdSegment(value);
  } catch (error) {
    throw new ControlError('E_BAD_ID', `bad id: ${(error as Error).message}`);
  }
}

function selectedQueues(broker: Broker, request: ControlRequest): QueueView[] {
  if (request.queue === undefined) return [...broker.queues.values()].sort((a, b) => a.name.localeCompare(b.name));
  const queue = broker.queues.get(queueArgument(request.queue));
  return queue ? [queue] : [];
}

function listView(broker: Broker, request: ControlRequest) {
  const id = request.id === undefined ? undefined : idArgument(request.id);
  const detailed = request.queue !== undefined || id !== undefined;
  const queues = selectedQueues(broker, request).map((queue) => {
    const counts = queue.idCounts();
    const ids = [...counts].filter(([name]) => id === undefined || name === id).map(([name, count]) => ({ id: name, count }));
    ids.sort((a, b) => b.count - a.count || a.id.localeCompare(b.id));
    const view = { queue: queue.name, messages: queue.storedCount, waiting: queue.depth, inFlight: queue.inFlightCount, idCount: counts.size };
    if (!detailed && request.messages !== true) return view;
    const listed = request.messages === true ? queue.messages(id, MAX_LISTED + 1) : [];
    return {
      ...view,
      ids: ids.slice(0, MAX_LISTED),
      idsTruncated: ids.length > MAX_LISTED,
      ...(request.messages === true ? { messageList: listed.slice(0, MAX_LISTED), messagesTruncated: listed.length > MAX_LISTED } : {}),
    };
  });
  // retained channels' history: kept after acks, for replays (docs/configuration.md#retention)
  const histories = broker.history
    .list()
    .filter(([queue]) => request.queue === undefined || queue === request.queue)
    .map(([queue, s]) => ({ queue, messages: s.count, bytes: s.bytes, oldestAcceptedAt: s.oldestAt }));
  return { queues: id === undefined ? queues : queues.filter((q) => 'ids' in q && q.ids.length > 0), histories };
}

/** empties a queue or one id of it; subscriptions stay (SPEC §11) */
function deleteIds(broker: Broker, request: ControlRequest) {
  const name = queueArgument(request.queue);
  if (request.history === true) return broker.history.clear(name).then((freedBytes) => ({ queue: name, history: true, freedBytes }));
  const id = request.id === undefined ? undefined : idArgument(request.id);
  const deleted = broker.purgeQueue(name, id);
  return { queue: name, ...(id !== undefined ? { id } : {}), deleted };
}

function keysView(broker: Broker) {
  const connected = new Map<string, number>();
  for (const session of broker.sessions) if (session.isReady) connected.set(session.clientName, (connected.get(session.clientName) ?? 0) + 1);
  const { keys, revoked } = broker.listKeys();
  return { keys: keys.map((k) => ({ ...k, connections: connected.get(k.name) ?? 0 })), revoked, registeredClientsPath: broker.config.registeredClientsPath };
}

/**
 * The name's key is refused from now on on every mirror, its open connections closed with
 * E_AUTH; answers once every connected peer confirmed, at most ~1 s (SPEC §4).
 */
async function revokeKey(broker: Broker, request: ControlRequest) {
  const name = request.name;
  if (typeof name !== 'string' || !CLIENT_NAME.test(name)) throw new ControlError('E_BAD_NAME', `a client name matches ${CLIENT_NAME}`);
  const outcome = await broker.revokeKey(name); // its reserved ids freed too (SPEC §5)
  if (!outcome) throw new ControlError('E_NOT_FOUND', `no registered key for "${name}"`);
  return outcome;
}

/** reserved ids with their owners (`whisker reservations list`, docs/operations.md#commands) */
function reservationsView(broker: Broker) {
  const reservations = broker.listReservations().sort((a, b) => a.channel.localeCompare(b.channel));
  return { reservations, limit: broker.config.limits.maxReservations, hold: broker.config.reservationHold, role: broker.isMaster ? 'master' : 'slave' };
}

/** `whisker reservations release CHANNEL`: the id is free for the next subscriber, of any name */
function releaseReservation(broker: Broker, log: Logger, request: ControlRequest) {
  const channel = typeof request.channel === 'string' ? request.channel : '';
  const [endpoint, version, ...rest] = channel.split('/');
  const id = idArgument(rest.join('/'));
  const canonical = `${queueArgument(`${endpoint}/${version}`)}/${id}`;
  if (!broker.isMaster) throw new ControlError('E_NOT_MASTER', 'reservations are released on the master (a slave follows its table)');
  const released = broker.releaseReservation(canonical);
  if (!released) throw new ControlError('E_NOT_FOUND', `no reservation of "${canonical}"`);
  log.warn('reservation released by the operator', { channel: canonical, owner: released.owner });
  return released;
}
