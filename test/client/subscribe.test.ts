import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../src/protocol/errors.js';
import type { StreamMessage } from '../../src/client/types.js';
import { broker, connect, Inbox } from '../support/harness.js';

/** issue #16 faults 4 and 5, and the modern forms: for-await streams and AbortSignal. */

interface Order {
  sku: string;
  qty: number;
}

describe('handle.ready (fault 4)', () => {
  test('rejects with E_FORBIDDEN when every id is refused; resolves when some are', async () => {
    const b = await broker({ rules: [{ client: '*', read: ['shop/v1/open'], write: ['shop/*'] }] });
    const c = await connect('app', b.hostSpec);
    const errors = new Inbox<WhiskerError>();
    const refused = c.listen('shop/v1/closed', (err) => void (err && errors.push(err)));
    await expect(refused.ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect(errors.items.map((e) => e.code)).toEqual(['E_FORBIDDEN']);
    const partly = c.consume({ endpoint: 'shop', version: 'v1', ids: ['open', 'closed'] }, (err) => void (err && errors.push(err)));
    await partly.ready;
    expect(partly.ids).toEqual(['open']);
  });

  test('rejects with E_BAD_CHANNEL for a malformed channel, and addId on that handle fails the same way, sending nothing', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const handle = c.listen('no-id/v1' as `${string}/${string}/${string}`, () => {});
    await expect(handle.ready).rejects.toMatchObject({ code: 'E_BAD_CHANNEL' });
    await expect(handle.addId('1')).rejects.toMatchObject({ code: 'E_BAD_CHANNEL' });
    expect(handle.ids).toEqual([]);
    expect(c.isConnected()).toBe(true); // no frame for a subscription 0: the broker had nothing to refuse
  });
});

describe('an empty id list (fault 5, reference K59)', () => {
  test('consume({ ids: [] }) is accepted, and addId fills it', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    const inbox = new Inbox();
    const errors = new Inbox<WhiskerError>();
    const handle = c.consume({ endpoint: 'jobs', version: 'v1', ids: [] }, (err, msg, done, info) => {
      if (err) return errors.push(err);
      inbox.push({ msg, info });
      done();
    });
    await handle.ready;
    expect(handle.ids).toEqual([]);
    await p.send('jobs/v1/42', 'waits for a subscriber');
    await handle.addId(42);
    expect(handle.ids).toEqual(['42']);
    const [got] = await inbox.waitFor(1);
    expect(got!.msg).toBe('waits for a subscriber');
    expect(got!.info.channel.id).toBe('42');
    expect(errors.items).toEqual([]);
  });
});

describe('for await (streams)', () => {
  test('consume() without a handler yields typed messages, acked through the message', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    const stream = c.consume<Order>('orders/v1/*', { prefetch: 2 });
    await stream.ready;
    for (const qty of [1, 2, 3]) await p.send<Order>(`orders/v1/eu`, { sku: 'A', qty });
    const seen: number[] = [];
    for await (const msg of stream) {
      seen.push(msg.data.qty);
      expect(msg.info.channel).toEqual({ endpoint: 'orders', version: 'v1', id: 'eu' });
      msg.ack();
      if (seen.length === 3) break;
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(b.router.queues.get('orders/v1')!.depth).toBe(0);
  });

  test('nack(n) brings a message back; leaving the loop requeues the one in hand for the next consumer', async () => {
    const b = await broker();
    const [c, p, next] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec), connect('worker', b.hostSpec)]);
    const stream = c.consume('jobs/v1/1');
    await stream.ready;
    await p.send('jobs/v1/1', 'job');
    const tries: number[] = [];
    let held: StreamMessage | null = null;
    for await (const msg of stream) {
      tries.push(msg.info.nbRequeues);
      if (msg.info.nbRequeues === 0) {
        msg.nack(0.1);
        continue;
      }
      held = msg;
      break; // not settled: requeued at once when the loop ends
    }
    expect(tries).toEqual([0, 1]);
    expect(held).not.toBeNull();
    const inbox = new Inbox();
    await next.consume('jobs/v1/1', inbox.consumer).ready;
    const [got] = await inbox.waitFor(1);
    expect(got!.msg).toBe('job');
    expect(got!.info.nbRequeues).toBe(2);
  });

  test('a stream wholly refused ends its loop with the error code', async () => {
    const b = await broker({ rules: [{ client: '*', read: ['open/v1/*'] }] });
    const c = await connect('app', b.hostSpec);
    const loop = (async () => {
      for await (const _msg of c.listen('closed/v1/*')) throw new Error('nothing may arrive');
    })();
    await expect(loop).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
  });
});

describe('AbortSignal', () => {
  test('aborting a subscription closes it: a handler gets nothing more, a loop ends', async () => {
    const b = await broker();
    const [a, s, witness, p] = await Promise.all(['handler', 'stream', 'witness', 'producer'].map((name) => connect(name, b.hostSpec)));
    const controller = new AbortController();
    const inbox = new Inbox();
    await a!.listen('t/v1/1', { signal: controller.signal }, inbox.listener).ready;
    const stream = s!.listen('t/v1/1', { signal: controller.signal });
    await stream.ready;
    const seen = new Inbox();
    await witness!.listen('t/v1/1', seen.listener).ready;
    const streamed = new Inbox<unknown>();
    const loop = (async () => {
      for await (const msg of stream) streamed.push(msg.data);
      return streamed.items;
    })();
    await p!.send('t/v1/1', 'first');
    await Promise.all([inbox.waitFor(1), seen.waitFor(1), streamed.waitFor(1)]);
    controller.abort();
    await p!.send('t/v1/1', 'second');
    await seen.waitFor(2);
    expect(await loop).toEqual(['first']);
    expect(inbox.items.map((r) => r.msg)).toEqual(['first']);
  });

  test('an aborted send fails with E_ABORTED; one aborted before the call is never sent', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    await expect(c.send('t/v1/1', 'x', { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'E_ABORTED' });
    const controller = new AbortController();
    await b.stop(); // nothing will answer: the send waits for the master
    const sent = c.send('t/v1/1', 'y', { signal: controller.signal });
    controller.abort();
    await expect(sent).rejects.toMatchObject({ code: 'E_ABORTED' });
  });
});
