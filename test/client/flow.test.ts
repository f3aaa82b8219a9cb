import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../src/client/client.js';
import type { WhiskerError } from '../../src/protocol/errors.js';
import { broker, connect, Inbox, once, type TestBroker, until } from '../support/harness.js';

/**
 * handle.pause(), resume(), setLimit() and the `limit` option (docs/client.md#flow, issue 29
 * item 5). The same client also listens to the channel: its listener copies come in the same
 * frames as the consumer's would, so once the listener has a message, a delivery to the held
 * consumer would have come too.
 */
async function setup(): Promise<{ b: TestBroker; mq: WhiskerClient; heard: Inbox; producer: WhiskerClient; send(n: number): Promise<void> }> {
  const b = await broker({ requeueLimit: 1 });
  const mq = await connect('worker', b.hostSpec);
  const heard = new Inbox();
  await mq.listen('jobs/v1/*', heard.listener).ready;
  const producer = await connect('producer', b.hostSpec);
  let sent = 0;
  const send = async (n: number) => {
    for (let i = 0; i < n; i++) await producer.send('jobs/v1/a', { n: ++sent });
    await heard.waitFor(sent);
  };
  return { b, mq, heard, producer, send };
}

const numbers = (inbox: Inbox) => inbox.items.map((i) => (i.msg as { n: number }).n);

describe('flow control on a handle', () => {
  test('consume with { limit: 0 } takes nothing until resume(); setLimit(2) holds two unacked', async () => {
    const { b, mq, send } = await setup();
    const taken = new Inbox();
    const dones: Array<() => void> = [];
    const handle = mq.consume('jobs/v1/*', { prefetch: 10, limit: 0 }, (err, msg, done, info) => {
      if (err) throw err;
      taken.push({ msg, info });
      dones.push(() => done());
    });
    await handle.ready;
    await send(4);
    expect(taken.items).toHaveLength(0);
    expect(handle.setLimit(2)).toBe(true);
    await taken.waitFor(2);
    await send(1);
    expect(numbers(taken)).toEqual([1, 2]);
    dones.splice(0).forEach((done) => done());
    await taken.waitFor(4);
    expect(numbers(taken)).toEqual([1, 2, 3, 4]);
    expect(handle.setLimit(null)).toBe(true); // prefetch 10 again
    await taken.waitFor(5);
    dones.splice(0).forEach((done) => done());
    await until(() => b.router.queues.get('jobs/v1')!.counters.acked === 5 * 2);
    expect(b.router.queues.get('jobs/v1')!.counters).toMatchObject({ requeued: 0, deadLettered: 0, dropped: 0 });
  });

  test('done() then pause() in one turn: the slot the ack frees is not filled (the flow frame goes ahead of the ack)', async () => {
    const { b, mq, send } = await setup();
    const taken = new Inbox();
    const handle = mq.consume('jobs/v1/*', (err, msg, done, info) => {
      if (err) throw err;
      taken.push({ msg, info });
      done();
      handle.pause();
    });
    await handle.ready;
    await send(3);
    await taken.waitFor(1);
    await send(1);
    expect(numbers(taken)).toEqual([1]);
    expect(handle.resume()).toBe(true);
    await taken.waitFor(2);
    await send(1);
    // each delivery pauses it again: one at a time, by hand
    expect(numbers(taken)).toEqual([1, 2]);
    expect(b.router.queues.get('jobs/v1')!.counters).toMatchObject({ requeued: 0, deadLettered: 0, dropped: 0 });
  });

  test('a paused stream keeps what it buffered and takes nothing more until resumed', async () => {
    const { b, mq, send } = await setup();
    const stream = mq.consume<{ n: number }>('jobs/v1/*', { prefetch: 3 });
    await stream.ready;
    await send(2);
    expect(stream.pause()).toBe(true);
    const queue = b.router.queues.get('jobs/v1')!;
    const got: number[] = [];
    for await (const msg of stream) {
      got.push(msg.data.n);
      msg.ack();
      if (got.length === 2) {
        await send(2);
        expect(queue.counters.delivered).toBe(4 + 2); // 4 listener copies, 2 to the stream
        stream.resume();
      }
      if (got.length === 4) break;
    }
    expect(got).toEqual([1, 2, 3, 4]);
  });

  test('a paused subscription is registered paused again after a reconnection', async () => {
    const { b, mq, send } = await setup();
    const taken = new Inbox();
    const handle = mq.consume('jobs/v1/*', taken.consumer);
    await handle.ready;
    handle.pause();
    const back = once(mq, 'reconnect');
    for (const session of b.sessions) if (session.clientName === 'worker') session.close(1001, 'test');
    await back;
    await send(3);
    expect(taken.items).toHaveLength(0);
    handle.resume();
    await taken.waitFor(3);
    expect(taken.items.every((i) => i.info!.nbRequeues === 0)).toBe(true);
  });

  test('a bad limit is E_BAD_ARGUMENT, thrown at once', async () => {
    const { mq } = await setup();
    const handle = mq.consume('jobs/v1/*', () => {});
    for (const bad of [-1, 1.5, NaN, Infinity, '2']) {
      expect(() => mq.listen('jobs/v1/*', { limit: bad as number }, () => {}), String(bad)).toThrow(expect.objectContaining({ code: 'E_BAD_ARGUMENT' }) as WhiskerError);
      expect(() => handle.setLimit(bad as number), String(bad)).toThrow(expect.objectContaining({ code: 'E_BAD_ARGUMENT' }) as WhiskerError);
    }
    expect(() => handle.setLimit(undefined as unknown as number)).toThrow(expect.objectContaining({ code: 'E_BAD_ARGUMENT' }) as WhiskerError);
  });
});
