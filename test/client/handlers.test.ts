import '../support/uncaught.js'; // first: a handler that crashed the process would fail every test here
import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../src/protocol/errors.js';
import type { DeliveryInfo } from '../../src/client/types.js';
import { broker, connect, Inbox } from '../support/harness.js';

/** issue #16 fault 1: a handler that throws or rejects never crashes; the message comes back later, with an `error` event. */
const retry = { handlerRetry: { initialSeconds: 0.2, factor: 2, maxSeconds: 5 } };

async function setup() {
  const b = await broker();
  const [c, p] = await Promise.all([connect('worker', b.hostSpec, retry), connect('producer', b.hostSpec)]);
  const errors = new Inbox<WhiskerError>();
  c.on('error', (error) => errors.push(error));
  return { b, c, p, errors };
}

describe('handler errors (docs/client.md#handlers)', () => {
  test('a listener that throws: the process lives, error carries the message id and channel, the message comes back after the back-off', async () => {
    const { c, p, errors } = await setup();
    const tries = new Inbox<{ info: DeliveryInfo; at: number }>();
    await c.listen('jobs/v1/7', (err, _msg, info) => {
      if (err) throw err;
      tries.push({ info, at: Date.now() });
      if (info.nbRequeues === 0) throw new Error('listener bug');
    }).ready;
    const { messageId } = await p.send('jobs/v1/7', { n: 1 });
    const [first, second] = await tries.waitFor(2);
    expect(second!.info.messageId).toBe(messageId);
    expect(second!.info.nbRequeues).toBe(1);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(180); // initialSeconds 0.2
    const [error] = await errors.waitFor(1);
    expect(error!.code).toBe('E_HANDLER');
    expect(error!.details).toMatchObject({ messageId, channel: { endpoint: 'jobs', version: 'v1', id: '7' }, nbRequeues: 0 });
    expect((error!.cause as Error).message).toBe('listener bug');
    expect(errors.length).toBe(1);
  });

  test('an async consumer that rejects is requeued with a delay growing with nbRequeues, and reported each time', async () => {
    const { c, p, errors } = await setup();
    const tries = new Inbox<number>();
    await c.consume('jobs/v1/1', async (err, _msg, _done, info) => {
      if (err) throw err;
      tries.push(Date.now());
      if (info.nbRequeues < 2) throw new Error(`try ${info.nbRequeues} fails`);
    }).ready;
    await p.send('jobs/v1/1', { n: 1 });
    const [t0, t1, t2] = await tries.waitFor(3);
    expect(t1! - t0!).toBeGreaterThanOrEqual(180); // 0.2 s
    expect(t2! - t1!).toBeGreaterThanOrEqual(380); // 0.4 s
    expect((await errors.waitFor(2)).map((e) => e.code)).toEqual(['E_HANDLER', 'E_HANDLER']);
    // the third try resolved: acked, never delivered again
    const late = await tries.waitFor(4, 1200).catch(() => null);
    expect(late).toBeNull();
  });

  test('a sync consumer that throws after calling done() keeps its ack, and is still reported', async () => {
    const { c, p, errors } = await setup();
    const tries = new Inbox<number>();
    await c.consume('jobs/v1/2', (err, _msg, done, info) => {
      if (err) throw err;
      tries.push(info.nbRequeues);
      done();
      throw new Error('after the ack');
    }).ready;
    await p.send('jobs/v1/2', { n: 1 });
    await tries.waitFor(1);
    expect((await errors.waitFor(1))[0]!.code).toBe('E_HANDLER');
    expect(await tries.waitFor(2, 600).catch(() => null)).toBeNull();
  });

  test('an async consumer that resolves is acked; one that called done(false) itself is requeued as it asked', async () => {
    const { c, p } = await setup();
    const tries = new Inbox<number>();
    await c.consume('jobs/v1/3', async (err, msg, done, info) => {
      if (err) throw err;
      tries.push(info.nbRequeues);
      if ((msg as { retry: boolean }).retry && info.nbRequeues === 0) done(false);
    }).ready;
    await p.send('jobs/v1/3', { retry: false });
    await p.send('jobs/v1/3', { retry: true });
    expect(await tries.waitFor(3)).toEqual([0, 0, 1]);
    expect(await tries.waitFor(4, 600).catch(() => null)).toBeNull();
  });

  test('a handler that rethrows a refusal (`if (err) throw err`) does not crash: the refusal reaches `error`', async () => {
    const b = await broker({ rules: [{ client: '*', read: ['open/v1/*'], write: ['open/v1/*'] }] });
    const c = await connect('worker', b.hostSpec);
    const errors = new Inbox<WhiskerError>();
    c.on('error', (error) => errors.push(error));
    const handle = c.listen('closed/v1/1', (err) => {
      if (err) throw err;
    });
    await expect(handle.ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect((await errors.waitFor(1))[0]!.code).toBe('E_FORBIDDEN');
  });

  test('without an error listener a failing handler is a process warning, not a crash', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('worker', b.hostSpec, retry), connect('producer', b.hostSpec)]);
    const warnings = new Inbox<Error>();
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const tries = new Inbox<number>();
      await c.consume('jobs/v1/4', (err, _msg, done, info) => {
        if (err) throw err;
        tries.push(info.nbRequeues);
        if (info.nbRequeues === 0) throw new Error('boom');
        done();
      }).ready;
      await p.send('jobs/v1/4', 1);
      expect(await tries.waitFor(2)).toEqual([0, 1]);
      const [warning] = await warnings.waitFor(1);
      expect((warning as WhiskerError).code).toBe('E_HANDLER');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
