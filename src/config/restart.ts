import { isDeepStrictEqual } from 'node:util';
import { deepFreeze } from './load.js';
import type { Config } from './types.js';

/**
 * Keys a running broker takes at start only (docs/operations.md#what-a-reload-applies): its
 * sockets, its directories and the WebSocket frame limit. A reload keeps their running value.
 */
export const RESTART_KEYS = [
  'socketServer.host',
  'socketServer.port',
  'socketServer.tls',
  'dataDirectory',
  'registeredClientsPath',
  'keysDirectory',
  'keysName',
  'management',
  'limits.maxPayloadBytes',
  'election',
  'cluster',
] as const;

function valueAt(config: Config, path: string): unknown {
  let value: unknown = config;
  for (const part of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[part];
  return value;
}

/** dotted names of the restart-only keys whose value differs, leaves first (`management.port`) */
export function restartOnlyChanges(running: Config, next: Config): string[] {
  const changed: string[] = [];
  for (const path of RESTART_KEYS) {
    const before = valueAt(running, path);
    const after = valueAt(next, path);
    if (isDeepStrictEqual(before, after)) continue;
    const isObject = (v: unknown) => typeof v === 'object' && v !== null;
    if (isObject(before) && isObject(after)) {
      const keys = new Set([...Object.keys(before as object), ...Object.keys(after as object)]);
      for (const key of [...keys].sort()) {
        if (!isDeepStrictEqual((before as Record<string, unknown>)[key], (after as Record<string, unknown>)[key])) changed.push(`${path}.${key}`);
      }
    } else {
      changed.push(path);
    }
  }
  return changed;
}

/** `next` with every restart-only key at its running value, frozen: what a reload swaps in */
export function keepRestartKeys(running: Config, next: Config): Config {
  const { tls } = running.socketServer;
  const { tls: _tls, ...nextSocket } = next.socketServer;
  const { management: _management, election: _election, cluster: _cluster, ...rest } = next;
  return deepFreeze({
    ...rest,
    dataDirectory: running.dataDirectory,
    registeredClientsPath: running.registeredClientsPath,
    keysDirectory: running.keysDirectory,
    keysName: running.keysName,
    socketServer: { ...nextSocket, host: running.socketServer.host, port: running.socketServer.port, ...(tls ? { tls } : {}) },
    ...(running.management ? { management: running.management } : {}),
    ...(running.election ? { election: running.election } : {}),
    ...(running.cluster ? { cluster: running.cluster } : {}),
    limits: { ...next.limits, maxPayloadBytes: running.limits.maxPayloadBytes },
  });
}
