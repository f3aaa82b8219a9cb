import '../../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { startProcess, writeConfig } from '../../support/broker-process.js';
import { Flooder } from '../../support/flooder.js';
import { connect, Inbox, tempDir } from '../../support/harness.js';
import { rssMiB } from '../../support/proc.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * Issue 18, fault 1: every byte the broker owes a connection is bounded by
 * limits.maxBufferedBytesPerConnection (docs/security.md#limits). Measured on a real broker
 * process, as an attacker on loopback would: its RSS from /proc.
 */
const MiB = 1024 * 1024;

/** one publish frame of `count` copies of one message id: only the first is stored, every copy is answered */
function duplicatesFrame(count: number): string {
  const message = { messageId: `dup-${'x'.repeat(100)}`, channel: 'flood/v1/1', data: 1, created: 1 };
  return JSON.stringify({ type: 'publish', messages: Array.from({ length: count }, () => message) });
}

describe('results are flow-controlled', () => {
  test('a publisher that never reads its results: the broker stops reading it, its RSS stays bounded, others are served', async () => {
    const FLOOD = 96 * MiB;
    const dir = tempDir();
    const broker = await startProcess(writeConfig(dir, { socketServer: { port: 0 }, limits: { maxBufferedBytesPerConnection: MiB } }));
    const pid = broker.child.pid!;
    const port = Number(new URL(broker.url).port);
    // a normal client first, so its own costs are in the baseline
    const reader = await connect('flow-reader', broker.hostSpec);
    const writer = await connect('flow-writer', broker.hostSpec);
    const inbox = new Inbox();
    await reader.listen('check/v1/1', inbox.listener).ready;
    await writer.send('check/v1/1', { warmup: true });
    await inbox.waitFor(1);
    const rssBefore = rssMiB(pid);

    const attacker = await Flooder.login(port, 'flooder', newKeyPair());
    const started = performance.now();
    const outcome = await attacker.flood(duplicatesFrame(2000), FLOOD, 1500);
    const rssAfter = rssMiB(pid);
    const growth = Math.round((rssAfter - rssBefore) * 10) / 10;
    console.log(`unread results: the broker took ${(outcome.taken / MiB).toFixed(1)} MiB of publishes in ${Math.round(performance.now() - started)} ms ` +
      `(${outcome.stalled ? 'then stopped reading' : 'all of it'}${outcome.closed ? `, closed ${outcome.closed.code} ${outcome.closed.reason}` : ''}); ` +
      `broker RSS ${rssBefore} -> ${rssAfter} MiB (+${growth} MiB, bound 48 MiB)`);
    expect(outcome.stalled || outcome.closed !== null).toBe(true);
    expect(growth).toBeLessThan(48);

    // a bystander is served while the attacker sits there
    const sentAt = performance.now();
    await writer.send('check/v1/1', { during: true });
    await inbox.waitFor(2);
    console.log(`unread results: a bystander's send delivered in ${Math.round(performance.now() - sentAt)} ms`);
  }, 30_000);

  test('answers owed past 4 x the bound close the connection: E_LIMIT, close code 1008, a warn line', async () => {
    const dir = tempDir();
    const broker = await startProcess(writeConfig(dir, { socketServer: { port: 0 }, limits: { maxBufferedBytesPerConnection: 1024, maxPayloadBytes: 1024 } }));
    const port = Number(new URL(broker.url).port);
    const attacker = await Flooder.login(port, 'piler', newKeyPair());
    // 5 copies (~800 bytes) a frame: one socket read carries dozens of them, whose answers pass 4 KiB
    const outcome = await attacker.flood(duplicatesFrame(5), 256 * 1024, 3000);
    const logged = JSON.parse(await broker.waitFor(/^.*connection closed: it does not read.*$/m)) as Record<string, unknown>;
    console.log(`answers owed: ${String(logged.msg)} after ${(outcome.taken / 1024).toFixed(0)} KiB taken: ${JSON.stringify(logged)}`);
    expect(logged).toMatchObject({ code: 'E_LIMIT', client: expect.stringMatching(/^piler#/), limitBytes: 4096 });
    // the broker goes on serving others
    const peer = await RawPeer.open(port);
    await peer.login('after-piler', newKeyPair());
  }, 20_000);
});
