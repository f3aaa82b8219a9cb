import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { startBroker, type Broker, type BrokerOptions } from '../../src/server/start.js';
import { WhiskerClient } from '../../src/client/client.js';
import type { ClientConfig, DeliveryInfo, Done } from '../../src/client/types.js';
import { buildConfig } from '../../src/config/load.js';
import { loadOrCreateKeys } from '../../src/link/keys.js';
import type { Config } from '../../src/config/types.js';

/**
 * One place that starts real brokers on port 0 in temp dirs and real clients, and closes
 * everything after each test (STYLE.md habit 11).
 */
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  while (cleanups.length > 0) {
    const cleanup = cleanups.pop()!;
    await cleanup();
  }
});

/** a loopback port nobody listens on (free when asked: a broker process may take it next) */
export { freePort } from './ports.js';

export function tempDir(prefix = 'whisker-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function brokerConfig(overrides: Record<string, unknown> = {}, dir = tempDir()): Config {
  const socketServer = { port: 0, ...(overrides.socketServer as object | undefined) };
  return buildConfig({ logLevel: 'silent', ...overrides, socketServer }, dir, null);
}

export interface TestBroker extends Broker {
  readonly dir: string;
  /** `127.0.0.1:port@serviceId` */
  readonly hostSpec: string;
}

export async function broker(overrides: Record<string, unknown> = {}, options: BrokerOptions = {}): Promise<TestBroker> {
  const dir = tempDir();
  const started = await startBroker(brokerConfig(overrides, dir), options);
  cleanups.push(() => started.stop());
  return Object.defineProperties(started, {
    dir: { value: dir },
    hostSpec: { value: `127.0.0.1:${started.port}@${started.config.serviceId}` },
  }) as TestBroker;
}

const keyDirs = new Map<string, string>();

/** a connected client; one key pair per client name for the whole test file */
export async function connect(name: string, hosts: string | string[], extra: Partial<ClientConfig> = {}): Promise<WhiskerClient> {
  const c = unconnected();
  await c.connect(clientConfig(name, hosts, extra));
  return c;
}

export function clientConfig(name: string, hosts: string | string[], extra: Partial<ClientConfig> = {}): ClientConfig {
  let keysDirectory = keyDirs.get(name);
  if (!keysDirectory) {
    keysDirectory = mkdtempSync(join(tmpdir(), `whisker-keys-${name}-`));
    loadOrCreateKeys(keysDirectory, 'client'); // made here: a client that makes its own keys warns
    keyDirs.set(name, keysDirectory);
  }
  return { hosts: Array.isArray(hosts) ? hosts : [hosts], clientId: name, keysDirectory, connectTimeout: 3000, reconnect: { initialMs: 50, maxMs: 500 }, ...extra };
}

export function unconnected(): WhiskerClient {
  const c = new WhiskerClient();
  cleanups.push(() => c.disconnect());
  return c;
}

/** resolves when `predicate` holds, checked on every event-loop turn; fails after `timeoutMs` */
export async function until(predicate: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

export interface Received {
  msg: unknown;
  info: DeliveryInfo;
}

/** collects what handlers received; `waitFor(n)` resolves once n items arrived */
export class Inbox<T = Received> {
  readonly items: T[] = [];
  #waiters: Array<{ count: number; resolve: () => void }> = [];

  push(item: T): void {
    this.items.push(item);
    this.#waiters = this.#waiters.filter((w) => {
      if (this.items.length < w.count) return true;
      w.resolve();
      return false;
    });
  }

  get length(): number {
    return this.items.length;
  }

  waitFor(count: number, timeoutMs = 5000): Promise<T[]> {
    if (this.items.length >= count) return Promise.resolve(this.items);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`expected ${count} items, got ${this.items.length}`)), timeoutMs);
      this.#waiters.push({ count, resolve: () => { clearTimeout(timer); resolve(this.items); } });
    });
  }

  /**
   * Resolves at `count` items, however long that takes while they keep coming; rejects once
   * `stallMs` pass without a new one. For large transfers whose pace is the machine's load.
   */
  async waitWhileArriving(count: number, stallMs = 10_000): Promise<T[]> {
    for (;;) {
      const had = this.items.length;
      try {
        return await this.waitFor(count, stallMs);
      } catch (error) {
        if (this.items.length === had) throw error;
      }
    }
  }

  /** a listen handler that records every message */
  listener = (err: Error | null, msg?: unknown, info?: DeliveryInfo): void => {
    if (err) throw err;
    this.push({ msg, info: info! } as T);
  };

  /** a consume handler that records and acks every message */
  consumer = (err: Error | null, msg?: unknown, done?: Done, info?: DeliveryInfo): void => {
    if (err) throw err;
    this.push({ msg, info: info! } as T);
    done!();
  };
}

/** a promise that resolves on the next `event` of `emitter` */
export function once<T = unknown>(emitter: { once: (...args: never[]) => unknown }, event: string): Promise<T> {
  // any emitter, the client's typed events included (their listener types depend on the name)
  const on = emitter.once as unknown as (event: string, fn: (value: T) => void) => unknown;
  return new Promise((resolve) => void on.call(emitter, event, resolve));
}
