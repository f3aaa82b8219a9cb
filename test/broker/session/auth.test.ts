import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { loadOrCreateKeys } from '../../../src/link/keys.js';
import { broker, clientConfig, connect, Inbox, tempDir, type TestBroker, unconnected } from '../../support/harness.js';
import { type KeyPair, newKeyPair, RawPeer, signToken, type TokenClaims, unsignedToken } from '../../support/raw-peer.js';

/**
 * Authentication (SPEC §4): keypair handshake, trust on first use, identity bound to the
 * connection. Refusals are asserted by code, through the client library or a raw peer.
 */

function registeredFile(b: TestBroker, name: string): string {
  return join(b.config.registeredClientsPath, `${name}.pub`);
}

/** the public key the harness generated for a client name */
function clientPublicKey(name: string): string {
  const keysDirectory = clientConfig(name, []).keysDirectory!;
  return loadOrCreateKeys(keysDirectory, 'client').publicKeyPem;
}

async function refusalOf(run: Promise<unknown>): Promise<string | undefined> {
  try {
    await run;
  } catch (error) {
    return (error as WhiskerError).code;
  }
  return undefined;
}

/** the code a connect callback reports */
function connectCode(name: string, hosts: string, extra: Parameters<typeof clientConfig>[2] = {}): Promise<string | undefined> {
  return new Promise((resolve) => unconnected().connect(clientConfig(name, hosts, extra), (err) => resolve((err as WhiskerError | null)?.code)));
}

/** a raw peer registered (trust on first use) as `name`, with its own key pair */
async function registeredPeer(b: TestBroker, name: string, keys = newKeyPair()): Promise<{ peer: RawPeer; keys: KeyPair }> {
  const peer = await RawPeer.open(b.port);
  await peer.login(name, keys);
  return { peer, keys };
}

describe('registration on first use', () => {
  test('the first connection of a name writes <registeredClientsPath>/<name>.pub with its key', async () => {
    const b = await broker();
    expect(existsSync(registeredFile(b, 'app'))).toBe(false);
    await connect('app', b.hostSpec);
    expect(existsSync(registeredFile(b, 'app'))).toBe(true);
    expect(readFileSync(registeredFile(b, 'app'), 'utf8').trim()).toBe(clientPublicKey('app').trim());
  });

  test('a second, different key pair for a registered name is refused with E_AUTH, and the file is unchanged', async () => {
    const b = await broker();
    await connect('app', b.hostSpec);
    const before = readFileSync(registeredFile(b, 'app'), 'utf8');
    const other = { keysDirectory: tempDir() };
    await expect(connect('app', b.hostSpec, other)).rejects.toMatchObject({ code: 'E_AUTH' });
    expect(await connectCode('app', b.hostSpec, other)).toBe('E_AUTH');
    expect(readFileSync(registeredFile(b, 'app'), 'utf8')).toBe(before);
    await connect('app', b.hostSpec); // the first key still works
  });

  test('two first handshakes of one name with different keys at once: exactly one registers', async () => {
    const b = await broker();
    const [p1, p2] = await Promise.all([RawPeer.open(b.port), RawPeer.open(b.port)]);
    const [k1, k2] = [newKeyPair(), newKeyPair()];
    const answers = await Promise.all([p1.authenticate('twin', { keys: k1 }), p2.authenticate('twin', { keys: k2 })]);
    const outcomes = answers.map((a) => ('type' in a ? 'welcome' : a.code)).sort();
    expect(outcomes).toEqual(['E_AUTH', 'welcome']);
    const winner = 'type' in answers[0]! ? k1 : k2;
    expect(readFileSync(registeredFile(b, 'twin'), 'utf8').trim()).toBe(winner.publicKeyPem.trim());
  });

  test.each(['ES256', 'ES512'] as const)('an %s key registers and authenticates too', async (algorithm) => {
    const b = await broker();
    const keys = newKeyPair(algorithm);
    await registeredPeer(b, 'ec-client', keys);
    const again = await RawPeer.open(b.port);
    expect(await again.authenticate('ec-client', { keys, sendPublicKey: false })).toMatchObject({ type: 'welcome' });
  });

  test('an unknown name without a public key is refused with E_AUTH', async () => {
    const b = await broker();
    const peer = await RawPeer.open(b.port);
    expect(await peer.authenticate('nokey', { keys: newKeyPair(), sendPublicKey: false })).toMatchObject({ code: 'E_AUTH' });
    await peer.closed;
    expect(existsSync(registeredFile(b, 'nokey'))).toBe(false);
  });

  test('a public key that is not a key is refused with E_AUTH', async () => {
    const b = await broker();
    const peer = await RawPeer.open(b.port);
    const keys = newKeyPair();
    const token = await signToken(keys, { iss: 'junk', aud: peer.hello.serviceId, nonce: peer.nonce });
    peer.sendJson({ type: 'auth', protocol: 1, token, publicKey: '-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n' });
    expect((await peer.refusal()).error.code).toBe('E_AUTH');
    expect(existsSync(registeredFile(b, 'junk'))).toBe(false);
  });
});

describe('forged and replayed tokens', () => {
  test('a token signed by another key for a registered name is E_AUTH', async () => {
    const b = await broker();
    await connect('app', b.hostSpec);
    const attacker = await RawPeer.open(b.port);
    expect(await attacker.authenticate('app', { keys: newKeyPair() })).toMatchObject({ code: 'E_AUTH' });
    await attacker.closed;
    expect(b.sessions.size).toBe(1);
  });

  test('a token made for another socket\'s nonce (a replay) is E_AUTH', async () => {
    const b = await broker();
    const { keys } = await registeredPeer(b, 'a');
    const first = await RawPeer.open(b.port);
    const token = await signToken(keys, { iss: 'a', aud: first.hello.serviceId, nonce: first.nonce });
    expect(await first.sendAuth(token, { keys })).toMatchObject({ type: 'welcome' });
    const second = await RawPeer.open(b.port);
    expect(second.nonce).not.toBe(first.nonce);
    expect(await second.sendAuth(token, { keys })).toMatchObject({ code: 'E_AUTH' });
    await second.closed;
  });

  test('a token with a wrong aud is E_SERVICE_ID', async () => {
    const b = await broker({ serviceId: 'svc-right' });
    const { keys } = await registeredPeer(b, 'a');
    const peer = await RawPeer.open(b.port);
    expect(await peer.authenticate('a', { keys, serviceId: 'svc-wrong' })).toMatchObject({ code: 'E_SERVICE_ID' });
    await peer.closed;
  });

  test('a wrong aud from an unknown name is E_SERVICE_ID and registers nothing', async () => {
    const b = await broker({ serviceId: 'svc-right' });
    const peer = await RawPeer.open(b.port);
    expect(await peer.authenticate('stranger', { keys: newKeyPair(), serviceId: 'svc-wrong' })).toMatchObject({ code: 'E_SERVICE_ID' });
    expect(existsSync(registeredFile(b, 'stranger'))).toBe(false);
  });

  test('a hosts string with a wrong @serviceId reaches connect\'s rejection as E_SERVICE_ID', async () => {
    const b = await broker({ serviceId: 'svc-right' });
    const hosts = `127.0.0.1:${b.port}@svc-wrong`;
    expect(await refusalOf(connect('app', hosts))).toBe('E_SERVICE_ID');
    expect(await connectCode('app', hosts)).toBe('E_SERVICE_ID');
    expect(existsSync(registeredFile(b, 'app'))).toBe(false);
  });

  const now = () => Math.floor(Date.now() / 1000);
  const badClaims: ReadonlyArray<readonly [string, (nonce: string, aud: string) => TokenClaims]> = [
    ['an expired token', (nonce, aud) => ({ iss: 'a', aud, nonce, iat: now() - 200, exp: now() - 60 })],
    ['exp more than 300 s after iat', (nonce, aud) => ({ iss: 'a', aud, nonce, iat: now(), exp: now() + 301 })],
    ['exp an hour after iat', (nonce, aud) => ({ iss: 'a', aud, nonce, iat: now(), exp: now() + 3600 })],
    ['iat an hour in the future', (nonce, aud) => ({ iss: 'a', aud, nonce, iat: now() + 3600, exp: now() + 3660 })],
    ['iat ten minutes in the past', (nonce, aud) => ({ iss: 'a', aud, nonce, iat: now() - 600, exp: now() + 60 })],
    ['no exp', (nonce, aud) => ({ iss: 'a', aud, nonce, exp: undefined })],
    ['no iat', (nonce, aud) => ({ iss: 'a', aud, nonce, iat: undefined, exp: now() + 60 })],
    ['no nonce', (_nonce, aud) => ({ iss: 'a', aud })],
    ['another nonce', (_nonce, aud) => ({ iss: 'a', aud, nonce: 'made-up-nonce' })],
    ['no iss', (nonce, aud) => ({ aud, nonce })],
  ];

  test.each(badClaims)('%s is E_AUTH', async (_name, claims) => {
    const b = await broker();
    const { keys } = await registeredPeer(b, 'a');
    const peer = await RawPeer.open(b.port);
    const token = await signToken(keys, claims(peer.nonce, peer.hello.serviceId));
    expect(await peer.sendAuth(token, { keys })).toMatchObject({ code: 'E_AUTH' });
    await peer.closed;
  });

  test('a token living exactly 300 s is accepted', async () => {
    const b = await broker();
    const { keys } = await registeredPeer(b, 'a');
    const peer = await RawPeer.open(b.port);
    const iat = now();
    const token = await signToken(keys, { iss: 'a', aud: peer.hello.serviceId, nonce: peer.nonce, iat, exp: iat + 300 });
    expect(await peer.sendAuth(token, { keys })).toMatchObject({ type: 'welcome' });
  });

  type TokenMaker = (nonce: string, aud: string, keys: KeyPair) => Promise<string> | string;
  const swapPayload = async (nonce: string, aud: string, keys: KeyPair) => {
    // a genuine token of a, for another nonce, with the payload replaced after signing
    const [header, , signature] = (await signToken(keys, { iss: 'a', aud, nonce: 'old-nonce' })).split('.');
    const payload = Buffer.from(JSON.stringify({ iss: 'a', aud, nonce, iat: now(), exp: now() + 60 })).toString('base64url');
    return `${header}.${payload}.${signature}`;
  };
  const forged: ReadonlyArray<readonly [string, TokenMaker]> = [
    ['an unsigned alg:none token', (nonce, aud) => unsignedToken({ iss: 'a', aud, nonce, iat: now(), exp: now() + 60 })],
    ['a token whose payload was swapped after signing', swapPayload],
    ['a token that is not a JWT', () => 'not-a-jwt'],
    ['an empty token', () => ''],
  ];

  test.each(forged)('%s is E_AUTH', async (_name, makeToken) => {
    const b = await broker();
    const { keys } = await registeredPeer(b, 'a');
    const peer = await RawPeer.open(b.port);
    expect(await peer.sendAuth(await makeToken(peer.nonce, peer.hello.serviceId, keys))).toMatchObject({ code: 'E_AUTH' });
    await peer.closed;
  });
});

describe('socket token', () => {
  test('without #token or with a wrong one the client gets E_TOKEN; with the right one it connects', async () => {
    const b = await broker({ socketServer: { token: 's3cret' } });
    expect(await refusalOf(connect('app', b.hostSpec))).toBe('E_TOKEN');
    expect(await connectCode('app', `${b.hostSpec}#wrong`)).toBe('E_TOKEN');
    expect(await refusalOf(connect('app', `${b.hostSpec}#s3cret-and-more`))).toBe('E_TOKEN');
    expect(existsSync(registeredFile(b, 'app'))).toBe(false);
    const c = await connect('app', `${b.hostSpec}#s3cret`);
    expect(c.isConnected()).toBe(true);
  });

  test('a raw peer with a valid signature but no socket token is E_TOKEN', async () => {
    const b = await broker({ socketServer: { token: 's3cret' } });
    const peer = await RawPeer.open(b.port);
    expect(await peer.authenticate('a', { keys: newKeyPair() })).toMatchObject({ code: 'E_TOKEN' });
    const other = await RawPeer.open(b.port);
    expect(await other.authenticate('a', { keys: newKeyPair(), socketToken: '' })).toMatchObject({ code: 'E_TOKEN' });
    expect(existsSync(registeredFile(b, 'a'))).toBe(false);
  });
});

describe('client names', () => {
  const hostileNames = ['../x', '..\\x', 'a/../../x', '/tmp/x', 'a/b', '', 'x'.repeat(129), 'a\n', 'a b', 'ü', 'x\u0000'];

  test.each(hostileNames)('the name %j is E_AUTH and writes no file anywhere', async (name) => {
    const b = await broker();
    const clients = b.config.registeredClientsPath;
    const everything = () => readdirSync(b.dir, { recursive: true }).map(String).sort();
    const before = everything();
    const peer = await RawPeer.open(b.port);
    expect(await peer.authenticate(name, { keys: newKeyPair() })).toMatchObject({ code: 'E_AUTH' });
    await peer.closed;
    expect(everything()).toEqual(before);
    expect(readdirSync(clients).filter((file) => file.endsWith('.pub'))).toEqual([]);
    expect(existsSync(join(dirname(clients), 'x.pub'))).toBe(false);
  });

  test('the client library refuses a path-traversal clientId before dialing', async () => {
    const b = await broker();
    await expect(unconnected().connect(clientConfig('app', b.hostSpec, { clientId: '../x' }))).rejects.toMatchObject({ code: 'E_BAD_ARGUMENT' });
    expect(b.sessions.size).toBe(0);
  });

  test('autoRegister false: an unknown name is refused with E_AUTH; a pre-registered one connects', async () => {
    const b = await broker({ autoRegister: false });
    expect(await refusalOf(connect('newbie', b.hostSpec))).toBe('E_AUTH');
    expect(existsSync(registeredFile(b, 'newbie'))).toBe(false);
    mkdirSync(b.config.registeredClientsPath, { recursive: true });
    writeFileSync(registeredFile(b, 'known'), clientPublicKey('known'));
    const c = await connect('known', b.hostSpec);
    expect(c.isConnected()).toBe(true);
  });

  test('with rules, a name matching no rule\'s client pattern cannot auto-register', async () => {
    const b = await broker({ rules: [{ client: 'svc-*', read: ['x/v1/*'] }, { client: 'admin', write: ['x/v1/*'] }] });
    expect(await refusalOf(connect('intruder', b.hostSpec))).toBe('E_AUTH');
    expect(await refusalOf(connect('svc', b.hostSpec))).toBe('E_AUTH');
    expect(existsSync(registeredFile(b, 'intruder'))).toBe(false);
    await connect('svc-1', b.hostSpec);
    await connect('admin', b.hostSpec);
    expect(existsSync(registeredFile(b, 'svc-1'))).toBe(true);
  });
});

describe('identity is the verified name and nothing else', () => {
  const rules = [
    { client: 'a', write: ['pub/v1/*'], read: ['pub/v1/*'] },
    { client: 'admin', write: ['cmd/v1/*'] },
    { client: 'watcher', read: ['pub/v1/*', 'cmd/v1/*', 'priv/v1/*'] },
    { client: 'victim', read: ['priv/v1/*'], write: ['priv/v1/*', 'pub/v1/*'] },
  ];

  test('a raw peer authenticated as a publishes as a, whatever the frame claims', async () => {
    const b = await broker({ rules });
    const watcher = await connect('watcher', b.hostSpec);
    const inbox = new Inbox();
    await watcher.listen('pub/v1/*', inbox.listener).ready;
    const { peer } = await registeredPeer(b, 'a');
    const spoofed = { messageId: 'a'.repeat(32), channel: 'pub/v1/1', data: { hi: 1 }, created: Date.now(), from: 'admin', clientId: 'admin' };
    peer.sendJson({ type: 'publish', from: 'admin', clientId: 'admin', iss: 'admin', messages: [spoofed] });
    const results = await peer.next('results');
    expect(results.results).toEqual([{ messageId: 'a'.repeat(32) }]);
    const [got] = await inbox.waitFor(1);
    expect(got!.info.from).toBe('a');
    expect(got!.msg).toEqual({ hi: 1 });
  });

  test('claiming another name in a publish does not grant that name\'s rights', async () => {
    const b = await broker({ rules });
    const { peer } = await registeredPeer(b, 'a');
    peer.sendJson({ type: 'publish', from: 'admin', messages: [{ messageId: 'c'.repeat(32), channel: 'cmd/v1/1', data: 'rm -rf', created: Date.now(), from: 'admin' }] });
    const { results } = await peer.next('results');
    expect(results[0]!.error?.code).toBe('E_FORBIDDEN');
    expect(b.router.queues.has('cmd/v1')).toBe(false);
  });

  test('a second auth frame with another name\'s valid token closes the socket, the name never changes', async () => {
    const b = await broker({ rules });
    const { keys: adminKeys } = await registeredPeer(b, 'admin');
    const { peer } = await registeredPeer(b, 'a');
    const token = await signToken(adminKeys, { iss: 'admin', aud: peer.hello.serviceId, nonce: peer.nonce });
    peer.sendJson({ type: 'auth', protocol: 1, token });
    peer.sendJson({ type: 'publish', messages: [{ messageId: 'c'.repeat(32), channel: 'cmd/v1/1', data: 'x', created: Date.now() }] });
    expect((await peer.refusal()).error.code).toBe('E_PROTOCOL');
    expect(peer.frames.filter((f) => f.type === 'welcome')).toHaveLength(1);
    expect(b.router.queues.has('cmd/v1')).toBe(false);
  });

  test('the attacker receives nothing it did not subscribe to', async () => {
    const b = await broker({ rules });
    const [watcher, victim] = await Promise.all([connect('watcher', b.hostSpec), connect('victim', b.hostSpec)]);
    const seen = new Inbox();
    await watcher.listen({ endpoint: 'pub', version: 'v1', ids: ['*'] }, seen.listener).ready;
    await watcher.listen('priv/v1/*', seen.listener).ready;
    const victimInbox = new Inbox();
    await victim.listen('priv/v1/*', victimInbox.listener).ready;
    const { peer } = await registeredPeer(b, 'a');
    const reply = await peer.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'pub', version: 'v1', ids: ['1'] });
    expect(reply.error).toBeUndefined();
    expect(reply.refused).toBeUndefined();
    // a subscription to a channel a may not read is refused id by id, and delivers nothing
    const refused = await peer.request({ type: 'subscribe', sub: 2, mode: 'listen', endpoint: 'priv', version: 'v1', ids: ['*', '1'] });
    expect(refused.refused?.map((r) => r.error.code)).toEqual(['E_FORBIDDEN', 'E_FORBIDDEN']);
    await victim.send('priv/v1/1', 'private');
    await victim.send('pub/v1/2', 'other id');
    await victim.send('priv/v1/*', 'private to all');
    const last = await victim.send('pub/v1/1', 'for a');
    await seen.waitFor(4);
    await victimInbox.waitFor(2);
    const mine = await peer.delivery(last.messageId);
    expect(mine.data).toBe('for a');
    expect(peer.deliveries().map((d) => d.data)).toEqual(['for a']);
  });

  test('the attacker cannot ack another client\'s in-flight delivery', async () => {
    const b = await broker({ rules: [...rules, { client: 'worker', read: ['pub/v1/*'] }] });
    const worker = await connect('worker', b.hostSpec);
    const held = new Inbox<{ messageId: string }>();
    await worker.consume('pub/v1/1', (_err, _msg, _done, info) => held.push({ messageId: info!.messageId })).ready; // never acks
    const victim = await connect('victim', b.hostSpec);
    const { messageId } = await victim.send('pub/v1/1', 'job');
    await held.waitFor(1);
    const queue = b.router.queues.get('pub/v1')!;
    expect(queue.inFlightCount).toBe(1);
    const { peer } = await registeredPeer(b, 'a');
    const acks = [1, 2, 3].flatMap((sub) => ['1', '*'].map((via) => ({ sub, messageId, via, ok: true })));
    peer.sendJson({ type: 'ack', acks });
    await peer.request({ type: 'subscribe', sub: 1, mode: 'consume', endpoint: 'pub', version: 'v1', ids: ['1'] });
    peer.sendJson({ type: 'ack', acks });
    // frames are handled in order: once this reply is back, both ack frames were processed
    await peer.request({ type: 'unsubscribe', sub: 1 });
    expect(queue.inFlightCount).toBe(1);
    expect(queue.counters.acked).toBe(0);
    expect(queue.has(messageId)).toBe(true);
  });
});
