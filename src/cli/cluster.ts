import { ask, CommandError, locate, resultOf } from './control-client.js';
import type { ControlOptions } from './lifecycle.js';
import { print, printJson, table } from './table.js';
import { safe } from './text.js';

interface ClusterStatus {
  serviceId: string;
  set: string;
  placements: number;
  maxPlacements: number;
  sets: Array<{ name: string; placements: number; brokers: Array<{ serviceId: string; advertise: string; weight: number; isMaster: boolean; epoch: number | null }> }>;
  moves?: Array<{ queue: string; from: string; to: string; phase: string }>;
}

/** `whisker cluster status` (SPEC §13): sets, their brokers and masters, placements, as the running broker sees them */
export async function runCluster(action: string | undefined, options: ControlOptions): Promise<void> {
  if (action !== 'status') throw new CommandError('cluster needs "status"', 2);
  const target = locate(options.config, options.socket);
  const status = resultOf(await ask(target, { command: 'cluster-status' })) as ClusterStatus;
  if (options.json) return printJson(status);
  const rows = status.sets.flatMap((set) => {
    const live = set.brokers.length > 0;
    if (!live) return [[set.name, '-', '(no broker registered: down)', '-', '-', String(set.placements)]];
    const master = set.brokers.find((b) => b.isMaster);
    return set.brokers.map((b, i) => [i === 0 ? set.name : '', b.serviceId, b.advertise, b.isMaster ? 'master' : 'slave', b.isMaster && b.epoch !== null ? String(b.epoch) : '', i === 0 ? `${set.placements}${master ? '' : ' (no master)'}` : '']);
  });
  print(table(['SET', 'BROKER', 'ADVERTISE', 'ROLE', 'EPOCH', 'QUEUES'], rows.map((row) => row.map(safe))));
  for (const move of status.moves ?? []) print(`moving ${safe(move.queue)} from ${safe(move.from)} to ${safe(move.to)}: ${safe(move.phase)}\n`);
  print(`${status.placements} of at most ${status.maxPlacements} queues placed (limits.maxPlacements); seen from ${safe(status.serviceId)} in set ${safe(status.set)}\n`);
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
