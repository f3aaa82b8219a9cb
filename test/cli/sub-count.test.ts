import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { broker, connect, tempDir, type TestBroker } from '../support/harness.js';
import { run } from '../support/cli-process.js';

/**
 * Issue 29 item 5: `whisker sub --consume --count N` acks what it printed and takes N; with requeueLimit 2, two runs dead-letter nothing
 * and leave the rest waiting (at most one, the one after the Nth, is handed back per run).
 * Needs `npm run build`.
 */
const keys = tempDir('whisker-cli-keys-');
const as = (b: TestBroker) => ['--host', b.hostSpec, '--client', 'cli-counter', '--keys', keys];

describe('sub --count', () => {
  test('--consume --count 4, twice, on 10 waiting messages: 8 printed once each and acked, 2 still waiting, nothing dead-lettered', async () => {
    const b = await broker({ requeueLimit: 2, channels: { 'jobs/v1': { deadLetter: 'dead/v1/jobs' } } });
    const producer = await connect('producer', b.hostSpec);
    for (let n = 1; n <= 10; n++) await producer.send('jobs/v1/a', { n });
    const printed: number[] = [];
    for (const round of [1, 2]) {
      const result = await run(['sub', 'jobs/v1/*', '--consume', '--count', '4', '--json', ...as(b)]);
      expect(result.code, `round ${round}: ${result.stderr}`).toBe(0);
      const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as { data: { n: number }; nbRequeues: number });
      expect(lines).toHaveLength(4);
      printed.push(...lines.map((l) => l.data.n));
    }
    expect(printed).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const queue = b.router.queues.get('jobs/v1')!;
    // at most the one the 4th ack made room for is handed back per run (see src/cli/messaging.ts)
    expect(queue.counters).toMatchObject({ acked: 8, deadLettered: 0, dropped: 0 });
    expect(queue.counters.requeued).toBeLessThanOrEqual(2);
    console.log(`sub --count: 2 runs of --count 4 on 10 messages: acked ${queue.counters.acked}, requeued ${queue.counters.requeued}, dead-lettered ${queue.counters.deadLettered}`);
    expect(b.router.queues.get('dead/v1')?.size ?? 0).toBe(0);
    // the two left are still there for the next consumer
    const next = await run(['sub', 'jobs/v1/*', '--consume', '--count', '2', '--json', ...as(b)]);
    expect(next.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { data: { n: number } }).data.n)).toEqual([9, 10]);
    await producer.disconnect();
  }, 60_000);
});

describe('sub --consume --count at requeueLimit 1 (outside check, atk-kops)', () => {
  test('the one delivery handed back after the Nth is its last: dead-lettered (never silently dropped), the rest wait', async () => {
    const b = await broker({ requeueLimit: 1, channels: { 'jobs/v1': { deadLetter: 'dead/v1/jobs' } } });
    const producer = await connect('producer', b.hostSpec);
    for (let n = 1; n <= 5; n++) await producer.send('jobs/v1/a', { n });
    const result = await run(['sub', 'jobs/v1/*', '--consume', '--count', '2', '--json', ...as(b)]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { data: { n: number } }).data.n)).toEqual([1, 2]);
    const queue = b.router.queues.get('jobs/v1')!;
    // docs/operations.md: N acked; the one the Nth ack made room for used its only delivery
    expect(queue.counters).toMatchObject({ acked: 2, dropped: 0 });
    expect(queue.counters.deadLettered).toBeLessThanOrEqual(1);
    expect(queue.size + queue.counters.deadLettered).toBe(3);
    expect(b.router.queues.get('dead/v1')?.size ?? 0).toBe(queue.counters.deadLettered);
    console.log(`sub --count 2 at requeueLimit 1: acked ${queue.counters.acked}, dead-lettered ${queue.counters.deadLettered}, waiting ${queue.size}`);
    await producer.disconnect();
  }, 60_000);
});
