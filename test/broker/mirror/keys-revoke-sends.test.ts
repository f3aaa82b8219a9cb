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
 *
 * What client.md#keys promises, and so what this checks: a send answered OK was stored by the
 * master (delivered); one failed E_AUTH with no `storedBy` was not stored (never delivered); one
 * failed E_AUTH whose `storedBy` names the slave was stored by it (read before the revocation
 * reached it, not yet read by the busier master) and may be delivered: the slave offers it; and
 * one sent after both brokers applied the revocation is refused and stored by none. Flaky before
 * 2026-12-07 at load 13-25, for three causes: the queue's default bound (`maxItemsInQueue` 1,000,
 * `drop-oldest`) dropped OK sends the listener lagged behind on (100 to 4,600 in 11 runs of 26; in
 * the 3 runs with drops traced, every one missing was a drop-oldest victim on the master), so
 * the bound is lifted here; E_AUTH sends stored by the slave (450 to 1,150 in 3 runs) were
 * delivered, as documented, and the test did not read `storedBy`; and E_AUTH sends with no
 * `storedBy` were delivered (1,000 to 4,000 in 4 runs of 26): the master stopped waiting for its
 * store after 2 s, a broker bug fixed since (revoke-drain.test.ts).
 */
describe('a client revoked in the middle of its sends (real broker processes)', () => {
  test('every send answered OK is delivered; none refused without storedBy is; none sent after the revocation is stored', async () => {
    const ports = { a: await freePort(), b: await freePort() };
    const spec = (id: 'a' | 'b') => `127.0.0.1:${ports[id]}@${id}`;
    const paths = (['a', 'b'] as const).map((id) =>
      writeConfig(tempDir(`whisker-revoke-sends-${id}-`), {
        serviceId: id,
        isMaster: id === 'a',
        peers: [spec(id === 'a' ? 'b' : 'a')],
        socketServer: { host: '127.0.0.1', port: ports[id] },
        // the listener lags thousands behind at load: the default bound (1,000, drop-oldest) would drop OK sends
        maxItemsInQueue: 1_000_000,
      }),
    );
    const processes = [await startProcess(paths[0]!), await startProcess(paths[1]!)];
    await processes[1]!.waitFor(/in step with the master/);
    const hosts = [spec('a'), spec('b')];
    const delivered = new Set<number>();
    const listener = await connect('revoke-sends-listener', hosts);
    await listener.listen('orders/v1/1', (err, msg) => void (!err && delivered.add((msg as { n: number }).n))).ready;
    const sender = await connect('revoke-sends-svc', hosts, { maxBufferedMessages: 100_000, sendTimeout: 20_000 });
    sender.on('error', () => {});
    /** per send: 'ok', or the error code with the slaves that stored it (`E_AUTH` or `E_AUTH:b`) */
    const outcome = new Map<number, string>();
    let n = 0;
    let pumping = true;
    const pump = (async () => {
      while (pumping) {
        for (let k = 0; k < 50; k++) {
          const i = n++;
          sender.send('orders/v1/1', { n: i }).then(
            () => outcome.set(i, 'ok'),
            (error: { code: string; info?: { storedBy?: string[] } }) => outcome.set(i, [error.code, ...(error.info?.storedBy ?? [])].join(':')),
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const revoked = await whisker(['keys', 'revoke', 'revoke-sends-svc', '-c', paths[1]!]); // on the slave
    expect(revoked.code, revoked.stderr).toBe(0);
    // the master applied it too (at load it may confirm after the CLI's ~1 s): what is sent from now on is stored by none
    await processes[0]!.waitFor(/"msg":"key revoked by a peer"/, 0, 20_000);
    const sentAfterBoth = n;
    await new Promise((resolve) => setTimeout(resolve, 500));
    pumping = false;
    await pump;
    const start = Date.now();
    while (outcome.size < n && Date.now() - start < 25_000) await new Promise((resolve) => setTimeout(resolve, 100));
    const ok = [...outcome].filter(([, code]) => code === 'ok').map(([i]) => i);
    // deliveries still on their way (CI preview ci23 at load 20: 450 of 7,650 not there 1.5 s later)
    for (const until = Date.now() + 15_000; ok.some((i) => !delivered.has(i)) && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 100));
    // nothing more (a refused send delivered late: a slave offers what only it stored after 2 s)
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const refused = [...outcome].filter(([, code]) => code === 'E_AUTH').map(([i]) => i);
    const refusedStoredBySlave = [...outcome].filter(([, code]) => code === 'E_AUTH:b').map(([i]) => i);
    const after = [...Array(n - sentAfterBoth).keys()].map((k) => sentAfterBoth + k);
    const others = [...outcome.values()].filter((code) => code !== 'ok' && code !== 'E_AUTH' && code !== 'E_AUTH:b');
    console.log(
      `revoked mid-stream: ${n} sent (${after.length} after both brokers applied it), ${ok.length} ok, ${refused.length} E_AUTH, ` +
        `${refusedStoredBySlave.length} E_AUTH stored by b (${refusedStoredBySlave.filter((i) => delivered.has(i)).length} delivered), ${others.length} other, ${delivered.size} delivered`,
    );
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);
    expect(outcome.size).toBe(n);
    // a send the master stored is answered as stored, and delivered
    expect(ok.filter((i) => !delivered.has(i))).toEqual([]);
    // one refused with no storedBy was stored by no broker
    expect(refused.filter((i) => delivered.has(i))).toEqual([]);
    // one made after every broker applied the revocation is refused, stored by none
    expect(after.filter((i) => outcome.get(i) !== 'E_AUTH')).toEqual([]);
    await Promise.all([listener.disconnect(), sender.disconnect()]);
    for (const p of processes) p.child.kill('SIGKILL');
  }, 90_000);
});
