import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { broker, tempDir } from '../support/harness.js';

/**
 * docs/client.md#keys: a client with no key pair makes one. Several processes of one client name
 * (SPEC §5: "every instance of that name") starting together on one keysDirectory, as replicas
 * on a shared volume do on their first deploy, must all connect with the one pair made.
 */
const dist = join(import.meta.dirname, '..', '..', 'dist', 'index.js');

interface Instance {
  /** resolves when the process is about to call connect() */
  readonly connecting: Promise<void>;
  /** `ok`, or the code connect() failed with */
  readonly outcome: Promise<string>;
}

/** a real client process of the name `name` on `keysDirectory` */
function instance(hostSpec: string, name: string, keysDirectory: string): Instance {
  const script = `
    const { client } = await import(${JSON.stringify(dist)});
    const mq = client();
    console.log('connecting');
    try {
      await mq.connect({ hosts: [${JSON.stringify(hostSpec)}], clientId: ${JSON.stringify(name)}, keysDirectory: ${JSON.stringify(keysDirectory)}, keysName: ${JSON.stringify(name)}, connectTimeout: 5000 });
      console.log('ok');
    } catch (error) { console.log(error.code ?? String(error)); }
    await mq.disconnect();`;
  const child = spawn(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let started: () => void = () => {};
  const connecting = new Promise<void>((resolve) => (started = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('connecting')) started();
  });
  const outcome = new Promise<string>((resolve) => child.once('exit', () => resolve(out.replace('connecting', '').trim())));
  return { connecting, outcome };
}

describe('the first start of several instances of one name', () => {
  test('an instance that finds the pair half written by a sibling waits for it and connects', async () => {
    const b = await broker();
    const keysDirectory = join(tempDir(), 'keys');
    mkdirSync(keysDirectory, { recursive: true });
    const pair = generateKeyPairSync('ed25519');
    // the sibling has written the private key and not yet the public one
    writeFileSync(join(keysDirectory, 'twin.pem'), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const late = instance(b.hostSpec, 'twin', keysDirectory);
    await late.connecting;
    // whole, as a sibling writes it (a link of a written temp file): a plain write can be read torn
    writeFileSync(join(keysDirectory, 'twin.pub.tmp'), pair.publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o600 });
    linkSync(join(keysDirectory, 'twin.pub.tmp'), join(keysDirectory, 'twin.pub'));
    expect(await late.outcome).toBe('ok');
  }, 30_000);

  test('processes racing to make the pair all connect with it', async () => {
    const b = await broker();
    const keysDirectory = join(tempDir(), 'keys');
    const results = await Promise.all(Array.from({ length: 4 }, () => instance(b.hostSpec, 'racer', keysDirectory).outcome));
    expect(results).toEqual(['ok', 'ok', 'ok', 'ok']);
  }, 30_000);
});
