import { join } from 'node:path';
import { type BrokerProcess, freePort, startProcess, whisker, writeConfig } from './broker-process.js';
import { type EtcdProcess, startEtcd } from './etcd.js';
import { tempDir } from './harness.js';
import { Traffic } from './traffic.js';

/**
 * Three real broker processes with an `election` block on one real etcd (test/support/etcd.ts):
 * nobody is configured master; etcd elects one. `masterIndex()` reads who delivers from the
 * brokers' own logs, as an operator would.
 */
export interface ElectedNode {
  readonly serviceId: string;
  readonly port: number;
  readonly dir: string;
  readonly spec: string;
  readonly configPath: string;
  process: BrokerProcess | null;
}

export const LEASE_TTL = 2;
/** the checker's traffic in the election tests: two consumers that ack, prefetch 10, ~1,000 messages/s */
export const CONSUMERS = 2;
export const PREFETCH = 10;
export const PER_TICK = 5;

/** `extra`: keys added to (or replacing) each node's config, e.g. `isMaster` or a fixed `management` port */
export async function electionCluster(etcdHosts: readonly string[], serviceIds = ['a', 'b', 'c'], extra: (serviceId: string) => Record<string, unknown> = () => ({})): Promise<ElectedNode[]> {
  const nodes: ElectedNode[] = [];
  for (const serviceId of serviceIds) {
    const port = await freePort();
    const dir = tempDir(`whisker-election-${serviceId}-`);
    nodes.push({ serviceId, port, dir, spec: `127.0.0.1:${port}@${serviceId}`, configPath: join(dir, 'config.json'), process: null });
  }
  const prefix = `/whisker/test-${process.pid}-${Date.now()}`;
  for (const node of nodes) {
    writeConfig(node.dir, {
      serviceId: node.serviceId,
      isMaster: false, // not used with an election: the log says so
      peers: nodes.filter((other) => other !== node).map((other) => other.spec),
      socketServer: { host: '127.0.0.1', port: node.port },
      maxItemsInQueue: 1_000_000,
      requeueInterval: 30,
      election: { etcd: { hosts: etcdHosts }, prefix, leaseTtl: LEASE_TTL },
      ...extra(node.serviceId),
    });
  }
  await Promise.all(nodes.map(async (node) => (node.process = await startProcess(node.configPath, { startTimeoutMs: 30_000 }))));
  return nodes;
}

/** resolves with the node whose log says, after the offsets in `from`, that it delivers as master */
export async function nextMaster(nodes: readonly ElectedNode[], from: ReadonlyMap<ElectedNode, number> = new Map(), timeoutMs = 15_000): Promise<ElectedNode> {
  const alive = nodes.filter((node) => node.process && node.process.child.exitCode === null && node.process.child.signalCode === null);
  const controller = new AbortController();
  try {
    return await Promise.any(
      alive.map(async (node) => {
        await node.process!.waitFor(/delivering: this broker acts as master/, from.get(node) ?? 0, timeoutMs);
        if (controller.signal.aborted) throw new Error('another one first');
        controller.abort();
        return node;
      }),
    );
  } catch {
    throw new Error(`no broker became master within ${timeoutMs} ms:\n${alive.map((n) => n.process!.output().slice(-3000)).join('\n----\n')}`);
  }
}

/** every node's output length now: a later `waitFor` reads only what comes after */
export function offsets(nodes: readonly ElectedNode[]): Map<ElectedNode, number> {
  return new Map(nodes.map((node) => [node, node.process?.output().length ?? 0]));
}

export async function status(node: ElectedNode): Promise<{ role: string; election: { phase: string; epoch: number | null; leader: string | null } | null }> {
  const result = await whisker(['status', '-c', node.configPath, '--json']);
  if (result.code !== 0) throw new Error(`whisker status: ${result.stderr}`);
  return JSON.parse(result.stdout) as { role: string; election: { phase: string; epoch: number | null; leader: string | null } | null };
}

/**
 * polls `whisker status` until the election's phase is `phase`: a broker frozen past its lease
 * may find etcd3's circuit breaker open when it goes on (its calls timed out meanwhile) and says
 * etcd-unreachable for a few seconds before its next round reads the new leader
 */
export async function phaseWithin(node: ElectedNode, phase: string, timeoutMs = 15_000): Promise<{ phase: string; epoch: number | null; leader: string | null } | null> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { election } = await status(node);
    if (election?.phase === phase || performance.now() > deadline) return election;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export async function held(node: ElectedNode): Promise<number> {
  const result = await whisker(['list', '-c', node.configPath, '--json']);
  if (result.code !== 0) throw new Error(`whisker list: ${result.stderr}`);
  const { queues } = JSON.parse(result.stdout) as { queues: Array<{ messages: number }> };
  return queues.reduce((sum, q) => sum + q.messages, 0);
}

/** one etcd, three brokers, a master elected and both others in step, traffic running (1,000 sent) */
export async function withTraffic(sendTimeout?: number): Promise<{ nodes: ElectedNode[]; master: ElectedNode; traffic: Traffic; etcd: EtcdProcess }> {
  const etcd = await startEtcd();
  const nodes = await electionCluster([etcd.url]);
  const master = await nextMaster(nodes);
  await Promise.all(nodes.filter((n) => n !== master).map((n) => n.process!.waitFor(/in step with the master/, 0, 15_000)));
  const traffic = await Traffic.start(nodes.map((n) => n.spec), { consumers: CONSUMERS, prefetch: PREFETCH, ...(sendTimeout ? { sendTimeout } : {}) });
  traffic.run(PER_TICK);
  await traffic.sendMore(1_000);
  return { nodes, master, traffic, etcd };
}
