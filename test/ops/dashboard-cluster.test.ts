import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hasChromium, launch, openPage } from '../support/chromium.js';
import { clusterBroker, clusterSpec, elected } from '../support/cluster.js';
import { startEtcd } from '../support/etcd.js';
import { broker, connect, until } from '../support/harness.js';

/**
 * The dashboard's cluster view (SPEC §13, docs/management.md#dashboard) in a real headless
 * Chromium, on brokers of two sets over a real etcd: sets, their brokers and roles, masters
 * and epochs, queues and rates per set, a set that went down.
 */
let browser: Browser;
beforeAll(async () => {
  if (hasChromium) browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

const pins = { channels: { 'qa0/v1': { set: 'a' }, 'qa1/v1': { set: 'a' }, 'qb0/v1': { set: 'b' } } };

describe.skipIf(!hasChromium)('dashboard cluster view in Chromium', () => {
  test('sets with their brokers, roles, epochs, queues and rates; a stopped set shows down; no cluster block: no view', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const a = await clusterBroker(spec, 'a', 'a1', { ...pins, management: { port: 0 } });
    const b = await clusterBroker(spec, 'b', 'b1', pins);
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2, 10_000, 'both sets registered');
    const producer = await connect('dashboard-cluster-producer', a.hostSpec);
    for (const q of ['qa0/v1', 'qa1/v1', 'qb0/v1']) await producer.send(`${q}/x` as `${string}/${string}/${string}`, { first: true });
    let sending = true;
    let failure: Error | undefined;
    const traffic = (async () => {
      // a refused send waits a little: a loop of rejections at once would starve the event loop
      while (sending) await producer.send('qb0/v1/x', { n: 1 }).catch((error: Error) => ((failure ??= error), new Promise((resolve) => setTimeout(resolve, 10))));
    })();

    const { page, cspViolations, pageErrors } = await openPage(browser);
    await page.goto(`http://127.0.0.1:${a.managementPort}/`);
    const row = (set: string) => page.locator(`#cluster-rows tr[data-set="${set}"] td`).allTextContents();
    await page.locator('#cluster-rows tr[data-set="b"]').waitFor();
    expect(await page.locator('#cluster').isVisible()).toBe(true);
    expect(await page.locator('#cluster-set').textContent()).toBe('this broker: set a');
    expect(await page.locator('#cluster-etcd').isVisible()).toBe(false);
    const epochA = String(a.election!.epoch);
    expect((await row('a')).slice(0, 6)).toEqual(['a', 'a1', a.hostSpec, 'master', epochA, '2']);
    // set b's rates come from b1 through etcd: seen here once it published them (every 5 s)
    await expect.poll(async () => Number((await row('b'))[7]), { timeout: 20_000, interval: 500 }).toBeGreaterThan(0);
    expect((await row('b')).slice(0, 6)).toEqual(['b', 'b1', b.hostSpec, 'master', String(b.election!.epoch), '1']);
    expect(await page.locator('#cluster-note').textContent()).toMatch(/^3 of at most 10,000 queues placed\./);

    sending = false;
    await traffic;
    if (failure) console.log(`a send was refused: ${failure.message}`);
    await producer.disconnect();
    await b.stop(); // leaves the map at once: set b keeps its queue, without a broker
    await expect.poll(() => row('b'), { timeout: 10_000 }).toEqual(['b', 'down: no broker registered', '1', '-', '-', '-', '-']);
    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);

    // a broker without a cluster block: no cluster view (its /api/cluster is 404)
    const single = await broker({ management: { port: 0 } });
    const other = await openPage(browser);
    await other.page.goto(`http://127.0.0.1:${single.managementPort}/`);
    await other.page.locator('body[data-ready="true"]').waitFor();
    expect(await other.page.locator('#cluster').isVisible()).toBe(false);
    expect(other.pageErrors).toEqual([]);
  }, 90_000);
});
