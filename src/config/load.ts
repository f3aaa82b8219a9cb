import { parseHost } from '../link/hosts.js';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { configSchema } from './schema.js';
import type { Config } from './types.js';

/** A config that cannot be used; `message` names the key (docs/configuration.md). */
export class ConfigError extends Error {
  readonly key: string;
  constructor(key: string, message: string) {
    super(key ? `config key "${key}": ${message}` : `config: ${message}`);
    this.name = 'ConfigError';
    this.key = key;
  }
}

const ajv = new Ajv({ allErrors: false, useDefaults: true, strict: true, allowUnionTypes: true });
const validate = ajv.compile(configSchema);

function keyOf(error: ErrorObject): string {
  const path = error.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'additionalProperties') path.push(String(error.params.additionalProperty));
  if (error.keyword === 'required') path.push(String(error.params.missingProperty));
  if (error.keyword === 'propertyNames') path.push(String(error.params.propertyName));
  else if (error.propertyName !== undefined) path.push(error.propertyName);
  return path.join('.');
}

function describe(error: ErrorObject): string {
  if (error.keyword === 'additionalProperties') return 'unknown key';
  if (error.keyword === 'propertyNames' || error.propertyName !== undefined) return 'channel names must be "endpoint/version"';
  if (error.keyword === 'enum') return `must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  return error.message ?? 'invalid';
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Kitten-MQ config keys that have no meaning here: accepted, named in a warning (docs/migrating-from-kitten.md) */
const REFERENCE_KEYS = ['logsDirectory', 'packetsFilename', 'serverId', 'isManagementInterface'] as const;
const REFERENCE_SOCKET_KEYS = ['logs', 'packetsFilename'] as const;

function stripReferenceKeys(config: Record<string, unknown>): string[] {
  const ignored: string[] = [];
  for (const key of REFERENCE_KEYS) {
    if (!Object.hasOwn(config, key)) continue;
    delete config[key];
    ignored.push(key);
  }
  const socket = config.socketServer;
  if (typeof socket === 'object' && socket !== null && !Array.isArray(socket)) {
    const fields = socket as Record<string, unknown>;
    for (const key of REFERENCE_SOCKET_KEYS) {
      if (!Object.hasOwn(fields, key)) continue;
      delete fields[key];
      ignored.push(`socketServer.${key}`);
    }
    // the reference's way of saying "no token"
    if (fields.token === null) {
      delete fields.token;
      ignored.push('socketServer.token (null)');
    }
  }
  return ignored;
}

/**
 * Validates a parsed config object, applies defaults once and resolves relative paths
 * against `baseDirectory` (the config file's folder). Throws ConfigError naming the key.
 */
export function buildConfig(raw: unknown, baseDirectory: string, configPath: string | null): Config {
  const copy: unknown = raw === undefined ? {} : structuredClone(raw);
  if (typeof copy !== 'object' || copy === null || Array.isArray(copy)) {
    throw new ConfigError('', 'the file must hold one JSON object');
  }
  const ignoredKeys = stripReferenceKeys(copy as Record<string, unknown>);
  if (!validate(copy)) {
    const error = validate.errors?.[0];
    throw error ? new ConfigError(keyOf(error), describe(error)) : new ConfigError('', 'invalid');
  }
  const config = copy as Record<string, unknown> & Omit<Config, 'configPath' | 'ignoredKeys'>;
  checkPeers(config.peers, config.serviceId);
  const paths = ['dataDirectory', 'registeredClientsPath', 'keysDirectory'] as const;
  const resolved: Record<string, string> = {};
  for (const key of paths) resolved[key] = resolve(baseDirectory, config[key]);
  const tls = config.socketServer.tls;
  const socketServer = tls
    ? {
        ...config.socketServer,
        tls: {
          cert: resolve(baseDirectory, tls.cert),
          key: resolve(baseDirectory, tls.key),
          ...(tls.ca ? { ca: resolve(baseDirectory, tls.ca) } : {}),
        },
      }
    : config.socketServer;
  return deepFreeze({ ...config, ...resolved, socketServer, configPath, ignoredKeys } as Config);
}

/** each peer is a host string naming its serviceId, another broker's, once (SPEC §9) */
function checkPeers(peers: readonly string[], serviceId: string): void {
  const seen = new Set<string>();
  peers.forEach((spec, index) => {
    let target;
    try {
      target = parseHost(spec);
    } catch (error) {
      throw new ConfigError(`peers[${index}]`, (error as Error).message);
    }
    if (!target.serviceId) throw new ConfigError(`peers[${index}]`, `"${spec}" must name the peer's serviceId: host:port@serviceId`);
    if (target.serviceId === serviceId) throw new ConfigError(`peers[${index}]`, `"${spec}" is this broker's own serviceId`);
    if (seen.has(target.serviceId)) throw new ConfigError(`peers[${index}]`, `serviceId "${target.serviceId}" is listed twice`);
    seen.add(target.serviceId);
  });
}

/** Reads and validates a config file. */
export function loadConfigFile(path: string): Config {
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError('', `cannot read ${absolute}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError('', `${absolute} is not valid JSON: ${(error as Error).message}`);
  }
  return buildConfig(raw, dirname(absolute), absolute);
}

/** The built-in default: 127.0.0.1, data under ./whisker-data of the working directory. */
export function defaultConfig(overrides: Record<string, unknown> = {}): Config {
  return buildConfig(overrides, process.cwd(), null);
}
