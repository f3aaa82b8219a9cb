import { describe, expect, test } from 'vitest';
import { broker, connect, Inbox, until } from '../../support/harness.js';
import type { Done } from '../../../src/client/types.js';

/** SPEC §7, one rule a test: who receives what, how many times. */
describe('listen', () => {
  test('fans out across client names: every name gets every message', async () => {
    const b = await broker();
    const [a1, b1, p] = await Promise.all([connect('alice', b.hostSpec), connect('bob', b.hostSpec), connect('prod', b.hostSpec)]);
    const inboxA = new Inbox();
    const inboxB = new Inbox();
    await a1.listen('news/v1/1', inboxA.listener).ready;
    await b1.listen('news/v1/1', inboxB.listener).ready;
    for (let i = 0; i < 5; i++) await p.send('news/v1/1', { i });
    await inboxA.waitFor(5);
    await inboxB.waitFor(5);
    expect(inboxA.items.map((r) => r.msg)).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
    expect(inboxB.items.map((r) => r.msg)).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
  });

  test('round-robins within one name: two processes of a name share the stream, one copy each', async () => {
    const b = await broker();
    const [first, second, p] = await Promise.all([connect('svc', b.hostSpec), connect('svc', b.hostSpec), connect('prod', b.hostSpec)]);
    const one = new Inbox();
    const two = new Inbox();
    await first.listen('news/v1/1', one.listener).ready;
    await second.listen('news/v1/1', two.listener).ready;
    for (let i = 0; i < 6; i++) await p.send('news/v1/1', { i });
    await until(() => one.length + two.length === 6);
    expect(one.items.map((r) => (r.msg as { i: number }).i)).toEqual([0, 2, 4]);
    expect(two.items.map((r) => (r.msg as { i: number }).i)).toEqual([1, 3, 5]);
  });

  test('info carries messageId, channel, created, nbRequeues and the sender name', async () => {
    const b = await broker();
    const [l, p] = await Promise.all([connect('reader', b.hostSpec), connect('writer', b.hostSpec)]);
    const inbox = new Inbox();
    await l.listen('news/v1/a%2Fb', inbox.listener).ready;
    const sent = await p.send('news/v1/a%2Fb', { hello: 'world' });
    const [received] = await inbox.waitFor(1);
    expect(received!.info).toMatchObject({ messageId: sent.messageId, channel: { endpoint: 'news', version: 'v1', id: 'a/b' }, nbRequeues: 0, from: 'writer' });
    expect(typeof received!.info.created).toBe('number');
  });
});

describe('consume', () => {
  test('competing consumers share one id round-robin, each in acceptance order', async () => {
    const b = await broker();
    const [c1, c2, p] = await Promise.all([connect('w1', b.hostSpec), connect('w2', b.hostSpec), connect('prod', b.hostSpec)]);
    const one = new Inbox();
    const two = new Inbox();
    await c1.consume('jobs/v1/1', one.consumer).ready;
    await c2.consume('jobs/v1/1', two.consumer).ready;
    for (let i = 0; i < 10; i++) await p.send('jobs/v1/1', i);
    await until(() => one.length + two.length === 10);
    const a = one.items.map((r) => r.msg as number);
    const c = two.items.map((r) => r.msg as number);
    expect([...a, ...c].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(a).toEqual([...a].sort((x, y) => x - y));
    expect(c).toEqual([...c].sort((x, y) => x - y));
    expect(a.length).toBe(5);
  });

  test('a consumer on * receives every id; a consumer on X and one on * are two groups', async () => {
    const b = await broker();
    const [all, one, p] = await Promise.all([connect('all', b.hostSpec), connect('one', b.hostSpec), connect('prod', b.hostSpec)]);
    const star = new Inbox();
    const x = new Inbox();
    await all.consume('jobs/v1/*', star.consumer).ready;
    await one.consume('jobs/v1/X', x.consumer).ready;
    await p.send('jobs/v1/X', 'to-x');
    await p.send('jobs/v1/Y', 'to-y');
    await star.waitFor(2);
    await x.waitFor(1);
    expect(star.items.map((r) => r.msg)).toEqual(['to-x', 'to-y']);
    expect(x.items.map((r) => r.msg)).toEqual(['to-x']);
    expect(star.items.map((r) => r.info.channel.id)).toEqual(['X', 'Y']);
  });

  test('a send to * reaches every subscribed id, and info.channel.id is *', async () => {
    const b = await broker();
    const [c1, c2, p] = await Promise.all([connect('w1', b.hostSpec), connect('w2', b.hostSpec), connect('prod', b.hostSpec)]);
    const one = new Inbox();
    const two = new Inbox();
    await c1.consume('jobs/v1/1', one.consumer).ready;
    await c2.consume('jobs/v1/2', two.consumer).ready;
    await p.send('jobs/v1/*', 'everyone');
    const [[m1], [m2]] = await Promise.all([one.waitFor(1), two.waitFor(1)]);
    expect(m1!.msg).toBe('everyone');
    expect(m2!.msg).toBe('everyone');
    expect(m1!.info.channel.id).toBe('*');
  });

  test('a message for an id without subscriber waits, then arrives in order', async () => {
    const b = await broker();
    const p = await connect('prod', b.hostSpec);
    for (let i = 0; i < 3; i++) await p.send('jobs/v1/late', i);
    await p.send('jobs/v1/*', 'star');
    const c = await connect('worker', b.hostSpec);
    const inbox = new Inbox();
    c.consume('jobs/v1/late', { prefetch: 10 }, inbox.consumer);
    await inbox.waitFor(4);
    expect(inbox.items.map((r) => r.msg)).toEqual([0, 1, 2, 'star']);
  });

  test('a waiting message is delivered to a later subscriber on *', async () => {
    const b = await broker();
    const p = await connect('prod', b.hostSpec);
    await p.send('jobs/v1/7', 'waiting');
    const c = await connect('worker', b.hostSpec);
    const inbox = new Inbox();
    c.consume('jobs/v1/*', inbox.consumer);
    const [got] = await inbox.waitFor(1);
    expect(got!.msg).toBe('waiting');
    expect(got!.info.channel.id).toBe('7');
  });

  test('a listener and a consumer of one message are two groups, each acks for itself', async () => {
    const b = await broker();
    const [l, c, p] = await Promise.all([connect('audit', b.hostSpec), connect('worker', b.hostSpec), connect('prod', b.hostSpec)]);
    const heard = new Inbox();
    const held: Done[] = [];
    await l.listen('jobs/v1/1', heard.listener).ready;
    await c.consume('jobs/v1/1', (_err, _msg, done) => void held.push(done!)).ready;
    await p.send('jobs/v1/1', 'x');
    await heard.waitFor(1);
    await until(() => held.length === 1);
    const queue = b.router.queues.get('jobs/v1')!;
    await until(() => queue.counters.acked === 1, 2000, 'listener ack');
    expect(queue.size).toBe(1); // the consumer's record is still in flight
    held[0]!();
    await until(() => queue.size === 0, 2000, 'consumer ack');
    expect(queue.counters.acked).toBe(2);
  });
});

describe('prefetch', () => {
  test('a handler holds at most prefetch unacked messages', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('worker', b.hostSpec), connect('prod', b.hostSpec)]);
    const held: Done[] = [];
    await c.consume('jobs/v1/1', { prefetch: 2 }, (_e, _m, done) => void held.push(done!)).ready;
    for (let i = 0; i < 5; i++) await p.send('jobs/v1/1', i);
    await until(() => held.length === 2);
    expect(b.router.queues.get('jobs/v1')!.inFlightCount).toBe(2);
    held[0]!();
    await until(() => held.length === 3);
    expect(held.length).toBe(3);
  });

  test('prefetch is per handler: a stuck message on one id does not block another id', async () => {
    const b = await broker({ channels: { 'jobs/v1': { prefetch: 1 } } });
    const [c1, c2, p] = await Promise.all([connect('w1', b.hostSpec), connect('w2', b.hostSpec), connect('prod', b.hostSpec)]);
    const stuck: unknown[] = [];
    const free = new Inbox();
    await c1.consume('jobs/v1/1', (_e, msg) => void stuck.push(msg)).ready;
    await c2.consume('jobs/v1/2', free.consumer).ready;
    await p.send('jobs/v1/1', 'never acked');
    await p.send('jobs/v1/1', 'behind it');
    for (let i = 0; i < 3; i++) await p.send('jobs/v1/2', i);
    await free.waitFor(3);
    expect(stuck).toEqual(['never acked']);
  });
});

describe('requeue', () => {
  test('done(false) redelivers at once with nbRequeues counting earlier deliveries', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('worker', b.hostSpec), connect('prod', b.hostSpec)]);
    const inbox = new Inbox();
    await c.consume('jobs/v1/1', (_e, msg, done, info) => {
      inbox.push({ msg, info: info! });
      done!(info!.nbRequeues >= 2);
    }).ready;
    await p.send('jobs/v1/1', 'retry me');
    await inbox.waitFor(3);
    expect(inbox.items.map((r) => r.info.nbRequeues)).toEqual([0, 1, 2]);
    await until(() => b.router.queues.get('jobs/v1')!.size === 0);
  });

  test('done(false, n) redelivers no earlier than n seconds later, without blocking others', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('worker', b.hostSpec), connect('prod', b.hostSpec)]);
    const times: Array<{ msg: unknown; at: number }> = [];
    await c.consume('jobs/v1/1', (_e, msg, done, info) => {
      times.push({ msg, at: Date.now() });
      if (msg === 'later' && info!.nbRequeues === 0) done!(false, 0.4);
      else done!();
    }).ready;
    await p.send('jobs/v1/1', 'later');
    await p.send('jobs/v1/1', 'next');
    await until(() => times.length === 3);
    expect(times.map((t) => t.msg)).toEqual(['later', 'next', 'later']);
    expect(times[2]!.at - times[0]!.at).toBeGreaterThanOrEqual(390);
  });

  test('a delivery not acked within requeueInterval is redelivered', async () => {
    const b = await broker({ requeueInterval: 0.2 });
    const [c, p] = await Promise.all([connect('worker', b.hostSpec), connect('prod', b.hostSpec)]);
    const seen: number[] = [];
    await c.consume('jobs/v1/1', (_e, _msg, done, info) => {
      seen.push(info!.nbRequeues);
      if (info!.nbRequeues > 0) done!();
    }).ready;
    await p.send('jobs/v1/1', 'slow');
    await until(() => seen.length === 2);
    expect(seen).toEqual([0, 1]);
    expect(b.router.queues.get('jobs/v1')!.counters.timedOut).toBe(1);
  });

  test('after requeueLimit deliveries a message is dropped and counted', async () => {
    const b = await broker({ requeueLimit: 3 });
    const [c, p] = await Promise.all([connect('worker', b.hostSpec), connect('prod', b.hostSpec)]);
    let deliveries = 0;
    await c.consume('jobs/v1/1', (_e, _m, done) => {
      deliveries++;
      done!(false);
    }).ready;
    await p.send('jobs/v1/1', 'poison');
    const queue = b.router.queues.get('jobs/v1')!;
    await until(() => queue.counters.dropped === 1);
    expect(deliveries).toBe(3);
    expect(queue.size).toBe(0);
  });

  test('after requeueLimit a message goes to the dead-letter channel with its envelope', async () => {
    const b = await broker({ channels: { 'jobs/v1': { requeueLimit: 2, deadLetter: 'dead/v1/jobs' } } });
    const [c, d, p] = await Promise.all([connect('worker', b.hostSpec), connect('janitor', b.hostSpec), connect('prod', b.hostSpec)]);
    await c.consume('jobs/v1/1', (_e, _m, done) => done!(false)).ready;
    const dead = new Inbox();
    await d.consume('dead/v1/jobs', dead.consumer).ready;
    const sent = await p.send('jobs/v1/1', { task: 'poison' });
    const [letter] = await dead.waitFor(1);
    expect(letter!.msg).toMatchObject({ channel: 'jobs/v1/1', messageId: sent.messageId, nbDeliveries: 2, from: 'prod', data: { task: 'poison' } });
    expect(b.router.queues.get('jobs/v1')!.counters.deadLettered).toBe(1);
  });
});

describe('dead letters per group', () => {
  test('a message failing in two groups gives two dead letters, one per group', async () => {
    const b = await broker({ channels: { 'jobs/v1': { requeueLimit: 1, deadLetter: 'dead/v1/jobs' } } });
    const [c1, c2, d, p] = await Promise.all([connect('w1', b.hostSpec), connect('w2', b.hostSpec), connect('janitor', b.hostSpec), connect('prod', b.hostSpec)]);
    await c1.consume('jobs/v1/1', (_e, _m, done) => done!(false)).ready;
    await c2.consume('jobs/v1/*', (_e, _m, done) => done!(false)).ready;
    const dead = new Inbox();
    await d.consume('dead/v1/jobs', { prefetch: 5 }, dead.consumer).ready;
    await p.send('jobs/v1/1', 'poison');
    const letters = await dead.waitFor(2);
    expect(new Set(letters.map((l) => l.info.messageId)).size).toBe(2);
  });
});

describe('limits and expiry', () => {
  test('a message not delivered within ttl expires', async () => {
    const b = await broker({ channels: { 'jobs/v1': { ttl: 0.15 } } });
    const p = await connect('prod', b.hostSpec);
    await p.send('jobs/v1/1', 'stale');
    const queue = b.router.queues.get('jobs/v1')!;
    await until(() => queue.counters.expired === 1, 2000, 'expiry');
    // the consumer is there before the fresh send: a connect slower than the ttl (a loaded
    // machine) would let the fresh message expire too
    const c = await connect('worker', b.hostSpec);
    const inbox = new Inbox();
    await c.consume('jobs/v1/1', inbox.consumer).ready;
    await p.send('jobs/v1/1', 'fresh');
    const [only] = await inbox.waitFor(1);
    expect(only!.msg).toBe('fresh');
    await until(() => queue.size === 0, 2000, 'ack of the fresh message');
    expect(queue.counters.expired).toBe(1);
  });

  test('maxItemsInQueue drops the oldest waiting message of that id', async () => {
    const b = await broker({ maxItemsInQueue: 3 });
    const p = await connect('prod', b.hostSpec);
    for (let i = 1; i <= 5; i++) await p.send('jobs/v1/1', i);
    const queue = b.router.queues.get('jobs/v1')!;
    expect(queue.depth).toBe(3);
    expect(queue.counters.dropped).toBe(2);
    const c = await connect('worker', b.hostSpec);
    const inbox = new Inbox();
    c.consume('jobs/v1/1', { prefetch: 5 }, inbox.consumer);
    await inbox.waitFor(3);
    expect(inbox.items.map((r) => r.msg)).toEqual([3, 4, 5]);
  });

  test('overflow reject refuses the send with E_QUEUE_FULL and keeps what was queued', async () => {
    const b = await broker({ channels: { 'jobs/v1': { maxItemsInQueue: 2, overflow: 'reject' } } });
    const p = await connect('prod', b.hostSpec);
    await p.send('jobs/v1/1', 1);
    await p.send('jobs/v1/1', 2);
    await expect(p.send('jobs/v1/1', 3)).rejects.toMatchObject({ code: 'E_QUEUE_FULL' });
    expect(b.router.queues.get('jobs/v1')!.depth).toBe(2);
  });

  test('overflow reject holds for pipelined sends, unawaited ones too: the bound counts sends still being stored', async () => {
    // found by the atk-kclient check: five pipelined sends to a fresh queue with maxItemsInQueue 1
    // were all accepted (depth 5), each checked against the depth before any was stored
    const b = await broker({ channels: { 'jobs/v1': { maxItemsInQueue: 2, overflow: 'reject' }, 'logs/v1': { maxItemsInQueue: 2, overflow: 'reject' } } });
    const p = await connect('prod', b.hostSpec);
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => p.send('jobs/v1/1', i)));
    expect(results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code: string }).code))).toEqual(['ok', 'ok', 'E_QUEUE_FULL', 'E_QUEUE_FULL', 'E_QUEUE_FULL']);
    expect(b.router.queues.get('jobs/v1')!.depth).toBe(2);
    // Kitten style: no callback, no await; each refusal reaches `error` once, with its message id
    const errors: Array<{ code: string; messageId?: string }> = [];
    p.on('error', (e) => errors.push({ code: e.code, messageId: (e as { info?: { messageId?: string } }).info?.messageId }));
    for (let i = 0; i < 4; i++) void p.send('logs/v1/a', i);
    await until(() => errors.length === 2 && b.router.queues.get('logs/v1')?.depth === 2);
    expect(errors.map((e) => e.code)).toEqual(['E_QUEUE_FULL', 'E_QUEUE_FULL']);
    expect(errors.every((e) => typeof e.messageId === 'string' && e.messageId.length === 32)).toBe(true);
  });

  test('a refused operation creates no queue', async () => {
    const b = await broker({ rules: [{ client: 'prod', write: ['ok/v1/*'] }] });
    const p = await connect('prod', b.hostSpec);
    await expect(p.send('secret/v1/1', 1)).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect(b.router.queues.has('secret/v1')).toBe(false);
  });
});
