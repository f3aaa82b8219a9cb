import { describe, expect, test } from 'vitest';
import { startBroker } from '../../src/server/start.js';
import { broker, brokerConfig, clientConfig, connect, Inbox, once, tempDir, unconnected, until, freePort } from '../support/harness.js';

/** SPEC §3: the client library as an application sees it. */

describe('connect', () => {
  test('a dead host in hosts does not block connecting to a live one', async () => {
    const b = await broker();
    const dead = await freePort();
    const started = Date.now();
    const c = await connect('app', [`127.0.0.1:${dead}@other`, b.hostSpec], { connectTimeout: 5000 });
    expect(c.isConnected()).toBe(true);
    expect(Date.now() - started).toBeLessThan(2000);
    const inbox = new Inbox();
    await c.listen('t/v1/1', inbox.listener).ready;
    await c.send('t/v1/1', 'alive');
    await inbox.waitFor(1);
  });

  test('the callback form fires once with null', async () => {
    const b = await broker();
    const c = unconnected();
    const calls: unknown[] = [];
    await new Promise<void>((resolve) => c.connect(clientConfig('app', b.hostSpec), (err) => { calls.push(err); resolve(); }));
    expect(calls).toEqual([null]);
  });

  test('an IPv6 host and a ws:// scheme are understood', async () => {
    const b = await broker({ socketServer: { host: '::1' } });
    const c = await connect('app', `ws://[::1]:${b.port}@${b.config.serviceId}`);
    expect(c.isConnected()).toBe(true);
  });
});

describe('calls before the connection is up', () => {
  test('send and listen made before connect() run once it is connected', async () => {
    const b = await broker();
    const c = unconnected();
    const inbox = new Inbox();
    const handle = c.listen('t/v1/1', inbox.listener);
    const sent = c.send('t/v1/1', 'queued');
    await c.connect(clientConfig('app', b.hostSpec));
    await handle.ready;
    await sent;
    const [got] = await inbox.waitFor(1);
    expect(got!.msg).toBe('queued');
  });
});

describe('callbacks and promises', () => {
  test('send with a callback gets (null, null, info) with the message id', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const info = await new Promise<{ messageId: string; channel: unknown }>((resolve, reject) =>
      c.send('t/v1/9', { a: 1 }, (err, result, i) => (err ? reject(err) : (expect(result).toBeNull(), resolve(i)))),
    );
    expect(info.messageId).toMatch(/^[0-9a-f]{32}$/);
    expect(info.channel).toEqual({ endpoint: 't', version: 'v1', id: '9' });
  });

  test('addId and removeId change what a handle receives; each callback fires once', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('app', b.hostSpec), connect('prod', b.hostSpec)]);
    const inbox = new Inbox();
    const handle = c.listen('t/v1/1', inbox.listener);
    await handle.ready;
    const calls: unknown[] = [];
    await new Promise<void>((resolve) => handle.addId(['2', 3], (err) => { calls.push(err); resolve(); }));
    expect(handle.ids).toEqual(['1', '2', '3']);
    expect(handle._handler.ids).toEqual(['1', '2', '3']);
    await p.send('t/v1/3', 'three');
    await inbox.waitFor(1);
    await handle.removeId('1');
    expect(handle.ids).toEqual(['2', '3']);
    await p.send('t/v1/1', 'not for me');
    await p.send('t/v1/2', 'two');
    await inbox.waitFor(2);
    expect(inbox.items.map((r) => r.msg)).toEqual(['three', 'two']);
    expect(calls).toEqual([null]);
  });

  test('a consumer returning a promise is acked when it resolves and requeued when it rejects', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('app', b.hostSpec), connect('prod', b.hostSpec)]);
    const seen: number[] = [];
    await c.consume('t/v1/1', async (_e, _m, _done, info) => {
      seen.push(info!.nbRequeues);
      if (info!.nbRequeues === 0) throw new Error('first try fails');
    }).ready;
    await p.send('t/v1/1', 'x');
    await until(() => seen.length === 2);
    await until(() => b.router.queues.get('t/v1')!.size === 0);
    expect(seen).toEqual([0, 1]);
  });

  test('handle.close() stops deliveries and requeues nothing it acked', async () => {
    const b = await broker();
    const [c, p] = await Promise.all([connect('app', b.hostSpec), connect('prod', b.hostSpec)]);
    const inbox = new Inbox();
    const handle = c.consume('t/v1/1', inbox.consumer);
    await handle.ready;
    await p.send('t/v1/1', 1);
    await inbox.waitFor(1);
    await handle.close();
    await p.send('t/v1/1', 2);
    const queue = b.router.queues.get('t/v1')!;
    expect(queue.depth).toBe(1);
    expect(inbox.length).toBe(1);
  });
});

describe('roles', () => {
  test('a slave stores a send without answering it; promoted by a reload, it settles that send and delivers', async () => {
    const b = await broker({ isMaster: false });
    const [c, p] = await Promise.all([connect('app', b.hostSpec), connect('prod', b.hostSpec, { sendTimeout: 10_000 })]);
    const inbox = new Inbox();
    const handle = c.consume('t/v1/1', inbox.consumer);
    let settled = false;
    const sent = p.send('t/v1/1', 'held by the slave').then((info) => ((settled = true), info));
    await until(() => b.router.queues.get('t/v1')?.depth === 1, 2000, 'stored by the slave');
    expect(settled).toBe(false);
    expect(inbox.length).toBe(0);
    const promoted = once(p, 'master');
    b.reload(brokerConfig({ isMaster: true }, b.dir));
    expect(await promoted).toBe('whisker');
    await sent;
    await handle.ready;
    const [got] = await inbox.waitFor(1);
    expect(got!.msg).toBe('held by the slave');
  });

  test('without a master a send fails with E_NO_MASTER naming the slaves that stored it', async () => {
    const b = await broker({ isMaster: false, serviceId: 'slave-1' });
    const p = await connect('prod', b.hostSpec, { sendTimeout: 300 });
    const error = await p.send('t/v1/1', 'x').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'E_NO_MASTER', info: { storedBy: ['slave-1'] } });
  });
});

describe('connection state', () => {
  test('isConnected tracks a lost broker, and the client reconnects and re-subscribes after a restart', async () => {
    const dir = tempDir();
    const config = brokerConfig({}, dir);
    let b = await startBroker(config);
    const port = b.port;
    const c = await connect('app', `127.0.0.1:${port}@whisker`);
    const p = await connect('prod', `127.0.0.1:${port}@whisker`);
    const inbox = new Inbox();
    await c.consume('t/v1/1', inbox.consumer).ready;
    await p.send('t/v1/1', 'before');
    await inbox.waitFor(1);
    await until(() => b.router.queues.get('t/v1')!.size === 0, 2000, 'the ack');

    const lost = once(c, 'disconnect');
    await b.stop();
    await lost;
    expect(c.isConnected()).toBe(false);

    const back = once(c, 'reconnect');
    b = await startBroker(brokerConfig({ socketServer: { port } }, dir));
    try {
      await back;
      expect(c.isConnected()).toBe(true);
      await until(() => b.router.queues.get('t/v1') !== undefined, 5000, 're-subscription');
      await p.send('t/v1/1', 'after');
      await inbox.waitFor(2);
      expect(inbox.items.map((r) => r.msg)).toEqual(['before', 'after']);
    } finally {
      await c.disconnect();
      await p.disconnect();
      await b.stop();
    }
  });

  test('a send made while every broker is down waits in the buffer and is sent on reconnect', async () => {
    const dir = tempDir();
    let b = await startBroker(brokerConfig({}, dir));
    const port = b.port;
    const c = await connect('app', `127.0.0.1:${port}@whisker`);
    const lost = once(c, 'disconnect');
    await b.stop();
    await lost;
    const sent = c.send('t/v1/1', 'buffered');
    b = await startBroker(brokerConfig({ socketServer: { port } }, dir));
    try {
      await sent;
      expect(b.router.queues.get('t/v1')!.depth).toBe(1);
    } finally {
      await c.disconnect();
      await b.stop();
    }
  });

  test('disconnect() emits disconnect after the sockets are closed', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    let emitted = false;
    c.on('disconnect', () => {
      emitted = true;
      expect(c.isConnected()).toBe(false);
    });
    await c.disconnect();
    expect(emitted).toBe(true);
    await until(() => b.sessions.size === 0);
  });
});
