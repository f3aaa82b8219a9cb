import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';

/** Debian's Chromium, headless, driven by playwright-core (CI installs it: .ci/run). */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export interface Watched {
  page: Page;
  /** alert/confirm/prompt messages: the page itself never opens one, a hostile id must not either */
  dialogs: string[];
  cspViolations: string[];
  pageErrors: string[];
}

export async function openPage(browser: Browser, width = 1200): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width, height: 800 } });
  const page = await context.newPage();
  const watched: Watched = { page, dialogs: [], cspViolations: [], pageErrors: [] };
  page.on('dialog', (dialog) => {
    watched.dialogs.push(dialog.message());
    dialog.dismiss().catch(() => undefined); // the page may be closing
  });
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) watched.cspViolations.push(message.text());
  });
  page.on('pageerror', (error) => watched.pageErrors.push(error.message));
  // the browser closing closes the page too: its context is then closed already (not an error)
  page.on('close', () => void context.close().catch(() => undefined));
  return watched;
}
