import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { whisker } from '../../support/broker-process.js';
import { clusterBroker, clusterSpec, elected } from '../../support/cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, freePort, tempDir, until, type TestBroker } from '../../support/harness.js';
import { parseMetrics, samplesOf, valueOf } from '../../support/prom.js';

/**
 * Operating a cluster (SPEC §13, issue 31 item 5): `whisker cluster status` with queue counts
 * and rates per set and the placements, its answer when etcd does not answer, and the per-set
 * metrics. Real etcd, in-process brokers of two sets, the real `whisker` command.
 */
const ON_A = ['qa0/v1', 'qa1/v1', 'qa2/v1'];
const ON_B = ['qb0/v1', 'qb1/v1'];
const pins = { channels: Object.fromEntries([...ON_A.map((q) => [q, { set: 'a' }]), ...ON_B.map((q) => [q, { set: 'b' }])]) };

interface SetStatus {
  name: string;
  placements: number;
  master: string | null;
  epoch: number | null;
  stats: { queues: number; waiting: number; rates: { received: number; delivered: number; acked: number } } | null;
  brokers: Array<{ serviceId: string; isMaster: boolean }>;
}
interface Status {
  set: string;
  etcd: { reachable: boolean; mapRead: boolean };
  sets: SetStatus[];
  placementList?: { placements: Array<{ queue: string; set: string }>; total: number; truncated: boolean };
}

const cli = (b: TestBroker, ...args: string[]) => whisker(['cluster', 'status', '--socket', b.controlSocketPath!, ...args], { timeoutMs: 20_000 });
const statusOf = async (b: TestBroker, ...args: string[]) => {
  const result = await cli(b, '--json', ...args);
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout) as Status;
};
const scrape = async (b: TestBroker) => parseMetrics(await (await fetch(`http://127.0.0.1:${b.managementPort}/metrics`)).text());

describe('operating a cluster (real etcd, two sets)', () => {
  test('cluster status: queue counts and rates per set, masters and epochs, placements listed and bounded; per-set metrics', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const a = await clusterBroker(spec, 'a', 'a1', { ...pins, management: { port: 0 } });
    const b = await clusterBroker(spec, 'b', 'b1', { ...pins, management: { port: 0 } });
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2 && b.cluster!.sets.length === 2, 10_000, 'both sets registered');

    // traffic on one queue of each set, through set a's broker only (E_MOVED routes the rest)
    const producer = await connect('operator-producer', a.hostSpec);
    for (const q of [...ON_A, ...ON_B]) await producer.send(`${q}/x` as `${string}/${string}/${string}`, { first: true });
    let sending = true;
    const traffic = (async () => {
      // a refused send waits a little: a loop of rejections at once would starve the event loop
      while (sending) await Promise.all([producer.send('qa0/v1/x', { n: 1 }), producer.send('qb0/v1/x', { n: 1 })]).catch(() => new Promise((resolve) => setTimeout(resolve, 10)));
    })();

    // every set's numbers are read from a broker of set a: b's come through etcd
    await expect
      .poll(async () => (await statusOf(a)).sets.map((s) => [s.name, s.placements, s.master, s.stats !== null && s.stats.rates.received > 0]), { timeout: 20_000, interval: 500 })
      .toEqual([['a', 3, 'a1', true], ['b', 2, 'b1', true]]);
    const status = await statusOf(a);
    expect(status.set).toBe('a');
    expect(status.etcd).toMatchObject({ reachable: true, mapRead: true });
    expect(status.sets.map((s) => [s.name, s.stats!.queues, s.epoch !== null && s.epoch > 0])).toEqual([['a', 3, true], ['b', 2, true]]);
    // the text: one row per broker, the set's queues and rates on its first row
    const text = await cli(a);
    console.log(`whisker cluster status under traffic:\n${text.stdout}`);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^SET\s+BROKER\s+ADVERTISE\s+ROLE\s+EPOCH\s+QUEUES\s+WAITING\s+IN\/s\s+OUT\/s\s+ACKED\/s/m);
    expect(text.stdout).toMatch(/^b\s+b1\s+127\.0\.0\.1:\d+@b1\s+master\s+\d+\s+2\s+\d+\s+[\d.]+/m);

    // placements: which queue is on which set, sorted, bounded by --limit, filtered by --set
    const listed = await statusOf(a, '--placements', '--limit', '3');
    expect(listed.placementList).toEqual({ placements: [{ queue: 'qa0/v1', set: 'a' }, { queue: 'qa1/v1', set: 'a' }, { queue: 'qa2/v1', set: 'a' }], total: 5, truncated: true });
    expect((await statusOf(b, '--placements', '--set', 'b')).placementList).toEqual({ placements: [{ queue: 'qb0/v1', set: 'b' }, { queue: 'qb1/v1', set: 'b' }], total: 2, truncated: false });
    const listText = await cli(a, '--placements', '-n', '2');
    expect(listText.stdout).toMatch(/^QUEUE\s+SET\nqa0\/v1\s+a\nqa1\/v1\s+a\n/m);
    expect(listText.stdout).toContain('2 of 5 placements shown');
    const badLimit = await cli(a, '--placements', '--limit', 'many');
    expect(badLimit.code).toBe(2);
    // the same over the management HTTP
    const api = (query: string) => fetch(`http://127.0.0.1:${a.managementPort}/api/cluster${query}`);
    const overHttp = (await (await api('?placements=1&set=b')).json()) as Status;
    expect(overHttp.sets.map((s) => s.name)).toEqual(['a', 'b']);
    expect(overHttp.placementList).toEqual({ placements: [{ queue: 'qb0/v1', set: 'b' }], total: 2, truncated: true });
    expect((await api('?placements=0')).status).toBe(400);

    // per-set metrics: the set as a label, never the queue
    const m = await scrape(a);
    expect(samplesOf(m, 'whisker_cluster_info').map((s) => s.labels)).toEqual([{ set: 'a' }]);
    expect(valueOf(m, 'whisker_cluster_sets')).toBe(2);
    expect(valueOf(m, 'whisker_cluster_placements', { set: 'a' })).toBe(3);
    expect(valueOf(m, 'whisker_cluster_placements', { set: 'b' })).toBe(2);
    expect(valueOf(m, 'whisker_cluster_set_brokers', { set: 'b' })).toBe(1);
    expect(valueOf(m, 'whisker_cluster_set_master', { set: 'b' })).toBe(1);
    expect(valueOf(m, 'whisker_cluster_placements_max')).toBe(10_000);

    sending = false;
    await traffic;
    await producer.disconnect();
    // set b stopped: its queues stay placed on it, without a broker or a master
    await b.stop();
    await expect.poll(async () => valueOf(await scrape(a), 'whisker_cluster_set_master', { set: 'b' }), { timeout: 10_000 }).toBe(0);
    const m2 = await scrape(a);
    expect(valueOf(m2, 'whisker_cluster_set_brokers', { set: 'b' })).toBe(0);
    expect(valueOf(m2, 'whisker_cluster_placements', { set: 'b' })).toBe(2);
    const down = await cli(a);
    expect(down.stdout).toMatch(/^b\s+-\s+\(no broker registered: down\)/m);
  }, 90_000);

  test('etcd never reached: cluster status says so at once and exits 1; etcd lost later: the last map, a warning, exit 1', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`; // nothing listens there
    const lonely = await clusterBroker(clusterSpec(nowhere), 'a', 'a9', { management: { port: 0 } });
    const startedAt = performance.now();
    const never = await cli(lonely);
    expect(performance.now() - startedAt).toBeLessThan(10_000);
    expect(never.code).toBe(1);
    expect(never.stdout).toBe('');
    expect(never.stderr).toMatch(/^whisker: a9 has not read the cluster map from etcd since it started \(.+\); no sets or placements to show\n$/);
    const neverJson = await cli(lonely, '--json');
    expect(neverJson.code).toBe(1);
    expect(JSON.parse(neverJson.stdout)).toMatchObject({ etcd: { reachable: false, mapRead: false }, sets: [] });
    expect(samplesOf(await scrape(lonely), 'whisker_cluster_set_master')).toEqual([]);

    const etcd = await startEtcd();
    const a = await clusterBroker(clusterSpec(etcd.url), 'a', 'a1');
    await elected(a);
    await until(() => a.cluster!.sets.length === 1, 10_000, 'set registered');
    expect((await cli(a)).code).toBe(0);
    await etcd.kill();
    await until(() => a.election?.phase === 'etcd-unreachable', 15_000, 'etcd seen unreachable');
    const lost = await cli(a);
    console.log(`whisker cluster status, etcd killed:\n${lost.stdout}${lost.stderr}`);
    expect(lost.code).toBe(1);
    expect(lost.stdout).toMatch(/^a\s+a1\s+/m); // the map as last read
    expect(lost.stderr).toMatch(/^whisker: etcd does not answer a1 \(.+\): the sets above are as it last read them/);
  }, 90_000);

  test('a broker that takes the request and never answers (frozen): cluster status gives up after 5 s, exit 1', async () => {
    const path = join(tempDir(), 'whisker.sock');
    const held: Socket[] = [];
    const silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => silent.listen(path, resolve));
    try {
      const startedAt = performance.now();
      const result = await whisker(['cluster', 'status', '--socket', path], { timeoutMs: 20_000 });
      const tookMs = performance.now() - startedAt;
      console.log(`cluster status against a silent socket: exit ${result.code} after ${tookMs.toFixed(0)} ms`);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`whisker: no answer from ${path} within 5 s\n`);
      expect(tookMs).toBeLessThan(10_000);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  }, 30_000);
});
