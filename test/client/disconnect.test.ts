import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import type { Done } from '../../src/client/types.js';
import { broker, connect, Inbox, type Received, until } from '../support/harness.js';

/**
 * Issue 27 item 12 (SPEC §3): `disconnect()` first writes the acks and nacks already made, so a
 * `done()` just before it is never lost: the broker does not requeue what was acked.
 */
const N = 50;
const ROUNDS = 20;

describe('disconnect() right after done()', () => {
  test(`consume ${N}, done() each, disconnect at once, ${ROUNDS} times: nothing is requeued, nothing comes back`, async () => {
    const b = await broker({ requeueInterval: 60 });
    const producer = await connect('acks-producer', b.hostSpec);
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all(Array.from({ length: N }, (_, i) => producer.send(`acks/v1/${i % 5}`, { round, i })));
      const consumer = await connect('acks-consumer', b.hostSpec);
      const held: Done[] = [];
      const got = new Inbox<number>();
      await consumer.consume('acks/v1/*', { prefetch: N }, (err, _msg, done) => {
        if (err) throw err;
        held.push(done!);
        got.push(held.length);
      }).ready;
      await got.waitFor(N);
      for (const done of held) done();
      await consumer.disconnect();
      const queue = b.router.queues.get('acks/v1')!;
      expect({ round, waiting: queue.size, requeued: queue.counters.requeued }).toEqual({ round, waiting: 0, requeued: 0 });
    }
    // a consumer coming back gets the next message and nothing before it
    const again = await connect('acks-consumer', b.hostSpec);
    const after = new Inbox<Received>();
    await again.consume('acks/v1/*', after.consumer).ready;
    await producer.send('acks/v1/0', { sentinel: true });
    await after.waitFor(1);
    expect(after.items.map((r) => [r.msg, r.info.nbRequeues ?? 0])).toEqual([[{ sentinel: true }, 0]]);
    expect(b.router.queues.get('acks/v1')!.counters.requeued).toBe(0);
  }, 60_000);

  test('a delayed nack (done(false, 30)) just before disconnect() reaches the broker too: the message waits its 30 s', async () => {
    const b = await broker({ requeueInterval: 60 });
    const producer = await connect('nack-producer', b.hostSpec);
    await producer.send('nacks/v1/1', { n: 1 });
    const consumer = await connect('nack-consumer', b.hostSpec);
    const got = new Inbox<Done>();
    await consumer.consume('nacks/v1/*', (err, _msg, done) => {
      if (err) throw err;
      got.push(done!);
    }).ready;
    const [done] = await got.waitFor(1);
    done!(false, 30);
    await consumer.disconnect();
    // lost, the nack would leave the disconnect's own requeue: delivered again at once
    const again = await connect('nack-consumer', b.hostSpec);
    const after = new Inbox<Received>();
    await again.consume('nacks/v1/*', after.consumer).ready;
    await producer.send('nacks/v1/2', { sentinel: true });
    // what was requeued at once would be delivered before the sentinel
    await after.waitFor(1);
    expect(after.items.map((r) => r.msg)).toEqual([{ sentinel: true }]);
    await until(() => b.router.queues.get('nacks/v1')!.size === 1, 2000, 'the sentinel acked, the nacked message still waiting');
  });
});
