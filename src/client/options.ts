import { resolve } from 'node:path';
import { WhiskerError } from '../protocol/errors.js';
import { type HostTarget, parseHost } from '../link/hosts.js';
import { type ClientKeys, keysFromPem, loadOrCreateKeys } from '../link/keys.js';
import type { ClientConfig } from './types.js';

/** connect()'s config with defaults applied once (docs/client.md#connect). */
export interface ClientOptions {
  readonly hosts: readonly HostTarget[];
  readonly clientId: string;
  readonly connectTimeoutMs: number;
  readonly sendTimeoutMs: number;
  readonly maxBufferedMessages: number;
  readonly dedupeWindowSeconds: number;
  readonly reconnect: { readonly initialMs: number; readonly maxMs: number; readonly factor: number; readonly authRetryMs: number };
  readonly handlerRetry: { readonly initialSeconds: number; readonly maxSeconds: number; readonly factor: number };
  readonly tls: ClientConfig['tls'];
  readonly heartbeatTimeoutMs: number | undefined;
}

export const DEFAULTS = {
  connectTimeoutMs: 10_000,
  sendTimeoutMs: 30_000,
  maxBufferedMessages: 10_000,
  dedupeWindowSeconds: 120,
  reconnect: { initialMs: 200, maxMs: 20_000, factor: 1.5, authRetryMs: 300_000 },
  handlerRetry: { initialSeconds: 1, maxSeconds: 60, factor: 2 },
} as const;

const CLIENT_NAME = /^(?!\.+$)[A-Za-z0-9._-]{1,128}$/;

function bad(message: string): WhiskerError {
  return new WhiskerError('E_BAD_ARGUMENT', message);
}

function positive(value: unknown, key: string, fallback: number, orZero = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || !(value > 0 || (orZero && value === 0))) {
    throw bad(`${key} must be a ${orZero ? 'number >= 0' : 'positive number'}`);
  }
  return value;
}

export function clientOptions(config: ClientConfig): ClientOptions {
  if (typeof config !== 'object' || config === null) throw bad('connect() needs a config object');
  if (!Array.isArray(config.hosts) || config.hosts.length === 0) throw bad('hosts must list at least one broker');
  if (typeof config.clientId !== 'string' || !CLIENT_NAME.test(config.clientId)) throw bad('clientId must match ^[A-Za-z0-9._-]{1,128}$ and not be dots only (., .., ...)');
  const hosts = config.hosts.map((spec) => {
    try {
      return parseHost(spec);
    } catch (error) {
      throw bad((error as Error).message);
    }
  });
  const r = config.reconnect ?? {};
  const h = config.handlerRetry ?? {};
  return {
    hosts,
    clientId: config.clientId,
    connectTimeoutMs: positive(config.connectTimeout, 'connectTimeout', DEFAULTS.connectTimeoutMs),
    sendTimeoutMs: positive(config.sendTimeout, 'sendTimeout', DEFAULTS.sendTimeoutMs),
    maxBufferedMessages: positive(config.maxBufferedMessages, 'maxBufferedMessages', DEFAULTS.maxBufferedMessages),
    dedupeWindowSeconds: positive(config.dedupeWindow, 'dedupeWindow', DEFAULTS.dedupeWindowSeconds, true), // 0: off
    reconnect: {
      initialMs: positive(r.initialMs, 'reconnect.initialMs', DEFAULTS.reconnect.initialMs),
      maxMs: positive(r.maxMs, 'reconnect.maxMs', DEFAULTS.reconnect.maxMs),
      factor: positive(r.factor, 'reconnect.factor', DEFAULTS.reconnect.factor),
      authRetryMs: positive(r.authRetryMs, 'reconnect.authRetryMs', DEFAULTS.reconnect.authRetryMs),
    },
    handlerRetry: {
      initialSeconds: positive(h.initialSeconds, 'handlerRetry.initialSeconds', DEFAULTS.handlerRetry.initialSeconds),
      maxSeconds: positive(h.maxSeconds, 'handlerRetry.maxSeconds', DEFAULTS.handlerRetry.maxSeconds),
      factor: positive(h.factor, 'handlerRetry.factor', DEFAULTS.handlerRetry.factor),
    },
    tls: config.tls,
    heartbeatTimeoutMs: config.heartbeatTimeout,
  };
}

/**
 * The key pair: from `privateKey` (PEM text) when given, else the files in `keysDirectory`,
 * resolved against `process.cwd()`; a pair made there is reported through `onCreate`.
 */
export function clientKeys(config: ClientConfig, onCreate: (privatePath: string) => void): ClientKeys {
  if (config.privateKey !== undefined) return keysFromPem(config.privateKey, config.publicKey);
  if (config.publicKey !== undefined) throw new WhiskerError('E_KEYS', 'publicKey is given without privateKey');
  return loadOrCreateKeys(resolve(config.keysDirectory ?? 'keys'), config.keysName ?? 'client', onCreate);
}
