import '../support/uncaught.js'; // first: an unhandled rejection from connect() fails the test
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../src/protocol/errors.js';
import { broker, clientConfig, Inbox, once, freePort, unconnected } from '../support/harness.js';

/** issue #16 faults 2 and 3: connect() alike in both forms, codes on every error, keys a rebuilt client can keep. */

const fast = { connectTimeout: 300, reconnect: { initialMs: 50, maxMs: 200 } };

describe('connect() with no broker up (fault 2)', () => {
  test('await connect() rejects with E_TIMEOUT, the client keeps trying, and connects when the broker comes up', async () => {
    const port = await freePort();
    const c = unconnected();
    await expect(c.connect(clientConfig('late', `127.0.0.1:${port}@whisker`, fast))).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    const connected = once(c, 'connect');
    const b = await broker({ socketServer: { port } });
    await connected;
    expect(c.isConnected()).toBe(true);
    const inbox = new Inbox();
    await c.listen('t/v1/1', inbox.listener).ready;
    await c.send('t/v1/1', 'after the timeout');
    expect((await inbox.waitFor(1))[0]!.msg).toBe('after the timeout');
    expect(b.port).toBe(port);
  });

  test('an unawaited connect() with an error listener never crashes: E_TIMEOUT goes to the listener', async () => {
    const port = await freePort();
    const c = unconnected();
    const errors = new Inbox<WhiskerError>();
    c.on('error', (error) => errors.push(error));
    void c.connect(clientConfig('late', `127.0.0.1:${port}@whisker`, fast)); // the Kitten-MQ README's event form
    expect((await errors.waitFor(1))[0]!.code).toBe('E_TIMEOUT');
    const connected = once(c, 'connect');
    await broker({ socketServer: { port } });
    await connected;
  });

  test('the callback form gets the same E_TIMEOUT, then the connect event', async () => {
    const port = await freePort();
    const c = unconnected();
    const calls: (WhiskerError | null)[] = [];
    await new Promise<void>((resolve) => c.connect(clientConfig('late', `127.0.0.1:${port}@whisker`, fast), (err) => (calls.push(err), resolve())));
    expect(calls.map((e) => e?.code)).toEqual(['E_TIMEOUT']);
    const connected = once(c, 'connect');
    await broker({ socketServer: { port } });
    await connected;
    expect(calls).toHaveLength(1);
  });
});

describe('every connect() error has a code (fault 2)', () => {
  test('a second connect() with other hosts or name is E_ALREADY_CONNECTED, connect() after disconnect() is E_DISCONNECTED', async () => {
    const b = await broker();
    const c = unconnected();
    await c.connect(clientConfig('app', b.hostSpec));
    await expect(c.connect(clientConfig('other', b.hostSpec))).rejects.toMatchObject({ code: 'E_ALREADY_CONNECTED' });
    // the same config again (the Kitten-MQ README calls connect twice) joins the first call
    await c.connect(clientConfig('app', b.hostSpec));
    expect(c.isConnected()).toBe(true);
    await c.disconnect();
    await expect(c.connect(clientConfig('app', b.hostSpec))).rejects.toMatchObject({ code: 'E_DISCONNECTED' });
  });

  test.each([
    ['no hosts', { hosts: [] }],
    ['a bad clientId', { clientId: '../etc' }],
    ['a bad host', { hosts: ['ws://[::1'] }],
    ['a bad connectTimeout', { connectTimeout: -1 }],
    ['a negative dedupeWindow (0 turns it off)', { dedupeWindow: -1 }],
  ])('%s is E_BAD_ARGUMENT', async (_name, extra) => {
    const c = unconnected();
    await expect(c.connect({ ...clientConfig('app', '127.0.0.1:1@x'), ...extra })).rejects.toMatchObject({ code: 'E_BAD_ARGUMENT' });
  });
});

describe('keys (fault 3)', () => {
  test('a rebuilt client with a new key pair is told its name is registered with another key', async () => {
    const b = await broker();
    const first = unconnected();
    await first.connect(clientConfig('billing', b.hostSpec));
    await first.disconnect();
    const rebuilt = unconnected();
    const keysDirectory = mkdtempSync(join(tmpdir(), 'whisker-rebuilt-')); // a fresh container: no key files
    const error = await rebuilt.connect({ ...clientConfig('billing', b.hostSpec), keysDirectory }).catch((e: WhiskerError) => e);
    expect(error).toMatchObject({ code: 'E_AUTH' });
    expect((error as WhiskerError).message).toMatch(/^Client name billing is registered with another key; see whisker keys revoke billing\b/);
    expect((error as WhiskerError).details).toMatchObject({ reason: 'other-key' });
  });

  test('a key pair given as PEM text (a secret) connects from two fresh processes under one name, and no file is written', async () => {
    const b = await broker();
    const pair = generateKeyPairSync('ed25519');
    const privateKey = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(); // as read from an environment variable
    const keysDirectory = join(mkdtempSync(join(tmpdir(), 'whisker-nokeys-')), 'keys');
    for (const instance of [1, 2]) {
      const c = unconnected();
      await c.connect({ ...clientConfig('container-app', b.hostSpec), keysDirectory, privateKey });
      expect(c.isConnected(), `instance ${instance}`).toBe(true);
      await c.disconnect();
    }
    expect(existsSync(keysDirectory)).toBe(false);
    const registered = readFileSync(join(b.config.registeredClientsPath, 'container-app.pub'), 'utf8');
    expect(registered).toBe(pair.publicKey.export({ type: 'spki', format: 'pem' }).toString());
  });

  test('a publicKey that is not the half of privateKey, or a private key that does not parse, is E_KEYS', async () => {
    const c = unconnected();
    const one = generateKeyPairSync('ed25519');
    const other = generateKeyPairSync('ed25519');
    const privateKey = one.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const publicKey = other.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await expect(c.connect({ ...clientConfig('app', '127.0.0.1:1@x'), privateKey, publicKey })).rejects.toMatchObject({ code: 'E_KEYS' });
    await expect(unconnected().connect({ ...clientConfig('app', '127.0.0.1:1@x'), privateKey: 'not a key' })).rejects.toMatchObject({ code: 'E_KEYS' });
  });

  test('a client that makes a new key pair says where, as a process warning', async () => {
    const b = await broker();
    const warnings = new Inbox<Error>();
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const keysDirectory = join(mkdtempSync(join(tmpdir(), 'whisker-newkeys-')), 'keys');
      const c = unconnected();
      await c.connect({ ...clientConfig('fresh', b.hostSpec), keysDirectory });
      const [warning] = await warnings.waitFor(1);
      expect(warning!.name).toBe('WhiskerWarning');
      expect(warning!.message).toContain(join(keysDirectory, 'client.pem'));
      expect(existsSync(join(keysDirectory, 'client.pub'))).toBe(true);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
