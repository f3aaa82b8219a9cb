import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { startBroker, type Broker } from '../../../src/server/start.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig, connect, freePort, Inbox, tempDir, until } from '../../support/harness.js';

/**
 * Issue 13 fault 2: mirror brokers whose certificates come from the operator's own CA, made
 * here with the openssl CLI. Peers trust it through `peerTls.ca`, and show their own certificate
 * (`peerTls.cert`, `key`) to brokers that ask for one (`socketServer.tls.requestCert`).
 */
const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function privateCa(): { dir: string; ca: string; issue(name: string): { cert: string; key: string } } {
  const dir = tempDir('whisker-ca-');
  openssl(dir, ['req', '-x509', ...EC, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=Whisker test CA']);
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    issue(name) {
      openssl(dir, ['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
      const ext = join(dir, `${name}.ext`);
      execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ${ext}`]);
      openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '1', '-extfile', ext]);
      return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
    },
  };
}

interface Started {
  broker: Broker;
  logs: Array<{ msg: string; code?: string; reason?: string }>;
}

const started: Broker[] = [];

async function start(config: Record<string, unknown>): Promise<Started> {
  const logs: Started['logs'] = [];
  const logger = createLogger('info', { write: (line) => void logs.push(JSON.parse(line) as Started['logs'][number]) });
  const broker = await startBroker(brokerConfig({ logLevel: 'info', ...config }), { logger });
  started.push(broker);
  return { broker, logs };
}

describe('peers over TLS with a private CA', () => {
  test('two brokers with certificates of a CA made here: the slave trusts the master through peerTls.ca, mutual TLS, each message delivered once', async () => {
    const pki = privateCa();
    const [portA, portB] = [await freePort(), await freePort()];
    const specs = { a: `wss://127.0.0.1:${portA}@a`, b: `wss://127.0.0.1:${portB}@b` };
    const node = (serviceId: 'a' | 'b', port: number, peer: string) => {
      const { cert, key } = pki.issue(serviceId);
      return start({
        serviceId,
        isMaster: serviceId === 'a',
        peers: [peer],
        socketServer: { host: '127.0.0.1', port, tls: { cert, key, ca: pki.ca, requestCert: true } },
        peerTls: { ca: pki.ca, cert, key },
      });
    };
    try {
      const [a, b] = await Promise.all([node('a', portA, specs.b), node('b', portB, specs.a)]);
      await until(() => b.logs.some((l) => l.msg === 'in step with the master'), 10_000, 'the slave in step over wss://');

      const client = pki.issue('shop');
      const tls = { ca: readFileSync(pki.ca), cert: readFileSync(client.cert), key: readFileSync(client.key) };
      const inbox = new Inbox();
      const consumer = await connect('tls-peer-worker', [specs.a, specs.b], { tls });
      await consumer.consume('jobs/v1/1', inbox.consumer).ready;
      const producer = await connect('tls-peer-producer', [specs.a, specs.b], { tls });
      for (let n = 0; n < 20; n++) await producer.send('jobs/v1/1', { n });
      await inbox.waitFor(20);
      // the slave stored each one and dropped it at the ack that came over the peer link
      await until(() => (b.broker.router.queues.get('jobs/v1')?.size ?? -1) === 0, 5_000, 'the slave empty');
      expect(inbox.items.map((r) => (r.msg as { n: number }).n)).toEqual([...Array(20).keys()]);
      expect([...a.logs, ...b.logs].filter((l) => l.msg === 'peer refused our link')).toEqual([]);
      expect(b.broker.peers.status()).toMatchObject([{ serviceId: 'a', connected: true, role: 'master', following: true }]);
      // mutual TLS: a connection that shows no certificate of the CA never gets in
      await expect(connect('tls-no-cert', specs.a, { tls: { ca: tls.ca }, connectTimeout: 1_000 })).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    } finally {
      await Promise.all(started.splice(0).map((x) => x.stop()));
    }
  }, 30_000);

  test('without peerTls.ca the link is refused as untrusted (E_AUTH, SELF_SIGNED_CERT_IN_CHAIN)', async () => {
    const pki = privateCa();
    const [portA, portB] = [await freePort(), await freePort()];
    const a = pki.issue('a');
    const b = pki.issue('b');
    try {
      await start({ serviceId: 'a', isMaster: true, peers: [`wss://127.0.0.1:${portB}@b`], socketServer: { host: '127.0.0.1', port: portA, tls: { ...a, ca: pki.ca, requestCert: true } }, peerTls: { ca: pki.ca } });
      const slave = await start({ serviceId: 'b', isMaster: false, peers: [`wss://127.0.0.1:${portA}@a`], socketServer: { host: '127.0.0.1', port: portB, tls: { ...b, ca: pki.ca } } });
      await until(() => slave.logs.some((l) => l.msg === 'peer refused our link'), 10_000, 'the untrusted link refused');
      expect(slave.logs.find((l) => l.msg === 'peer refused our link')).toMatchObject({ code: 'E_AUTH', reason: expect.stringContaining('SELF_SIGNED_CERT_IN_CHAIN') });
      expect(slave.broker.peers.status()).toMatchObject([{ serviceId: 'a', connected: false, role: 'unknown' }]);
    } finally {
      await Promise.all(started.splice(0).map((x) => x.stop()));
    }
  }, 30_000);
});
