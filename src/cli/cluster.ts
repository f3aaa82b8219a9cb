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
  print(`${status.placements} of at most ${status.maxPlacements} queues placed (limits.maxPlacements); seen from ${safe(status.serviceId)} in set ${safe(status.set)}\n`);
}
