import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { startProcess, writeConfig } from '../../support/broker-process.js';
import { type ElectedNode, electionCluster, nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd, startEtcdAt } from '../../support/etcd.js';
import { connect, freePort, Inbox, tempDir, until } from '../../support/harness.js';
import { parseMetrics, valueOf } from '../../support/prom.js';

/**
 * Issue 27 items 1 and 2 (SPEC §9), real broker processes and a real etcd: with an `election`
 * block a broker is a slave until it holds the lease, from its first second on, whatever
 * `isMaster` says (here the default, true); without the block the configured master delivers at
 * once. While etcd is down /health answers 503 `degraded` with a reason naming etcd.
 */
interface Seen {
  readonly code: number;
  readonly status: string;
  readonly role: string;
  readonly reason?: string;
  readonly phase?: string;
  readonly leader?: string | null;
  /** `whisker_role` from /metrics, read at the same time */
  readonly metricRole: number | undefined;
}

interface HealthBody {
  status: string;
  role: string;
  reason?: string;
  election?: { phase: string; leader: string | null };
}

/** /health and /metrics read as fast as they answer, from before the broker listens until stop() */
class RoleWatch {
  readonly seen: Seen[] = [];
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(port: number) {
    this.#done = this.#loop(`http://127.0.0.1:${port}`);
  }

  get masters(): Seen[] {
    return this.seen.filter((s) => s.role === 'master' || s.metricRole === 1);
  }

  async until(predicate: (seen: Seen) => boolean, timeoutMs: number, what: string): Promise<void> {
    await until(() => this.seen.some(predicate), timeoutMs, `${what}; seen: ${JSON.stringify(this.seen.slice(-3))}`);
  }

  async stop(): Promise<Seen[]> {
    this.#stopped = true;
    await this.#done;
    return this.seen;
  }

  async #loop(base: string): Promise<void> {
    while (!this.#stopped) {
      try {
        const [health, metrics] = await Promise.all([fetch(`${base}/health`), fetch(`${base}/metrics`)]);
        const body = (await health.json()) as HealthBody;
        const metricRole = valueOf(parseMetrics(await metrics.text()), 'whisker_role');
        this.seen.push({ code: health.status, status: body.status, role: body.role, reason: body.reason, phase: body.election?.phase, leader: body.election?.leader, metricRole });
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 2)); // not listening yet (or gone)
      }
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** three brokers with an election block and `isMaster: true` (the default), each on a fixed management port */
function cluster(etcdHosts: readonly string[], management: ReadonlyMap<string, number>): Promise<ElectedNode[]> {
  return electionCluster(etcdHosts, [...management.keys()], (id) => ({ isMaster: true, management: { host: '127.0.0.1', port: management.get(id)! }, heartbeatTimeout: 1 }));
}

async function managementPorts(): Promise<Map<string, number>> {
  const ports = new Map<string, number>();
  for (const id of ['a', 'b', 'c']) ports.set(id, await freePort());
  return ports;
}

/** every broker has registered a listener on `queue` (GET /api/queues): no master need answer */
async function listenedOnAll(management: ReadonlyMap<string, number>, queue: string): Promise<void> {
  const listening = async (port: number) => {
    const { queues } = (await (await fetch(`http://127.0.0.1:${port}/api/queues`)).json()) as { queues: Array<{ name: string; listeners: number }> };
    return queues.some((q) => q.name === queue && q.listeners > 0);
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const all = await Promise.all([...management.values()].map(listening));
    if (all.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error(`a listener on ${queue} not registered everywhere: ${JSON.stringify(all)}`);
    await sleep(50);
  }
}

describe('a broker with an election block is a slave until it holds the lease (issue 27 item 1)', () => {
  test('etcd unreachable at start: nobody says master or settles a send or delivers; etcd started there: exactly one master, each message delivered once', async () => {
    const etcdUrl = `http://127.0.0.1:${await freePort()}`; // nothing listens there yet
    const management = await managementPorts();
    // watched from before the processes listen: no answer may say master, from the first on
    const watches = new Map([...management].map(([id, port]) => [id, new RoleWatch(port)]));
    const nodes = await cluster([etcdUrl], management);
    for (const node of nodes) expect(node.process!.output()).toContain('isMaster in the file is not used');
    await Promise.all(nodes.map((node) => node.process!.waitFor(/"msg":"etcd unreachable"/, 0, 15_000)));

    const specs = nodes.map((node) => node.spec);
    const listener = await connect('start-listener', specs, { dedupeWindow: 0 });
    const inbox = new Inbox();
    listener.listen('orders/v1/1', inbox.listener); // its `ready` waits for a master: not awaited
    await listenedOnAll(management, 'orders/v1');
    const producer = await connect('start-producer', specs, { sendTimeout: 1_500 });
    const refused = (await producer.send('orders/v1/1', { n: 0 }).then(
      () => null,
      (error: unknown) => error,
    )) as (WhiskerError & { info?: { storedBy?: string[] } }) | null;
    expect(refused?.code).toBe('E_NO_MASTER');
    expect([...(refused?.info?.storedBy ?? [])].sort()).toEqual(['a', 'b', 'c']);
    await sleep(500);
    expect(inbox.length).toBe(0);

    // item 2: /health says degraded, naming etcd, on every broker
    for (const watch of watches.values()) {
      await watch.until((s) => /^no master: etcd unreachable \(/.test(s.reason ?? ''), 5_000, 'a reason naming etcd');
      const last = watch.seen.at(-1)!;
      expect(last).toMatchObject({ code: 503, status: 'degraded', role: 'slave', phase: 'etcd-unreachable', metricRole: 0 });
      expect(last.reason).toMatch(/^no master: etcd unreachable \(/);
    }
    for (const [id, watch] of watches) expect(watch.masters, `${id} said master while etcd was unreachable`).toEqual([]);
    // the probe for liveness and client traffic: a degraded broker is alive and keeps storing sends
    for (const [id, port] of management) {
      const live = await fetch(`http://127.0.0.1:${port}/health/live`);
      expect({ code: live.status, body: await live.json() }).toEqual({ code: 200, body: expect.objectContaining({ status: 'alive', serviceId: id }) });
    }
    for (const node of nodes) expect(node.process!.output()).not.toContain('delivering: this broker acts as master');

    const from = offsets(nodes);
    const etcd = await startEtcdAt(etcdUrl);
    const master = await nextMaster(nodes, from, 30_000);
    const slaves = nodes.filter((node) => node !== master);
    await Promise.all(slaves.map((node) => node.process!.waitFor(/in step with the master/, from.get(node), 15_000)));
    for (const watch of watches.values()) await watch.until((s) => s.leader === master.serviceId, 5_000, `${master.serviceId} as leader`);
    const seen = new Map<string, Seen[]>();
    for (const [id, watch] of watches) seen.set(id, await watch.stop());
    for (const [id, answers] of seen) {
      const masters = answers.filter((s) => s.role === 'master' || s.metricRole === 1);
      if (id === master.serviceId) expect(masters.length).toBeGreaterThan(0);
      else expect(masters, `${id} said master`).toEqual([]);
    }

    for (let n = 1; n <= 20; n++) await producer.send('orders/v1/1', { n });
    await inbox.waitFor(21, 10_000);
    await sleep(500); // a second delivery from another broker would land meanwhile
    const got = inbox.items.map((item) => (item.msg as { n: number }).n).sort((x, y) => x - y);
    expect(got).toEqual(Array.from({ length: 21 }, (_, n) => n));
    for (const node of slaves) expect(node.process!.output()).not.toContain('delivering: this broker acts as master');

    // item 2 again, once a master was elected: etcd killed, every broker degraded, naming etcd
    const probes = [...management].map(([id, port]) => ({ id, watch: new RoleWatch(port) }));
    await etcd.kill();
    for (const { id, watch } of probes) await watch.until((s) => s.code === 503 && /^no master: etcd unreachable \(/.test(s.reason ?? ''), 10_000, `${id}: 503 naming etcd`);
    await Promise.all(probes.map(({ watch }) => watch.stop()));
  }, 120_000);

  test('a broker restarted while etcd is up never says master before it holds the lease', async () => {
    const etcd = await startEtcd();
    const management = await managementPorts();
    const nodes = await cluster([etcd.url], management);
    const master = await nextMaster(nodes);
    const slaves = nodes.filter((node) => node !== master);
    await Promise.all(slaves.map((node) => node.process!.waitFor(/in step with the master/, 0, 15_000)));
    const answers: Seen[] = [];
    for (let cycle = 0; cycle < 3; cycle++) {
      const node = slaves[cycle % slaves.length]!;
      node.process!.child.kill('SIGKILL');
      await node.process!.exited;
      const watch = new RoleWatch(management.get(node.serviceId)!);
      node.process = await startProcess(node.configPath, { startTimeoutMs: 30_000 });
      await watch.until((s) => s.leader === master.serviceId, 15_000, `${node.serviceId} hears of ${master.serviceId}`);
      await sleep(200);
      const seen = await watch.stop();
      answers.push(...seen);
      expect(seen.filter((s) => s.role === 'master' || s.metricRole === 1), `${node.serviceId} said master after its restart`).toEqual([]);
    }
    console.log(`election restart: ${answers.length} /health + /metrics answers from restarted slaves, ${answers.filter((s) => s.phase === 'starting').length} before etcd answered, none master`);
    expect(answers.some((s) => s.phase === 'starting')).toBe(true); // the window before etcd's first answer was watched
  }, 120_000);
});

describe('without an election block nothing changes (issue 27 item 1)', () => {
  test('the configured master says master from its first answer and delivers at once', async () => {
    const [port, managementPort] = [await freePort(), await freePort()];
    const dir = tempDir('whisker-no-election-');
    const path = writeConfig(dir, { serviceId: 'solo', socketServer: { host: '127.0.0.1', port }, management: { host: '127.0.0.1', port: managementPort } });
    const watch = new RoleWatch(managementPort);
    const broker = await startProcess(path);
    await watch.until((s) => s.status !== 'starting', 5_000, 'a first answer of the running broker');
    const seen = await watch.stop();
    // while it starts the management port answers 503 `starting` (no role): then master from the first answer
    const running = seen.filter((s) => s.status !== 'starting');
    expect(seen.filter((s) => s.status === 'starting' && (s.code !== 503 || s.role !== undefined))).toEqual([]);
    expect(running[0]).toMatchObject({ code: 200, status: 'ok', role: 'master', metricRole: 1 });
    expect(running.filter((s) => s.role !== 'master')).toEqual([]);
    const listener = await connect('solo-listener', broker.hostSpec);
    const inbox = new Inbox();
    await listener.listen('orders/v1/1', inbox.listener).ready;
    const producer = await connect('solo-producer', broker.hostSpec, { sendTimeout: 1_500 });
    await producer.send('orders/v1/1', { n: 1 });
    await inbox.waitFor(1, 5_000);
    await sleep(200);
    expect(inbox.items.map((item) => item.msg)).toEqual([{ n: 1 }]);
  }, 60_000);
});
