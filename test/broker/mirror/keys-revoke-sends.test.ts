import { describe, expect, test } from 'vitest';
import { freePort, startProcess, whisker, writeConfig } from '../../support/broker-process.js';
import { connect, tempDir } from '../../support/harness.js';

/**
 * Issue 28 items 1 and 4 (attacks-28 a10): a client revoked while it pipelines sends. Its sends
 * that a broker read before the revocation are stored and delivered; each must be answered as
 * stored, not failed with E_AUTH (which client.md reads as "not stored" for sends made after
 * the revocation). Before the fix the broker closed the connection at once and dropped the
 * answers of the sends its store was still writing: 1,250 and 950 messages in two runs were
 * delivered to the listener while their sender was told E_AUTH.
 */
describe('a client revoked in the middle of its sends (real broker processes)', () => {
  test('every message delivered was answered as stored to its sender; none sent after the revocation is delivered', async () => {
    const ports = { a: await freePort(), b: await freePort() };
    const spec = (id: 'a' | 'b') => `127.0.0.1:${ports[id]}@${id}`;
    const paths = (['a', 'b'] as const).map((id) =>
      writeConfig(tempDir(`whisker-revoke-sends-${id}-`), { serviceId: id, isMaster: id === 'a', peers: [spec(id === 'a' ? 'b' : 'a')], socketServer: { host: '127.0.0.1', port: ports[id] } }),
    );
    const processes = [await startProcess(paths[0]!), await startProcess(paths[1]!)];
    await processes[1]!.waitFor(/in step with the master/);
    const hosts = [spec('a'), spec('b')];
    const delivered = new Set<number>();
    const listener = await connect('revoke-sends-listener', hosts);
    await listener.listen('orders/v1/1', (err, msg) => void (!err && delivered.add((msg as { n: number }).n))).ready;
    const sender = await connect('revoke-sends-svc', hosts, { maxBufferedMessages: 100_000, sendTimeout: 20_000 });
    sender.on('error', () => {});
    const outcome = new Map<number, string>();
    let n = 0;
    let pumping = true;
    const pump = (async () => {
      while (pumping) {
        for (let k = 0; k < 50; k++) {
          const i = n++;
          sender.send('orders/v1/1', { n: i }).then(
            () => outcome.set(i, 'ok'),
            (error: { code: string }) => outcome.set(i, error.code),
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const revoked = await whisker(['keys', 'revoke', 'revoke-sends-svc', '-c', paths[1]!]); // on the slave
    expect(revoked.code, revoked.stderr).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    pumping = false;
    await pump;
    const start = Date.now();
    while (outcome.size < n && Date.now() - start < 25_000) await new Promise((resolve) => setTimeout(resolve, 100));
    const ok = [...outcome].filter(([, code]) => code === 'ok').map(([i]) => i);
    // deliveries still on their way (CI preview ci23 at load 20: 450 of 7,650 not there 1.5 s later)
    for (const until = Date.now() + 15_000; ok.some((i) => !delivered.has(i)) && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 100));
    await new Promise((resolve) => setTimeout(resolve, 500)); // nothing more (a refused send delivered late)
    const refused = [...outcome].filter(([, code]) => code === 'E_AUTH').map(([i]) => i);
    console.log(`revoked mid-stream: ${n} sent, ${ok.length} ok, ${refused.length} E_AUTH, ${delivered.size} delivered`);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    expect(outcome.size).toBe(n);
    // what was delivered is exactly what its sender was told was stored
    expect(refused.filter((i) => delivered.has(i))).toEqual([]);
    expect(ok.filter((i) => !delivered.has(i))).toEqual([]);
    await Promise.all([listener.disconnect(), sender.disconnect()]);
    for (const p of processes) p.child.kill('SIGKILL');
  }, 60_000);
});
