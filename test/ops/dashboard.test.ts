import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Done } from '../../src/client/types.js';
import { broker, connect, tempDir } from '../support/harness.js';
import { countColour, decodePng, distinctColours } from '../support/png.js';

/** The dashboard at `/` in a real headless Chromium (SPEC §11, docs/management.md#dashboard). */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`dashboard tests skipped: ${CHROMIUM} is absent (CI installs Debian's chromium; locally: apt-get install -y chromium)`);

const HOSTILE = '<img src=x onerror=alert(1)>';
/** the header's background in the page's CSS: seen only if the style's CSP hash is right */
const HEADER_RGB: [number, number, number] = [0x1d, 0x23, 0x30];

let browser: Browser;

beforeAll(async () => {
  if (!hasChromium) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

afterAll(async () => {
  await browser?.close();
});

interface Watched {
  page: Page;
  dialogs: string[];
  cspViolations: string[];
}

async function openPage(): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  const dialogs: string[] = [];
  const cspViolations: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  page.on('close', () => void context.close());
  return { page, dialogs, cspViolations };
}

const cells = (page: Page, queue: string) => page.locator(`#queue-rows tr[data-queue="${queue}"] td`).allTextContents();

describe.skipIf(!hasChromium)('dashboard in Chromium', () => {
  test('shows role, uptime, queues with depth and in flight, clients; hostile ids stay text; screenshots render', async () => {
    const b = await broker({ management: { port: 0 } });
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    const held: Done[] = [];
    await worker.consume(`jobs/v1/${encodeURIComponent(HOSTILE)}`, { prefetch: 1 }, (_err, _msg, done) => void held.push(done!)).ready;
    for (let i = 0; i < 2; i++) await producer.send(`news/v1/${encodeURIComponent(HOSTILE)}`, i);
    for (let i = 0; i < 2; i++) await producer.send(`jobs/v1/${encodeURIComponent(HOSTILE)}`, i);

    const { page, dialogs, cspViolations } = await openPage();
    const response = await page.goto(`http://127.0.0.1:${b.managementPort}/`);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'sha256-");
    await page.locator('#queue-rows tr[data-queue="news/v1"]').waitFor();

    expect(await page.locator('#role').textContent()).toBe('master');
    expect(await page.locator('#status').textContent()).toBe('ok');
    expect(await page.locator('#service').textContent()).toBe(b.config.serviceId);
    expect(await page.locator('#uptime').textContent()).toMatch(/^(\d+[dhm] )*\d+s$/);
    expect(await page.locator('#connections').textContent()).toBe('2');
    // name, depth, in flight, held, in/s, out/s, acked/s, requeued, dead-lettered, dropped, expired
    expect((await cells(page, 'news/v1')).slice(0, 4)).toEqual(['news/v1', '2', '0', '2']);
    expect((await cells(page, 'jobs/v1')).slice(0, 4)).toEqual(['jobs/v1', '1', '1', '2']);

    const clientRows = page.locator('#client-rows tr');
    await expect.poll(() => clientRows.count()).toBe(2);
    const workerRow = page.locator('#client-rows tr', { hasText: 'worker' });
    expect(await workerRow.locator('.mode').textContent()).toBe('consume');
    expect(await workerRow.locator('.id').allTextContents()).toEqual([HOSTILE]);

    // the ids of a queue, on a click
    await page.getByRole('button', { name: 'news/v1' }).click();
    await page.locator('#id-rows tr').first().waitFor();
    expect(await page.locator('#detail-name').textContent()).toBe('news/v1');
    expect((await page.locator('#id-rows tr td').allTextContents()).slice(0, 2)).toEqual([HOSTILE, '2']);

    // hostile ids are text: no element made from them, no handler ran, nothing refused by the CSP
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.getByText(HOSTILE, { exact: true }).count()).toBe(2);
    expect(dialogs).toEqual([]);
    expect(cspViolations).toEqual([]);

    const dir = tempDir('whisker-dashboard-');
    const before = join(dir, 'before.png');
    await page.screenshot({ path: before, fullPage: true });
    const first = decodePng(readFileSync(before));
    expect(first.width).toBe(1200);
    expect(first.height).toBeGreaterThan(100);
    expect(distinctColours(first)).toBeGreaterThan(20);
    expect(countColour(first, HEADER_RGB)).toBeGreaterThan(1200 * 20);

    // more traffic: the page follows without a reload
    for (let i = 0; i < 3; i++) await producer.send(`news/v1/${encodeURIComponent(HOSTILE)}`, i);
    await expect.poll(async () => (await cells(page, 'news/v1'))[1], { timeout: 5000 }).toBe('5');
    await expect.poll(async () => (await page.locator('#id-rows tr td').allTextContents()).slice(0, 2), { timeout: 5000 }).toEqual([HOSTILE, '5']);
    const after = join(dir, 'after.png');
    await page.screenshot({ path: after, fullPage: true });
    expect(readFileSync(after).equals(readFileSync(before))).toBe(false);
    expect(dialogs).toEqual([]);
    held[0]!();
    await page.close();
  });

  test('with a token: taken once from ?token=, kept in sessionStorage, dropped from the address bar', async () => {
    const b = await broker({ management: { port: 0, token: 'dash-token' } });
    const producer = await connect('producer', b.hostSpec);
    await producer.send('news/v1/a', 1);
    const base = `http://127.0.0.1:${b.managementPort}/`;

    const { page } = await openPage();
    await page.goto(`${base}?token=dash-token`);
    await page.locator('#queue-rows tr[data-queue="news/v1"]').waitFor();
    expect(page.url()).toBe(base);
    expect(await page.evaluate(() => (globalThis as unknown as { sessionStorage: { getItem(k: string): string | null } }).sessionStorage.getItem('whisker.managementToken'))).toBe('dash-token');
    // a reload of the page keeps working from sessionStorage
    await page.reload();
    await page.locator('#queue-rows tr[data-queue="news/v1"]').waitFor();
    await page.close();

    // a fresh tab without the token asks for it, then shows the broker
    const fresh = (await openPage()).page;
    await fresh.goto(base);
    await fresh.locator('#auth').waitFor({ state: 'visible' });
    expect(await fresh.locator('#queue-rows tr').count()).toBe(0);
    await fresh.locator('#token-input').fill('dash-token');
    await fresh.getByRole('button', { name: 'Use' }).click();
    await fresh.locator('#queue-rows tr[data-queue="news/v1"]').waitFor();
    expect(await fresh.locator('#auth').isHidden()).toBe(true);
    await fresh.close();
  });

  test('shows a soft-stopping broker as such', async () => {
    const b = await broker({ management: { port: 0 } });
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    const held: Done[] = [];
    await worker.consume('jobs/v1/a', (_err, _msg, done) => void held.push(done!)).ready;
    await producer.send('jobs/v1/a', 1);
    const { page } = await openPage();
    await page.goto(`http://127.0.0.1:${b.managementPort}/`);
    await expect.poll(() => page.locator('#status').textContent()).toBe('ok');
    const softStopped = b.softStop();
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 5000 }).toBe('stopping: broker is stopping');
    expect(await page.locator('#status').getAttribute('class')).toBe('badge stopping');
    held[0]!();
    await softStopped;
    await page.close();
  });
});
