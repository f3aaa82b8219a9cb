import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { broker, connect, Inbox, tempDir, type TestBroker } from '../support/harness.js';
import { loadOrCreateKeys } from '../../src/link/keys.js';
import { start } from '../support/cli-process.js';

/**
 * Issue 29 item 5: `whisker sub --count N` prints N messages and takes no more than N: with
 * `--consume` it acks exactly those and leaves the rest untouched (nothing delivered and handed
 * back, so nothing requeued, dead-lettered or dropped, even at requeueLimit 1); in listen mode
 * no message beyond N is taken from the listener group. It holds the subscription to what is
 * left with the `flow` frame (docs/protocol.md#flow). Needs `npm run build`.
 */
const keys = tempDir('whisker-cli-keys-');
const as = (b: TestBroker, client = 'cli-counter') => ['--host', b.hostSpec, '--client', client, '--keys', keys];
/** one run, killed after 10 s: a run that waits for a message the queue no longer has fails, not hangs */
async function runOnce(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const running = start(args);
  const timer = setTimeout(() => running.child.kill('SIGKILL'), 10_000);
  const code = await running.exited;
  clearTimeout(timer);
  return { code, stdout: running.stdout(), stderr: running.stderr() };
}
const numbers = (stdout: string) => stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { data: { n: number }; nbRequeues: number });

describe('sub --consume --count', () => {
  test('N runs of --count 1 on N waiting messages at requeueLimit 1: each printed once, none requeued, none dead-lettered, queue empty', async () => {
    const b = await broker({ requeueLimit: 1, channels: { 'jobs/v1': { deadLetter: 'dead/v1/jobs' } } });
    const producer = await connect('producer', b.hostSpec);
    const total = 5;
    for (let n = 1; n <= total; n++) await producer.send('jobs/v1/a', { n });
    const printed: Array<{ n: number; nbRequeues: number }> = [];
    for (let round = 1; round <= total; round++) {
      const result = await runOnce(['sub', 'jobs/v1/*', '--consume', '--count', '1', '--json', ...as(b)]);
      expect(result.code, `round ${round}: ${result.stderr}`).toBe(0);
      printed.push(...numbers(result.stdout).map((l) => ({ n: l.data.n, nbRequeues: l.nbRequeues })));
    }
    const queue = b.router.queues.get('jobs/v1')!;
    console.log(`sub --count 1, ${total} runs at requeueLimit 1: printed ${printed.map((p) => p.n).join(',')}; counters ${JSON.stringify(queue.counters)}`);
    expect(printed).toEqual([1, 2, 3, 4, 5].map((n) => ({ n, nbRequeues: 0 })));
    expect(queue.counters).toMatchObject({ delivered: total, acked: total, requeued: 0, deadLettered: 0, dropped: 0 });
    expect(queue.size).toBe(0);
    expect(b.router.queues.get('dead/v1')?.size ?? 0).toBe(0);
    await producer.disconnect();
  }, 60_000);

  test('--count 4 twice on 10 waiting messages (a channel prefetch of 3): 8 printed once and acked, the 2 left never delivered', async () => {
    const b = await broker({ requeueLimit: 1, channels: { 'jobs/v1': { prefetch: 3, deadLetter: 'dead/v1/jobs' } } });
    const producer = await connect('producer', b.hostSpec);
    for (let n = 1; n <= 10; n++) await producer.send('jobs/v1/a', { n });
    const printed: number[] = [];
    for (const round of [1, 2]) {
      const result = await runOnce(['sub', 'jobs/v1/*', '--consume', '--count', '4', '--json', ...as(b)]);
      expect(result.code, `round ${round}: ${result.stderr}`).toBe(0);
      printed.push(...numbers(result.stdout).map((l) => l.data.n));
    }
    expect(printed).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const queue = b.router.queues.get('jobs/v1')!;
    expect(queue.counters).toMatchObject({ delivered: 8, acked: 8, requeued: 0, deadLettered: 0, dropped: 0 });
    const next = await runOnce(['sub', 'jobs/v1/*', '--consume', '--count', '2', '--json', ...as(b)]);
    expect(numbers(next.stdout).map((l) => ({ n: l.data.n, nbRequeues: l.nbRequeues }))).toEqual([{ n: 9, nbRequeues: 0 }, { n: 10, nbRequeues: 0 }]);
    await producer.disconnect();
  }, 60_000);
});

describe('sub --count (listen)', () => {
  test('sharing a listener group with an application of the same name: --count 2 takes 2, the application gets all the others, none lost or twice', async () => {
    const b = await broker({ requeueLimit: 1 });
    loadOrCreateKeys(keys, 'shared-name'); // the CLI's key pair: one name, one key
    const app = await connect('shared-name', b.hostSpec, { keysDirectory: keys, keysName: 'shared-name' });
    const inbox = new Inbox();
    await app.listen('feed/v1/*', inbox.listener).ready;
    const cli = start(['sub', 'feed/v1/*', '--count', '2', '--json', ...as(b, 'shared-name')]);
    await cli.waitFor('stderr', /listening to/);
    const producer = await connect('producer', b.hostSpec);
    const total = 8;
    // one publish frame: the listener group hands them out round-robin in one turn
    await Promise.all(Array.from({ length: total }, (_, i) => producer.send('feed/v1/a', { n: i + 1 })));
    expect(await cli.exited, cli.stderr()).toBe(0);
    const printed = numbers(cli.stdout()).map((l) => l.data.n);
    expect(printed).toHaveLength(2);
    await inbox.waitFor(total - 2).catch(() => undefined);
    const queue = b.router.queues.get('feed/v1')!;
    const appGot = inbox.items.map((i) => (i.msg as { n: number }).n);
    console.log(`listen --count 2 beside a same-name listener: cli ${printed.join(',')}, app ${appGot.join(',')}; counters ${JSON.stringify(queue.counters)}`);
    expect([...printed, ...appGot].sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(inbox.items.every((i) => i.info!.nbRequeues === 0)).toBe(true);
    expect(queue.counters).toMatchObject({ requeued: 0, deadLettered: 0, dropped: 0 });
    await Promise.all([app.disconnect(), producer.disconnect()]);
  }, 60_000);
});
