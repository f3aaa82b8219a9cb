import type { ClusterStatus, SetStatus } from '../ops/cluster.js';
import { MAX_PLACEMENTS_LISTED, placementLimit } from '../ops/cluster.js';
import { ask, CommandError, locate, resultOf } from './control-client.js';
import type { ControlOptions } from './lifecycle.js';
import { print, printJson, table } from './table.js';
import { safe } from './text.js';

export interface ClusterOptions extends ControlOptions {
  /** list which queue is on which set (`--placements`; `--set` alone implies it) */
  readonly placements?: boolean | undefined;
  readonly set?: string | undefined;
  readonly limit?: string | undefined;
}

/** the answer is read from the broker's copy of the map: it never waits on etcd, so this bound is for a stuck broker */
const ANSWER_TIMEOUT_MS = 5_000;

const rate = (n: number) => n.toFixed(1);

function setRows(set: SetStatus): string[][] {
  if (set.brokers.length === 0) return [[set.name, '-', '(no broker registered: down)', '-', '-', String(set.placements), '-', '-', '-', '-']];
  const s = set.stats;
  const figures = [`${set.placements}${set.master ? '' : ' (no master)'}`, s ? String(s.waiting) : '-', s ? rate(s.rates.received) : '-', s ? rate(s.rates.delivered) : '-', s ? rate(s.rates.acked) : '-'];
  return set.brokers.map((b, i) => [i === 0 ? set.name : '', b.serviceId, b.advertise, b.isMaster ? 'master' : 'slave', b.isMaster && b.epoch !== null ? String(b.epoch) : '', ...(i === 0 ? figures : ['', '', '', '', ''])]);
}

/**
 * `whisker cluster status` (SPEC §13, docs/operations.md#commands): sets, their brokers, masters
 * and epochs, queues and rates per set, and with `--placements` which queue is on which set,
 * as the running broker last read them from etcd. Exit 1 when etcd does not answer it.
 */
export async function runCluster(action: string | undefined, options: ClusterOptions): Promise<void> {
  if (action !== 'status') throw new CommandError('cluster needs "status"', 2);
  const listing = options.placements === true || options.set !== undefined;
  const limit = placementLimit(options.limit);
  if (listing && limit === null) throw new CommandError(`--limit is a whole number from 1 to ${MAX_PLACEMENTS_LISTED}`, 2);
  const target = locate(options.config, options.socket);
  const request = { command: 'cluster-status', ...(listing ? { placements: true, limit, ...(options.set !== undefined ? { set: options.set } : {}) } : {}) };
  const status = resultOf(await ask(target, request, { timeoutMs: ANSWER_TIMEOUT_MS })) as ClusterStatus;
  const who = safe(status.serviceId);
  if (options.json) printJson(status);
  if (!status.etcd.mapRead) throw new CommandError(`${who} has not read the cluster map from etcd since it started (${safe(status.etcd.reason ?? 'etcd unreachable')}); no sets or placements to show`);
  if (!options.json) {
    print(table(['SET', 'BROKER', 'ADVERTISE', 'ROLE', 'EPOCH', 'QUEUES', 'WAITING', 'IN/s', 'OUT/s', 'ACKED/s'], status.sets.flatMap(setRows)));
    for (const move of status.moves ?? []) print(`moving ${safe(move.queue)} from ${safe(move.from)} to ${safe(move.to)}: ${safe(move.phase)}\n`);
    print(`${status.placements} of at most ${status.maxPlacements} queues placed (limits.maxPlacements); seen from ${who} in set ${safe(status.set)}; rates per second over about 5 s, as each set's master last published them\n`);
    const list = status.placementList;
    if (list) {
      const moving = list.placements.some((p) => p.move);
      const rows = list.placements.map((p) => [p.queue, p.set, ...(moving ? [p.move ? `to ${p.move.to} (${p.move.phase})` : ''] : [])]);
      print('\n' + table(['QUEUE', 'SET', ...(moving ? ['MOVE'] : [])], rows));
      print(`${list.placements.length} of ${list.total} placements shown${options.set !== undefined ? ` on set ${safe(options.set)}` : ''}${list.truncated ? ' (the first by name; --limit N shows more)' : ''}\n`);
    }
  }
  if (!status.etcd.reachable) throw new CommandError(`etcd does not answer ${who} (${safe(status.etcd.reason ?? 'unreachable')}): the sets above are as it last read them; roles and figures may have changed since`);
}

/**
 * `whisker move EP/VER --to SET` (SPEC §13, docs/operations.md#moving-a-queue): the running broker
 * starts the move in etcd and answers once the queue is on SET (`--timeout` seconds, 120 by
 * default; the move goes on past it, `whisker cluster status` shows it).
 */
export async function runMove(queue: string | undefined, options: ControlOptions & { to?: string | undefined; timeout?: string | undefined }): Promise<void> {
  if (!queue || !options.to) throw new CommandError('move needs a queue and --to SET: whisker move EP/VER --to SET', 2);
  const seconds = options.timeout === undefined ? 120 : Number(options.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new CommandError('--timeout is a number of seconds', 2);
  const target = locate(options.config, options.socket);
  const result = resultOf(await ask(target, { command: 'move', queue, to: options.to, timeoutSeconds: seconds }, { timeoutMs: (seconds + 10) * 1000 })) as { from: string; to: string };
  if (options.json) return printJson(result);
  print(result.from === result.to ? `${safe(queue)} is on ${safe(result.to)} already\n` : `moved ${safe(queue)} from ${safe(result.from)} to ${safe(result.to)}\n`);
}
