import '../../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { broker, clientConfig, connect, Inbox, type TestBroker, tempDir, unconnected } from '../../support/harness.js';

/** `wss://` with a certificate made here by the openssl CLI (SPEC §3 `tls`, docs/security.md#tls). */
function selfSignedCertificate(): { cert: string; key: string; pem: string } {
  const dir = tempDir('whisker-tls-');
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { stdio: 'pipe' });
  return { cert, key, pem: readFileSync(cert, 'utf8') };
}

async function tlsBroker(): Promise<{ b: TestBroker; pem: string; wss: string }> {
  const { cert, key, pem } = selfSignedCertificate();
  const b = await broker({ socketServer: { tls: { cert, key } } });
  return { b, pem, wss: `wss://127.0.0.1:${b.port}@${b.config.serviceId}` };
}

describe('TLS', () => {
  test('a client trusting the certificate round-trips a message over wss://', async () => {
    const { b, pem, wss } = await tlsBroker();
    expect(b.url).toBe(`wss://127.0.0.1:${b.port}`);
    const [reader, writer] = await Promise.all([connect('tls-reader', wss, { tls: { ca: pem } }), connect('tls-writer', wss, { tls: { ca: pem } })]);
    const heard = new Inbox();
    const taken = new Inbox();
    await reader.listen('secure/v1/1', heard.listener).ready;
    await reader.consume('secure/v1/2', taken.consumer).ready;
    const sent = await writer.send('secure/v1/1', { secret: 'over tls' });
    await writer.send('secure/v1/2', { job: 'over tls' });
    const [message] = await heard.waitFor(1);
    expect(message).toMatchObject({ msg: { secret: 'over tls' }, info: { messageId: sent.messageId, from: 'tls-writer' } });
    expect((await taken.waitFor(1))[0]!.msg).toEqual({ job: 'over tls' });
  });

  test('a client without the CA is refused: connect fails with E_AUTH at once, nothing reaches the broker', async () => {
    const { b, wss } = await tlsBroker();
    const client = unconnected();
    const errors: unknown[] = [];
    client.on('error', (error) => errors.push(error));
    const started = Date.now();
    // an untrusted certificate is a refusal with a code, not a wait for connectTimeout
    await expect(client.connect(clientConfig('no-ca', wss, { connectTimeout: 5000 }))).rejects.toMatchObject({ code: 'E_AUTH' });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(errors.map((e) => (e as { code: string }).code)).toContain('E_AUTH');
    expect(client.isConnected()).toBe(false);
    expect(b.sessions.size).toBe(0);
  });

  test('a plain ws:// client on the TLS port fails, and a raw plain socket never opens', async () => {
    const { b } = await tlsBroker();
    const client = unconnected();
    await expect(client.connect(clientConfig('plain', `127.0.0.1:${b.port}@${b.config.serviceId}`, { connectTimeout: 800 }))).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    const raw = new WebSocket(`ws://127.0.0.1:${b.port}`);
    const outcome = await new Promise<string>((resolve) => {
      raw.on('open', () => resolve('open'));
      raw.on('error', (error) => resolve(`error: ${error.message}`));
    });
    console.log(`plain ws:// to the TLS port: ${outcome}`);
    expect(outcome).toMatch(/^error: /);
    expect(b.sessions.size).toBe(0);
  });
});
