import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../src/protocol/errors.js';
import type { ChannelString, SendInfo } from '../../src/client/types.js';
import { MemoryStore } from '../../src/broker/store/memory.js';
import { startBroker } from '../../src/server/start.js';
import { broker, brokerConfig, clientConfig, connect, Inbox, tempDir, type TestBroker, unconnected, freePort } from '../support/harness.js';
import { newKeyPair, RawPeer } from '../support/raw-peer.js';

/**
 * Hostile and bad input (SPEC §3, §12, issue 2 "Bad input"): a peer that breaks the protocol
 * gets E_PROTOCOL and is closed, and the broker keeps serving everyone else; a client library
 * call with bad arguments fails with its code.
 */


/** a listener and a producer on the broker under attack: each check is one message end to end */
async function bystanders(b: TestBroker): Promise<{ stillServed(): Promise<void> }> {
  const [listener, producer] = await Promise.all([connect('bystander', b.hostSpec), connect('producer', b.hostSpec)]);
  const inbox = new Inbox();
  await listener.listen('alive/v1/*', inbox.listener).ready;
  let sent = 0;
  return {
    async stillServed() {
      sent++;
      await producer.send(`alive/v1/${sent}`, { n: sent });
      const items = await inbox.waitFor(sent);
      expect(items[sent - 1]!.msg).toEqual({ n: sent });
      expect(listener.isConnected() && producer.isConnected()).toBe(true);
    },
  };
}

function message(channel: string, data: unknown = 1): Record<string, unknown> {
  return { messageId: 'f'.repeat(32), channel, data, created: Date.now() };
}

/** the error a callback-style send reports, with its info */
function sendResult(c: ReturnType<typeof unconnected>, channel: unknown, data: unknown): Promise<{ err: WhiskerError | null; info: SendInfo }> {
  return new Promise((resolve) => c.send(channel as ChannelString, data, (err, _result, info) => resolve({ err, info })));
}

interface BadFrame {
  readonly name: string;
  /** sent before the handshake, or once authenticated */
  readonly phase: 'before auth' | 'after auth';
  readonly data: string | Buffer;
}

const json = (value: unknown) => JSON.stringify(value);

const badFrames: readonly BadFrame[] = [
  { name: 'a frame that is not JSON', phase: 'before auth', data: '{"type": "auth",' },
  { name: 'a frame that is not JSON', phase: 'after auth', data: 'hello broker' },
  { name: 'an empty frame', phase: 'after auth', data: '' },
  { name: 'a JSON array', phase: 'before auth', data: '[{"type":"auth"}]' },
  { name: 'a JSON array', phase: 'after auth', data: '[1,2,3]' },
  { name: 'a JSON number', phase: 'before auth', data: '42' },
  { name: 'a JSON number', phase: 'after auth', data: '1e999' },
  { name: 'JSON null', phase: 'after auth', data: 'null' },
  { name: 'a JSON string', phase: 'after auth', data: '"publish"' },
  { name: 'an unknown frame type', phase: 'before auth', data: json({ type: 'shutdown' }) },
  { name: 'an unknown frame type', phase: 'after auth', data: json({ type: 'deliver', messages: [] }) },
  { name: 'a frame without a type', phase: 'after auth', data: json({ messages: [] }) },
  { name: 'a frame of type __proto__', phase: 'after auth', data: '{"type":"__proto__"}' },
  { name: 'a frame of type constructor', phase: 'after auth', data: json({ type: 'constructor' }) },
  { name: 'a frame whose type is not a string', phase: 'after auth', data: json({ type: ['publish'] }) },
  { name: 'publish before auth', phase: 'before auth', data: json({ type: 'publish', messages: [message('sneak/v1/1')] }) },
  { name: 'subscribe before auth', phase: 'before auth', data: json({ type: 'subscribe', req: 1, sub: 1, mode: 'listen', endpoint: 'alive', version: 'v1', ids: ['*'] }) },
  { name: 'ack before auth', phase: 'before auth', data: json({ type: 'ack', acks: [] }) },
  { name: 'a binary frame', phase: 'before auth', data: Buffer.from(json({ type: 'auth', protocol: 1, token: 'x' })) },
  { name: 'a binary frame', phase: 'after auth', data: Buffer.from(json({ type: 'publish', messages: [message('alive/v1/1')] })) },
  { name: 'a second auth frame after authentication', phase: 'after auth', data: json({ type: 'auth', protocol: 1, token: 'x.y.z' }) },
  { name: 'auth whose token is not a string', phase: 'before auth', data: json({ type: 'auth', protocol: 1, token: { alg: 'none' } }) },
  { name: 'auth without a protocol version', phase: 'before auth', data: json({ type: 'auth', token: 'x.y.z' }) },
  { name: 'subscribe with ids not an array', phase: 'after auth', data: json({ type: 'subscribe', req: 1, sub: 1, mode: 'listen', endpoint: 'alive', version: 'v1', ids: '*' }) },
  { name: 'subscribe with ids that are not strings', phase: 'after auth', data: json({ type: 'subscribe', req: 1, sub: 1, mode: 'listen', endpoint: 'alive', version: 'v1', ids: [1, null] }) },
  { name: 'subscribe with req as a string', phase: 'after auth', data: json({ type: 'subscribe', req: '1', sub: 1, mode: 'listen', endpoint: 'alive', version: 'v1', ids: ['*'] }) },
  { name: 'subscribe with a negative sub', phase: 'after auth', data: json({ type: 'subscribe', req: 1, sub: -1, mode: 'listen', endpoint: 'alive', version: 'v1', ids: ['*'] }) },
  { name: 'subscribe with an unknown mode', phase: 'after auth', data: json({ type: 'subscribe', req: 1, sub: 1, mode: 'steal', endpoint: 'alive', version: 'v1', ids: ['*'] }) },
  { name: 'publish with messages not an array', phase: 'after auth', data: json({ type: 'publish', messages: message('alive/v1/1') }) },
  { name: 'publish of a message without data', phase: 'after auth', data: json({ type: 'publish', messages: [{ ...message('alive/v1/1'), data: undefined }] }) },
  { name: 'publish with a channel that is not a string', phase: 'after auth', data: json({ type: 'publish', messages: [{ ...message('x'), channel: ['alive', 'v1', '1'] }] }) },
  { name: 'publish with created not an integer', phase: 'after auth', data: json({ type: 'publish', messages: [{ ...message('alive/v1/1'), created: 'now' }] }) },
  { name: 'ack with ok not a boolean', phase: 'after auth', data: json({ type: 'ack', acks: [{ sub: 1, messageId: 'm', via: '1', ok: 'yes' }] }) },
  { name: 'ack with a negative delaySeconds', phase: 'after auth', data: json({ type: 'ack', acks: [{ sub: 1, messageId: 'm', via: '1', ok: false, delaySeconds: -5 }] }) },
  { name: 'addIds with ids not an array', phase: 'after auth', data: json({ type: 'addIds', req: 1, sub: 1, ids: { 0: 'a' } }) },
  // frames between mirror brokers, from a client: it cannot pose as a peer
  { name: 'peerState from a client', phase: 'after auth', data: json({ type: 'peerState', serviceId: 'whisker', configuredMaster: true, isMaster: true }) },
  { name: 'follow from a client', phase: 'after auth', data: json({ type: 'follow' }) },
  { name: 'offer from a client', phase: 'after auth', data: json({ type: 'offer', messages: [{ messageId: 'm', queue: 'alive/v1', id: '1', data: 1, created: 1, acceptedAt: 1, from: 'x' }] }) },
  // a client cannot revoke or bind another client's key (SPEC §4: peers only)
  { name: 'keys from a client', phase: 'after auth', data: json({ type: 'keys', req: 1, bound: [], revoked: [{ name: 'victim', key: 'x' }] }) },
  { name: 'keys with more than 500 bindings', phase: 'after auth', data: json({ type: 'keys', req: 1, bound: Array.from({ length: 501 }, (_, i) => ({ name: `n${i}`, key: 'x' })), revoked: [] }) },
];

describe('a malformed frame gets E_PROTOCOL and closes that connection only', () => {
  test.each(badFrames)('$name, $phase', async ({ phase, data }) => {
    const b = await broker();
    const others = await bystanders(b);
    const peer = await RawPeer.open(b.port);
    if (phase === 'after auth') await peer.login('attacker', newKeyPair());
    peer.sendRaw(data);
    const { error } = await peer.refusal();
    expect(error.code).toBe('E_PROTOCOL');
    expect(b.sessions.size).toBe(2);
    expect(b.router.queues.has('sneak/v1')).toBe(false);
    await others.stillServed();
  });

  test('a frame sent before the welcome, while the auth is being checked, is refused too', async () => {
    const b = await broker();
    const others = await bystanders(b);
    const peer = await RawPeer.open(b.port);
    const refused = peer.authenticate('attacker', { keys: newKeyPair() });
    peer.sendJson({ type: 'publish', messages: [message('sneak/v1/1')] });
    expect(await refused).toMatchObject({ code: 'E_PROTOCOL' });
    await peer.closed;
    expect(peer.frames.some((f) => f.type === 'welcome')).toBe(false);
    expect(b.router.queues.has('sneak/v1')).toBe(false);
    await others.stillServed();
  });

  test('many bad peers one after another leave the broker serving', async () => {
    const b = await broker();
    const others = await bystanders(b);
    const peers = await Promise.all(badFrames.map(() => RawPeer.open(b.port)));
    peers.forEach((peer, i) => peer.sendRaw(badFrames[i]!.phase === 'before auth' ? badFrames[i]!.data : 'not json'));
    const codes = await Promise.all(peers.map(async (peer) => (await peer.refusal()).error.code));
    expect(new Set(codes)).toEqual(new Set(['E_PROTOCOL']));
    expect(b.sessions.size).toBe(2);
    await others.stillServed();
  });

  test('an unsupported protocol version in auth is E_PROTOCOL', async () => {
    const b = await broker();
    const others = await bystanders(b);
    for (const protocol of [0, 2, 999]) {
      const peer = await RawPeer.open(b.port);
      expect(await peer.authenticate('attacker', { keys: newKeyPair(), protocol })).toMatchObject({ code: 'E_PROTOCOL' });
      await peer.closed;
      await others.stillServed();
    }
  });
});

describe('limits', () => {
  test('a frame over limits.maxPayloadBytes closes the socket with 1009 and the broker keeps serving', async () => {
    const b = await broker({ limits: { maxPayloadBytes: 2048 } });
    const others = await bystanders(b);
    const peer = await RawPeer.open(b.port);
    await peer.login('attacker', newKeyPair());
    peer.sendJson({ type: 'publish', messages: [message('big/v1/1', 'x'.repeat(4096))] });
    expect((await peer.closed).code).toBe(1009);
    expect(b.router.queues.has('big/v1')).toBe(false);
    await others.stillServed();
  });

  test('a frame over the limit before the handshake closes with 1009 too', async () => {
    const b = await broker({ limits: { maxPayloadBytes: 2048 } });
    const others = await bystanders(b);
    const peer = await RawPeer.open(b.port);
    peer.sendRaw('x'.repeat(3000));
    expect((await peer.closed).code).toBe(1009);
    await others.stillServed();
  });

  test.each([
    ['the default store', () => ({})],
    ['the in-memory store', () => ({ store: new MemoryStore() })],
  ] as const)('a payload nested too deeply to re-encode does not crash the broker, with %s', async (_name, options) => {
    const b = await broker({}, options());
    const others = await bystanders(b);
    const inbox = new Inbox();
    const listener = await connect('deep-listener', b.hostSpec);
    await listener.listen('deep/v1/1', inbox.listener).ready;
    const peer = await RawPeer.open(b.port);
    await peer.login('attacker', newKeyPair());
    const depth = 20_000; // 40 kB of brackets: JSON.parse takes it, JSON.stringify overflows the stack
    peer.sendRaw(`{"type":"publish","messages":[{"messageId":"${'d'.repeat(32)}","channel":"deep/v1/1","created":1,"data":${'['.repeat(depth)}${']'.repeat(depth)}}]}`);
    const [result] = (await peer.next('results')).results;
    // either the broker refuses it, or it delivers it like any other message
    if (result!.error === undefined) expect((await inbox.waitFor(1, 3000))[0]!.info.from).toBe('attacker');
    await others.stillServed();
    expect(listener.isConnected()).toBe(true);
  });

  test('two multi-byte sends in one tick, each within the limit, both succeed', async () => {
    const b = await broker({ limits: { maxPayloadBytes: 4096 } });
    const c = await connect('app', b.hostSpec, { sendTimeout: 3000 });
    // 1,000 euro signs: 1,002 UTF-16 units but 3,002 bytes, under the client's 3,584-byte limit
    const data = '€'.repeat(1000);
    await c.send('utf/v1/1', data); // alone, it fits
    const results = await Promise.allSettled([c.send('utf/v1/1', data), c.send('utf/v1/1', data)]);
    expect(results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as WhiskerError).code))).toEqual(['ok', 'ok']);
    expect(b.router.queues.get('utf/v1')!.depth).toBe(3);
  });
});

describe('sends near the limit', () => {
  test('data just under the limit on a channel with a long id is sent or refused with E_TOO_LARGE, never drops the connection', async () => {
    const b = await broker({ limits: { maxPayloadBytes: 4096 } });
    const c = await connect('app', b.hostSpec, { sendTimeout: 3000 });
    const errors: WhiskerError[] = [];
    c.on('error', (err: WhiskerError) => errors.push(err));
    const id = '/'.repeat(256); // escaped on the wire as 768 characters of %2F
    const { err } = await sendResult(c, `ep/v1/${encodeURIComponent(id)}`, 'x'.repeat(3500));
    expect([undefined, 'E_TOO_LARGE']).toContain(err?.code);
    expect(errors.map((e) => e.code)).toEqual([]);
    await c.send('ep/v1/1', 'after');
  });
});

describe('the handshake', () => {
  test('a handshake not finished in time closes the socket', { timeout: 15_000 }, async () => {
    const b = await broker();
    const others = await bystanders(b);
    const started = Date.now();
    const peer = await RawPeer.open(b.port);
    await peer.closed;
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(4500);
    expect(elapsed).toBeLessThan(10_000);
    expect(peer.frames.some((f) => f.type === 'welcome')).toBe(false);
    expect(b.sessions.size).toBe(2);
    await others.stillServed();
  });
});

describe('client-side errors have codes', () => {
  const badChannels: ReadonlyArray<readonly [string, unknown]> = [
    ['version *', 'ep/*/1'],
    ['endpoint *', '*/v/1'],
    ['both *', '*/*/1'],
    ['a missing part', 'ep/v1'],
    ['only an endpoint', 'ep'],
    ['an extra part', 'ep/v1/1/2'],
    ['an empty id', 'ep/v1/'],
    ['an empty endpoint', '/v1/1'],
    ['a space in the endpoint', 'e p/v1/1'],
    ['a dot in the endpoint', 'e.p/v1/1'],
    ['a bad character in the version', 'ep/v#1/1'],
    ['an endpoint of 65 characters', `${'e'.repeat(65)}/v1/1`],
    ['an id of 257 characters', `ep/v1/${'i'.repeat(257)}`],
    ['a broken percent-escape in the id', 'ep/v1/%E0%A4%A'],
    ['the empty string', ''],
  ];

  test.each(badChannels)('send to a channel with %s is E_BAD_CHANNEL', async (_name, channel) => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const { err } = await sendResult(c, channel, { a: 1 });
    expect(err?.code).toBe('E_BAD_CHANNEL');
    await expect(c.send(channel as ChannelString, { a: 1 })).rejects.toMatchObject({ code: 'E_BAD_CHANNEL' });
    expect(b.router.queues.size).toBe(0);
  });

  test.each([42, null, undefined, { endpoint: 'ep', version: 'v1', id: '1' }, ['ep', 'v1', '1']])('send with a non-string channel %j is E_BAD_CHANNEL through the callback', async (channel) => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const { err } = await sendResult(c, channel, { a: 1 });
    expect(err?.code).toBe('E_BAD_CHANNEL');
  });

  test.each(badChannels.filter(([, channel]) => channel !== ''))('listen on a channel with %s gets E_BAD_CHANNEL in the handler', async (_name, channel) => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const errors = new Inbox<WhiskerError>();
    c.listen(channel as ChannelString, (err) => err && errors.push(err));
    const [err] = await errors.waitFor(1);
    expect(err!.code).toBe('E_BAD_CHANNEL');
    expect(b.router.queues.size).toBe(0);
  });

  test('consume on an object-form channel with endpoint * gets E_BAD_CHANNEL in the handler', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const errors = new Inbox<WhiskerError>();
    c.consume({ endpoint: '*', version: 'v1', ids: ['1'] }, (err) => void (err && errors.push(err)));
    const [err] = await errors.waitFor(1);
    expect(err!.code).toBe('E_BAD_CHANNEL');
  });

  test.each([null, undefined])('send of %s is E_NO_VALUE', async (data) => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const { err, info } = await sendResult(c, 'ep/v1/1', data);
    expect(err?.code).toBe('E_NO_VALUE');
    expect(info.channel).toEqual({ endpoint: 'ep', version: 'v1', id: '1' });
    await expect(c.send('ep/v1/1', data as unknown)).rejects.toMatchObject({ code: 'E_NO_VALUE' });
    expect(b.router.queues.size).toBe(0);
  });

  test('send of data that is not JSON-serialisable is E_NO_VALUE', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const data of [cyclic, () => 1, Symbol('x'), 10n]) {
      await expect(c.send('ep/v1/1', data)).rejects.toMatchObject({ code: 'E_NO_VALUE' });
    }
  });

  test('send of data bigger than the broker\'s maxPayloadBytes is E_TOO_LARGE', async () => {
    const b = await broker({ limits: { maxPayloadBytes: 2048 } });
    const c = await connect('app', b.hostSpec);
    await expect(c.send('big/v1/1', 'x'.repeat(4096))).rejects.toMatchObject({ code: 'E_TOO_LARGE' });
    await expect(c.send('big/v1/1', { text: '€'.repeat(1000) })).rejects.toMatchObject({ code: 'E_TOO_LARGE' });
    expect(b.router.queues.has('big/v1')).toBe(false);
    await c.send('big/v1/1', 'small');
    expect(c.isConnected()).toBe(true);
  });

  test('sends past maxBufferedMessages with no broker reachable are E_QUEUE_FULL', async () => {
    const port = await freePort();
    const c = unconnected();
    const connecting = new Promise<WhiskerError | Error | null>((resolve) =>
      c.connect(clientConfig('app', `127.0.0.1:${port}@nobody`, { maxBufferedMessages: 2, connectTimeout: 300 }), resolve),
    );
    const waiting = [sendResult(c, 'ep/v1/1', 1), sendResult(c, 'ep/v1/1', 2)];
    const { err } = await sendResult(c, 'ep/v1/1', 3);
    expect(err?.code).toBe('E_QUEUE_FULL');
    expect(await connecting).toMatchObject({ code: 'E_TIMEOUT' });
    await c.disconnect();
    expect((await Promise.all(waiting)).map((r) => r.err?.code)).toEqual(['E_DISCONNECTED', 'E_DISCONNECTED']);
  });

  test('a send to a broker that is not master fails with E_NO_MASTER and info.storedBy names it', async () => {
    const b = await broker({ isMaster: false, serviceId: 'slave-1' });
    const c = await connect('app', b.hostSpec, { sendTimeout: 300 });
    const { err, info } = await sendResult(c, 'ep/v1/1', { a: 1 });
    expect(err?.code).toBe('E_NO_MASTER');
    expect(info.storedBy).toContain('slave-1');
    await expect(c.send('ep/v1/1', { a: 2 })).rejects.toMatchObject({ code: 'E_NO_MASTER', info: { storedBy: ['slave-1'] } });
  });

  test('sends pending when disconnect() is called fail with E_DISCONNECTED, and so do later sends', async () => {
    const b = await broker({ isMaster: false });
    const c = await connect('app', b.hostSpec);
    const pending = [sendResult(c, 'ep/v1/1', 1), sendResult(c, 'ep/v1/2', 2)];
    await c.disconnect();
    expect((await Promise.all(pending)).map((r) => r.err?.code)).toEqual(['E_DISCONNECTED', 'E_DISCONNECTED']);
    await expect(c.send('ep/v1/1', 3)).rejects.toMatchObject({ code: 'E_DISCONNECTED' });
  });

  test('connect to a port nobody listens on fails with E_TIMEOUT after connectTimeout', async () => {
    const port = await freePort();
    const c = unconnected();
    const started = Date.now();
    await expect(c.connect(clientConfig('app', `127.0.0.1:${port}@nobody`, { connectTimeout: 300 }))).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(c.isConnected()).toBe(false);
  });

  test.each(['client.pem', 'client.pub'])('connect with only %s of the key pair fails with E_KEYS', async (present) => {
    const b = await broker();
    const keysDirectory = tempDir();
    mkdirSync(keysDirectory, { recursive: true });
    const pair = newKeyPair();
    writeFileSync(
      join(keysDirectory, present),
      present.endsWith('.pem') ? pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) : pair.publicKeyPem,
    );
    const c = unconnected();
    await expect(c.connect(clientConfig('app', b.hostSpec, { keysDirectory }))).rejects.toMatchObject({ code: 'E_KEYS' });
    const viaCallback = await new Promise<WhiskerError | Error | null>((resolve) => unconnected().connect(clientConfig('app', b.hostSpec, { keysDirectory }), resolve));
    expect(viaCallback).toMatchObject({ code: 'E_KEYS' });
    expect(b.sessions.size).toBe(0);
  });
});

describe('broker-side refusals have codes', () => {
  test('a full queue with overflow reject refuses the send with E_QUEUE_FULL', async () => {
    const b = await broker({ channels: { 'jobs/v1': { maxItemsInQueue: 2, overflow: 'reject' } } });
    const p = await connect('prod', b.hostSpec);
    await p.send('jobs/v1/1', 1);
    await p.send('jobs/v1/2', 2);
    const { err, info } = await sendResult(p, 'jobs/v1/3', 3);
    expect(err?.code).toBe('E_QUEUE_FULL');
    expect(info.messageId).toMatch(/^[0-9a-f]{32}$/);
    expect(b.router.queues.get('jobs/v1')!.depth).toBe(2);
  });

  test('a message that does not fit the channel map is E_SCHEMA with details', async () => {
    const b = await broker({ channels: { 'shop/v1': { map: { id: ['int'] } } } });
    const p = await connect('prod', b.hostSpec);
    const { err } = await sendResult(p, 'shop/v1/1', { id: 'B' });
    expect(err?.code).toBe('E_SCHEMA');
    expect(err?.details).toEqual([{ field: 'id', value: 'B', error: expect.any(String) }]);
    const missing = await sendResult(p, 'shop/v1/1', { other: 1 });
    expect(missing.err?.code).toBe('E_SCHEMA');
    expect(missing.err?.details).toEqual([{ field: 'id', error: expect.any(String) }]);
    for (const root of [0, false, '', [], 'text']) {
      await expect(p.send('shop/v1/1', root)).rejects.toMatchObject({ code: 'E_SCHEMA' });
    }
    await p.send('shop/v1/1', { id: 7 });
    expect(b.router.queues.get('shop/v1')!.depth).toBe(1);
  });

  describe('rules', () => {
    const rules = [
      { client: 'a', write: ['x/v1/*'], read: ['x/v1/*'] },
      { client: 'b', write: ['y/v1/*'], read: ['y/v1/*'] },
    ];

    test('a send to a channel the name may not write is E_FORBIDDEN', async () => {
      const b = await broker({ rules });
      const [a, other] = await Promise.all([connect('a', b.hostSpec), connect('b', b.hostSpec)]);
      await expect(other.send('x/v1/1', 1)).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
      const { err } = await sendResult(other, 'x/v1/*', 1);
      expect(err?.code).toBe('E_FORBIDDEN');
      expect(b.router.queues.has('x/v1')).toBe(false);
      await a.send('x/v1/1', 1);
      await other.send('y/v1/1', 1);
    });

    test('listen on a channel the name may not read gets E_FORBIDDEN in the handler', async () => {
      const b = await broker({ rules });
      const [a, other] = await Promise.all([connect('a', b.hostSpec), connect('b', b.hostSpec)]);
      const errors = new Inbox<WhiskerError>();
      const got: unknown[] = [];
      const handle = other.listen('x/v1/1', (err, msg) => (err ? errors.push(err) : got.push(msg)));
      await expect(handle.ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
      const [err] = await errors.waitFor(1);
      expect(err!.code).toBe('E_FORBIDDEN');
      expect(handle.ids).toEqual([]);
      const consumed = new Inbox<WhiskerError>();
      await expect(other.consume('x/v1/*', (e) => void (e && consumed.push(e))).ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
      expect((await consumed.waitFor(1))[0]!.code).toBe('E_FORBIDDEN');
      // a's own listener gets the message, b's refused one never does
      const inbox = new Inbox();
      await a.listen('x/v1/1', inbox.listener).ready;
      await a.send('x/v1/1', 'secret');
      await inbox.waitFor(1);
      expect(got).toEqual([]);
    });
  });
});

describe('one id twice in a frame', () => {
  test('a publish frame that carries a message id twice stores it once, answers both, and it survives a restart', async () => {
    // a retry batched with its original: the second copy once recorded a removal of the first
    const dir = tempDir();
    const config = brokerConfig({}, dir);
    const first = await startBroker(config);
    const peer = await RawPeer.open(first.port);
    await peer.login('twice', newKeyPair());
    const copy = { messageId: 'twice-1', channel: 'twice/v1/1', data: { n: 1 }, created: Date.now() };
    peer.sendJson({ type: 'publish', messages: [copy, copy] });
    const answer = await peer.next('results');
    expect(answer.results).toEqual([{ messageId: 'twice-1' }, { messageId: 'twice-1' }]);
    await peer.terminate();
    await first.stop();
    const second = await startBroker(brokerConfig({}, dir));
    try {
      expect(second.router.queues.get('twice/v1')?.size).toBe(1);
    } finally {
      await second.stop();
    }
  });
});
