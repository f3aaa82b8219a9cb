import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startBroker } from '../../src/server/start.js';
import type { Done } from '../../src/client/types.js';
import { launch, hasChromium, openPage } from '../support/chromium.js';
import { startEtcd } from '../support/etcd.js';
import { broker, brokerConfig, connect, freePort, Inbox, tempDir, until } from '../support/harness.js';
import { countColour, decodePng } from '../support/png.js';

/** The operator's dashboard in Debian's Chromium (issue 17): charts, mirrors, handlers, peek, dead letters. */
const HOSTILE = '<img src=x onerror=alert(1)>';
const ACKED_RGB: [number, number, number] = [0x8e, 0x44, 0xad];
const REQUEUED_RGB: [number, number, number] = [0xd3, 0x54, 0x00];
let browser: Browser;

beforeAll(async () => {
  if (hasChromium) browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

/** sends a message every `everyMs` until stopped: traffic spread over time, for the charts */
function trickle(send: () => Promise<unknown>, everyMs: number): () => Promise<void> {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await send();
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

describe.skipIf(!hasChromium)('operator dashboard in Chromium', () => {
  test('rate charts render (total and one queue), handlers with prefetch and in flight, oldest age, peek without bodies', async () => {
    const b = await broker({ management: { port: 0 } });
    const [worker, slow, producer, pauser] = await Promise.all([connect('worker', b.hostSpec), connect('slow', b.hostSpec), connect('producer', b.hostSpec), connect('pauser', b.hostSpec)]);
    await worker.consume('jobs/v1/a', new Inbox().consumer).ready;
    await pauser.consume('jobs/v1/b', { limit: 0 }, new Inbox().consumer).ready;
    const held: Done[] = [];
    await slow.consume(`jobs/v1/${encodeURIComponent(HOSTILE)}`, { prefetch: 2 }, (_err, _msg, done) => void held.push(done!)).ready;
    for (let i = 0; i < 3; i++) await producer.send(`jobs/v1/${encodeURIComponent(HOSTILE)}`, { secret: i });
    const stop = trickle(() => producer.send('jobs/v1/a', 1), 100);

    const { page, dialogs, cspViolations, pageErrors } = await openPage(browser);
    await page.goto(`http://127.0.0.1:${b.managementPort}/`);
    await expect.poll(async () => Number(await page.locator('#chart-total').getAttribute('data-points')), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    const lines = page.locator('#chart-total polyline');
    expect(await lines.count()).toBe(4);
    for (const points of await lines.evaluateAll((nodes) => nodes.map((n) => n.getAttribute('points') ?? ''))) expect(points.split(' ').length).toBeGreaterThanOrEqual(2);
    await expect.poll(() => page.locator('#legend-total .received span').textContent(), { timeout: 5000 }).not.toBe('0/s');

    // one queue: its chart, its handlers, the oldest waiting message
    await page.getByRole('button', { name: 'jobs/v1', exact: true }).click();
    await expect.poll(() => page.locator('#chart-queue polyline').count(), { timeout: 5000 }).toBe(4);
    const slowRow = page.locator('#handler-rows tr', { hasText: 'slow' });
    await expect.poll(async () => (await slowRow.locator('td').allTextContents()).slice(2, 6), { timeout: 5000 }).toEqual(['consume', HOSTILE, '2', '2']);
    // a handler its client paused (docs/protocol.md#flow) says so where its prefetch would be
    const pausedRow = page.locator('#handler-rows tr', { hasText: 'pauser' });
    await expect.poll(async () => (await pausedRow.locator('td').allTextContents()).slice(2, 6), { timeout: 5000 }).toEqual(['consume', 'b', 'paused', '0']);
    await expect.poll(async () => (await page.locator('#queue-rows tr[data-queue="jobs/v1"] td').allTextContents())[4]).toMatch(/^\d+\.\d s$/);

    // peek: the waiting one, no body (showBodies is off)
    await page.locator('#peek-queue').click();
    await page.locator('#peek-rows tr').first().waitFor();
    expect(await page.locator('#peek-body-head').isHidden()).toBe(true);
    expect(await page.locator('#peek-note').textContent()).toContain('bodies hidden');
    expect(await page.getByText('secret').count()).toBe(0);

    const shot = join(tempDir('whisker-dashboard-'), 'charts.png');
    await page.screenshot({ path: shot, fullPage: true });
    if (process.env.WHISKER_SCREENSHOT) await page.screenshot({ path: process.env.WHISKER_SCREENSHOT, fullPage: true });
    const png = decodePng(readFileSync(shot));
    expect(countColour(png, ACKED_RGB)).toBeGreaterThan(100);
    expect(countColour(png, REQUEUED_RGB)).toBeGreaterThan(100);
    await stop();
    expect(await page.locator('img').count()).toBe(0);
    expect({ dialogs, cspViolations, pageErrors }).toEqual({ dialogs: [], cspViolations: [], pageErrors: [] });
    for (const done of held) done();
    await page.close();
  });

  test('peek shows bodies only with showBodies, as text', async () => {
    const b = await broker({ management: { port: 0 }, showBodies: true });
    const producer = await connect('producer', b.hostSpec);
    await producer.send('news/v1/x', { html: HOSTILE });
    const { page, dialogs } = await openPage(browser);
    await page.goto(`http://127.0.0.1:${b.managementPort}/`);
    await page.getByRole('button', { name: 'news/v1', exact: true }).click();
    await page.locator('#id-rows tr').first().getByRole('button', { name: 'peek' }).click();
    await page.locator('#peek-rows tr').first().waitFor();
    expect(await page.locator('#peek-body-head').isVisible()).toBe(true);
    expect(await page.locator('#peek-rows pre.body').textContent()).toBe(JSON.stringify({ html: HOSTILE }));
    expect(await page.locator('img').count()).toBe(0);
    expect(dialogs).toEqual([]);
    await page.close();
  });

  test('mirror panel: the slave shows its master connected, followed, in step, with its lag; the master shows its slave following it, in step, and labels its own counters', async () => {
    const [pa, pb] = await Promise.all([freePort(), freePort()]);
    const start = (id: string, port: number, isMaster: boolean, peerId: string, peerPort: number) =>
      startBroker(brokerConfig({ serviceId: id, isMaster, peers: [`127.0.0.1:${peerPort}@${peerId}`], socketServer: { host: '127.0.0.1', port }, management: { port: 0 } }, tempDir()));
    const [master, slave] = await Promise.all([start('a', pa, true, 'b', pb), start('b', pb, false, 'a', pa)]);
    try {
      await until(() => slave.peers.status()[0]?.inStep === true, 10_000, 'the slave in step');
      const { page } = await openPage(browser);
      await page.goto(`http://127.0.0.1:${slave.managementPort}/`);
      const row = page.locator('#peer-rows tr[data-peer="a"] td');
      await expect.poll(() => row.allTextContents(), { timeout: 5000 }).toEqual(['a', `127.0.0.1:${pa}@a`, 'connected', 'master', 'we follow it', 'in step', '0', '0.0']);
      expect(await page.locator('#conflict').isHidden()).toBe(true);
      await page.goto(`http://127.0.0.1:${master.managementPort}/`);
      // issue 29: the master's row for its slave says what is true from its side, not "no / -"
      const slaveRow = page.locator('#peer-rows tr[data-peer="b"] td');
      await expect.poll(() => slaveRow.allTextContents(), { timeout: 5000 }).toEqual(['b', `127.0.0.1:${pb}@b`, 'connected', 'slave', 'follows us', 'in step', '-', '-']);
      // the counters that differ between master and slave say they are this broker's own
      expect(await page.locator('#queues thead').textContent()).toContain('Dead-lettered*');
      expect(await page.locator('#counters-note').textContent()).toContain('counted by this broker since it started');
      await expect.poll(() => page.locator('#client-rows tr', { hasText: 'b' }).locator('.mode').textContent(), { timeout: 5000 }).toBe('mirror broker (peer link)');
      await page.close();
    } finally {
      await Promise.all([master.stop(), slave.stop()]);
    }
  });

  test('election panel (real etcd): the master and the slave show the epoch, the leader, the lease left and the last change, as /health says; etcd gone shows etcd unreachable; hidden without an election', async () => {
    const etcd = await startEtcd();
    const [pa, pb] = await Promise.all([freePort(), freePort()]);
    const election = { etcd: { hosts: [etcd.url] }, prefix: `/whisker/dashboard-${process.pid}`, leaseTtl: 2 };
    const start = (id: string, port: number, peerId: string, peerPort: number) =>
      startBroker(brokerConfig({ serviceId: id, peers: [`127.0.0.1:${peerPort}@${peerId}`], socketServer: { host: '127.0.0.1', port }, management: { port: 0 }, election }, tempDir()));
    const a = await start('a', pa, 'b', pb); // alone at first: the master
    await until(() => a.election?.isMaster === true, 15_000, 'a elected');
    const b = await start('b', pb, 'a', pa);
    try {
      await until(() => b.election?.leader === 'a', 15_000, 'b sees a as the leader');
      const { page, dialogs, cspViolations, pageErrors } = await openPage(browser);
      const cells = page.locator('#election-row td');
      const health = async (port: number | null) => (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { election: { epoch: number; lastChangeAt: number } };
      const { election: view } = await health(a.managementPort);

      await page.goto(`http://127.0.0.1:${a.managementPort}/`);
      await expect.poll(() => cells.count(), { timeout: 5000 }).toBe(6);
      const master = await cells.allTextContents();
      expect(master.slice(0, 3)).toEqual(['master', String(view.epoch), 'a']);
      expect(master[3]).toMatch(/^[0-2]\.\d s$/); // renewed every 0.5 s, 2 s lease
      expect(master[4]).toContain(new Date(view.lastChangeAt).toLocaleTimeString('en-GB'));
      expect(master[5]).toBe('-');
      expect(await page.locator('#election-row .badge').getAttribute('class')).toBe('badge master');

      await page.goto(`http://127.0.0.1:${b.managementPort}/`);
      await expect.poll(async () => (await cells.allTextContents()).slice(0, 3), { timeout: 5000 }).toEqual(['slave', String(view.epoch), 'a']);

      // etcd gone: the master stops delivering and its panel says why
      await etcd.kill();
      await page.goto(`http://127.0.0.1:${a.managementPort}/`);
      await expect.poll(async () => (await cells.allTextContents())[0], { timeout: 10_000 }).toBe('etcd unreachable');
      expect(await page.locator('#election-row .badge').getAttribute('class')).toBe('badge bad');
      expect((await cells.allTextContents())[5]).toMatch(/lease could not be renewed|etcd unreachable/);
      expect({ dialogs, cspViolations, pageErrors }).toEqual({ dialogs: [], cspViolations: [], pageErrors: [] });

      // without an election block the panel stays hidden
      const plain = await broker({ management: { port: 0 } });
      await page.goto(`http://127.0.0.1:${plain.managementPort}/`);
      await page.locator('body[data-ready="true"]').waitFor();
      expect(await page.locator('#election').isHidden()).toBe(true);
      await page.close();
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 60_000);

  test('dead letters: browse, replay and purge behind the token, each confirmed; a hostile channel id stays text', async () => {
    const b = await broker({ management: { port: 0, token: 'ops-token' }, requeueLimit: 1, channels: { 'jobs/v1': { deadLetter: 'dead/v1/jobs' } } });
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    let failing = true;
    const got = new Inbox<unknown>();
    await worker.consume(`jobs/v1/${encodeURIComponent(HOSTILE)}`, (_err, msg, done?: Done) => {
      got.push(msg);
      done!(!failing);
    }).ready;
    await producer.send(`jobs/v1/${encodeURIComponent(HOSTILE)}`, { job: 1 });
    await producer.send(`jobs/v1/${encodeURIComponent(HOSTILE)}`, { job: 2 });
    await until(() => b.router.queues.get('dead/v1')?.size === 2, 5000, 'two dead letters');

    // the actions need the token, a JSON body; without a token configured they are refused
    const api = `http://127.0.0.1:${b.managementPort}/api/dead-letters/purge`;
    expect((await fetch(api, { method: 'POST', body: '{"queue":"dead/v1","all":true}', headers: { 'Content-Type': 'application/json' } })).status).toBe(401);
    expect((await fetch(api, { method: 'POST', body: '{"queue":"dead/v1","all":true}', headers: { Authorization: 'Bearer ops-token', 'Content-Type': 'text/plain' } })).status).toBe(415);
    expect(b.router.queues.get('dead/v1')!.size).toBe(2);

    const { page, dialogs, cspViolations, pageErrors } = await openPage(browser);
    await page.goto(`http://127.0.0.1:${b.managementPort}/?token=ops-token`);
    const rows = page.locator('#dlq-rows tr');
    await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(2);
    expect((await rows.first().locator('td').allTextContents()).slice(2, 6)).toEqual([`jobs/v1/${HOSTILE}`, 'producer', '1', 'requeued by consumer']);

    failing = false;
    await rows.first().getByRole('button', { name: 'replay' }).click();
    expect(await page.locator('#confirm').isVisible()).toBe(true);
    expect(await page.locator('#confirm-text').textContent()).toContain(`to jobs/v1/${HOSTILE} as producer?`);
    await page.locator('#confirm-yes').click();
    await got.waitFor(3);
    expect(got.items[2]).toEqual({ job: 1 });
    await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(1);
    expect(await page.locator('#action-result').textContent()).toBe('replay: 1 replayed');

    // purge all: cancelled first, then confirmed
    await page.locator('#dlq-purge-all').click();
    await page.locator('#confirm-no').click();
    expect(await page.locator('#confirm').isHidden()).toBe(true);
    expect(b.router.queues.get('dead/v1')!.size).toBe(1);
    await page.locator('#dlq-purge-all').click();
    await page.locator('#confirm-yes').click();
    await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(0);
    expect(b.router.queues.get('dead/v1')?.size ?? 0).toBe(0);
    expect(await page.locator('img').count()).toBe(0);
    expect({ dialogs, cspViolations, pageErrors }).toEqual({ dialogs: [], cspViolations: [], pageErrors: [] });
    await page.close();
  });

  test('without a token the dead letters are shown but their actions are off, and the server refuses them', async () => {
    const b = await broker({ management: { port: 0 }, requeueLimit: 1, channels: { 'jobs/v1': { deadLetter: 'dead/v1/jobs' } } });
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    await worker.consume('jobs/v1/a', (_err, _msg, done?: Done) => done!(false)).ready;
    await producer.send('jobs/v1/a', 1);
    await until(() => b.router.queues.get('dead/v1')?.size === 1, 5000, 'a dead letter');
    const refused = await fetch(`http://127.0.0.1:${b.managementPort}/api/dead-letters/purge`, { method: 'POST', body: '{"queue":"dead/v1","all":true}', headers: { 'Content-Type': 'application/json' } });
    expect(refused.status).toBe(403);
    const { page } = await openPage(browser);
    await page.goto(`http://127.0.0.1:${b.managementPort}/`);
    await page.locator('#dlq-rows tr').first().waitFor();
    expect(await page.locator('#dlq-actions-off').isVisible()).toBe(true);
    expect(await page.locator('#dlq-rows button').evaluateAll((buttons) => buttons.map((x) => (x as unknown as { disabled: boolean }).disabled))).toEqual([true, true]);
    expect(await page.locator('#dlq-purge-all').isDisabled()).toBe(true);
    expect(b.router.queues.get('dead/v1')!.size).toBe(1);
    await page.close();
  });
});
