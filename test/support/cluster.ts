import { Etcd3 } from 'etcd3';
import { afterEach } from 'vitest';
import { broker, freePort, type TestBroker } from './harness.js';

/**
 * In-process brokers of a cluster of mirror sets (SPEC §13) on a real etcd (test/support/etcd.ts):
 * each set has its own election prefix, the cluster one prefix for all.
 */
export interface ClusterSpec {
  readonly etcd: string;
  readonly prefix: string;
}

const clients: Etcd3[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

export function clusterSpec(etcd: string): ClusterSpec {
  return { etcd, prefix: `/whisker/cluster-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}` };
}

/** one broker of `set`; `extra` adds keys (limits, channels...) */
export async function clusterBroker(spec: ClusterSpec, set: string, serviceId: string, extra: Record<string, unknown> = {}): Promise<TestBroker> {
  const port = await freePort();
  return broker({
    serviceId,
    isMaster: false,
    socketServer: { host: '127.0.0.1', port },
    election: { etcd: { hosts: [spec.etcd] }, prefix: `${spec.prefix}-sets/${set}`, leaseTtl: 5 },
    cluster: { prefix: spec.prefix, set, advertise: `127.0.0.1:${port}@${serviceId}` },
    ...extra,
  });
}

/** the placements in etcd: queue -> set, read with a client of the test's own */
export async function placementsIn(spec: ClusterSpec): Promise<Map<string, string>> {
  const client = new Etcd3({ hosts: [spec.etcd] });
  clients.push(client);
  const under = `${spec.prefix}/placements/`;
  const kvs = await client.getAll().prefix(under).strings();
  return new Map(Object.entries(kvs).map(([key, value]) => [key.slice(under.length), (JSON.parse(value) as { set: string }).set]));
}

/** resolves once `broker` is its set's elected master */
export async function elected(node: TestBroker, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!node.isMaster) {
    if (Date.now() > deadline) throw new Error(`${node.config.serviceId} not elected within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
