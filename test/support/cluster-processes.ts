import { join } from 'node:path';
import { freePort, startProcess, writeConfig } from './broker-process.js';
import type { ElectedNode } from './election-cluster.js';
import { tempDir } from './harness.js';

/**
 * Real broker processes of a cluster of mirror sets (SPEC §13) on one real etcd: each set's
 * brokers are peers of each other with their own election prefix; all share the cluster prefix.
 * `extra(set)` adds keys (channel pins...) to every broker of that set.
 */
export async function clusterProcesses(etcd: string, sets: Record<string, string[]>, extra: (set: string) => Record<string, unknown> = () => ({}), leaseTtl = 2): Promise<Map<string, ElectedNode[]>> {
  const prefix = `/whisker/cluster-${process.pid}-${Date.now()}`;
  const bySet = new Map<string, ElectedNode[]>();
  for (const [set, serviceIds] of Object.entries(sets)) {
    const nodes: ElectedNode[] = [];
    for (const serviceId of serviceIds) {
      const port = await freePort();
      const dir = tempDir(`whisker-cluster-${serviceId}-`);
      nodes.push({ serviceId, port, dir, spec: `127.0.0.1:${port}@${serviceId}`, configPath: join(dir, 'config.json'), process: null });
    }
    for (const node of nodes) {
      writeConfig(node.dir, {
        serviceId: node.serviceId,
        peers: nodes.filter((other) => other !== node).map((other) => other.spec),
        socketServer: { host: '127.0.0.1', port: node.port },
        maxItemsInQueue: 1_000_000,
        requeueInterval: 30,
        election: { etcd: { hosts: [etcd] }, prefix: `${prefix}-sets/${set}`, leaseTtl },
        cluster: { prefix, set, advertise: node.spec },
        ...extra(set),
      });
    }
    bySet.set(set, nodes);
  }
  const all = [...bySet.values()].flat();
  await Promise.all(all.map(async (node) => (node.process = await startProcess(node.configPath, { startTimeoutMs: 30_000 }))));
  return bySet;
}
