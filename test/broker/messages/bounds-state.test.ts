import '../../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, writeConfig } from '../../support/broker-process.js';
import { clientConfig, tempDir, unconnected } from '../../support/harness.js';
import { rssMiB } from '../../support/proc.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * Issue 18, fault 4: state that clients create is bounded and forgotten (SPEC §7). Measured on
 * a real broker process through its management HTTP, as an operator (or an attacker) sees it:
 * the queues listed, the metric series, the RSS per queue, id and name (/proc).
 */
interface Started {
  readonly broker: BrokerProcess;
  readonly port: number;
  readonly managementPort: number;
}

async function start(config: Record<string, unknown>): Promise<Started> {
  const managementPort = await freePort();
  const broker = await startProcess(writeConfig(tempDir(), { socketServer: { port: 0 }, management: { port: managementPort }, ...config }));
  return { broker, port: Number(new URL(broker.url).port), managementPort };
}

async function queueNames(s: Started): Promise<string[]> {
  const body = (await (await fetch(`http://127.0.0.1:${s.managementPort}/api/queues`)).json()) as { queues: Array<{ name: string }> };
  return body.queues.map((q) => q.name);
}

async function seriesCount(s: Started, prefix: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${s.managementPort}/metrics`)).text();
  return text.split('\n').filter((line) => line.includes(`queue="${prefix}`)).length;
}

/** one subscribe frame per queue `${prefix}${i}/v1`, all sent at once; resolves on the last reply */
async function subscribeMany(peer: RawPeer, prefix: string, count: number, ids: string[] = ['1']): Promise<void> {
  for (let i = 0; i < count; i++) peer.sendJson({ type: 'subscribe', req: 10_000 + i, sub: i + 1, mode: 'listen', endpoint: `${prefix}${i}`, version: 'v1', ids });
  await peer.next('reply', (r) => r.req === 10_000 + count - 1, 20_000);
}

describe('state clients create', () => {
  test('2,000 queues subscribed once and closed are forgotten after idleQueueTimeout, their metric series too', async () => {
    // a lost connection's groups are held groupHold first (docs/protocol.md#groups): 1 s here
    const s = await start({ idleQueueTimeout: 1, groupHold: 1, limits: { maxSubscriptionsPerConnection: 5000 } });
    const peer = await RawPeer.open(s.port);
    await peer.login('passer-by', newKeyPair());
    await subscribeMany(peer, 'gone', 2000);
    const listed = (await queueNames(s)).length;
    const series = await seriesCount(s, 'gone');
    await peer.terminate();
    const closedAt = performance.now();
    let left = listed;
    for (; left > 0 && performance.now() - closedAt < 6000; ) left = (await queueNames(s)).filter((n) => n.startsWith('gone')).length;
    const forgottenMs = Math.round(performance.now() - closedAt);
    // a slow render is served for up to 10 times as long as it took (docs/management.md#metrics)
    let seriesAfter = series;
    for (; seriesAfter > 0 && performance.now() - closedAt < 12_000; ) seriesAfter = await seriesCount(s, 'gone');
    console.log(`idle queues: ${listed} queues (${series} metric series) while subscribed; ${left} left ${forgottenMs} ms after the connection closed ` +
      `(groupHold 1 s, idleQueueTimeout 1 s), ${seriesAfter} series`);
    expect(listed).toBe(2000);
    expect(left).toBe(0);
    expect(seriesAfter).toBe(0);
  }, 30_000);

  test('limits.maxQueues: a send or subscribe that would make queue 101 is E_LIMIT and creates nothing', async () => {
    const s = await start({ limits: { maxQueues: 100, maxSubscriptionsPerConnection: 5000 } });
    const peer = await RawPeer.open(s.port);
    await peer.login('queue-hog', newKeyPair());
    const messages = Array.from({ length: 150 }, (_, i) => ({ messageId: `q-${i}`, channel: `hog${i}/v1/1`, data: { i }, created: 1 }));
    peer.sendJson({ type: 'publish', messages });
    const { results } = await peer.next('results', () => true, 10_000);
    const refused = results.filter((r) => r.error);
    const reply = await peer.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'hog-more', version: 'v1', ids: ['1'] });
    const existing = await peer.request({ type: 'subscribe', sub: 2, mode: 'listen', endpoint: 'hog0', version: 'v1', ids: ['1'] });
    const names = await queueNames(s);
    console.log(`maxQueues 100: 150 sends to new queues, ${refused.length} refused with ${refused[0]?.error?.code} "${refused[0]?.error?.message}"; ` +
      `a subscribe to a new queue: ${reply.error?.code}; ${names.length} queues`);
    expect(refused.length).toBe(50);
    expect(new Set(refused.map((r) => r.error!.code))).toEqual(new Set(['E_LIMIT']));
    expect(reply.error?.code).toBe('E_LIMIT');
    expect(existing.error).toBeUndefined();
    expect(names.length).toBe(100);
  }, 20_000);

  test('limits.maxRegisteredClients: a new name past it is refused with E_LIMIT, known names still connect', async () => {
    const s = await start({ limits: { maxRegisteredClients: 3 } });
    for (const name of ['n1', 'n2', 'n3']) {
      const peer = await RawPeer.open(s.port);
      await peer.login(name, newKeyPair());
    }
    const late = unconnected();
    const error = await late.connect(clientConfig('n4', s.broker.hostSpec, { connectTimeout: 2000 })).catch((e: unknown) => e as { code?: string; message?: string });
    console.log(`maxRegisteredClients 3: a 4th name got ${error?.code} "${error?.message}"`);
    expect(error).toMatchObject({ code: 'E_LIMIT' });
  }, 20_000);

  test('the cost of a queue, a subscribed id and a registered name, in broker RSS (printed for docs/security.md)', async () => {
    const s = await start({ limits: { maxSubscriptionsPerConnection: 20_000 } });
    const pid = s.broker.child.pid!;
    const peer = await RawPeer.open(s.port);
    await peer.login('measurer', newKeyPair());
    await subscribeMany(peer, 'cost', 1); // warm the paths once
    const base = rssMiB(pid);
    await subscribeMany(peer, 'cost-q', 3000);
    const queues = rssMiB(pid);
    const ids = Array.from({ length: 10_000 }, (_, i) => `id-${i}`);
    await peer.request({ type: 'subscribe', sub: 9_999, mode: 'listen', endpoint: 'cost-ids', version: 'v1', ids });
    const withIds = rssMiB(pid);
    // handshakes grow the heap on their own: 100 first, so what is measured is mostly the names
    const login = async (name: string) => {
      const named = await RawPeer.open(s.port);
      await named.login(name, newKeyPair());
      await named.terminate();
    };
    for (let i = 0; i < 100; i++) await login(`warm-name-${i}`);
    const warm = rssMiB(pid);
    for (let i = 0; i < 200; i++) await login(`cost-name-${i}`);
    const withNames = rssMiB(pid);
    const kib = (mib: number, n: number) => ((mib * 1024) / n).toFixed(2);
    console.log(`cost: a subscribed queue ${kib(queues - base, 3000)} KiB, a subscribed id ${kib(withIds - queues, 10_000)} KiB, ` +
      `a registered name ${kib(withNames - warm, 200)} KiB of RSS (plus its .pub file)`);
    expect(queues - base).toBeLessThan(64);
  }, 60_000);
});
