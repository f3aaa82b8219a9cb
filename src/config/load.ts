import { parseHost } from '../link/hosts.js';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { ConfigError, gatherProblems, parseConfigText } from './text.js';
import { type Problem, problemsOf } from './problems.js';
import { configSchema } from './schema.js';
import type { Config, ElectionConfig } from './types.js';

export { ConfigError, gatherProblems, parseConfigText };

// allErrors: a file is fixed in one go, not one key per run; verbose: the schema of an unknown key's parent, for "did you mean"
const ajv = new Ajv({ allErrors: true, verbose: true, useDefaults: true, strict: true, allowUnionTypes: true });
const validate = ajv.compile(configSchema);

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** the warnings a loaded file earns, at start and at every reload (docs/migrating-from-kitten.md) */
export function kittenWarnings(config: Pick<Config, 'renamedKeys' | 'ignoredKeys' | 'serviceId'>): string[] {
  const warnings: string[] = [];
  if (config.renamedKeys.includes('serverId')) warnings.push(`Kitten-MQ's "serverId" is used as this broker's "serviceId" (${config.serviceId}): rename the key to "serviceId" (docs/migrating-from-kitten.md)`);
  if (config.ignoredKeys.length > 0) warnings.push(`Kitten-MQ config keys with no meaning here, ignored: ${config.ignoredKeys.join(', ')} (docs/migrating-from-kitten.md)`);
  return warnings;
}

/** Kitten-MQ config keys that have no meaning here: accepted, named in a warning (docs/migrating-from-kitten.md) */
const REFERENCE_KEYS = ['logsDirectory', 'packetsFilename', 'isManagementInterface'] as const;
const REFERENCE_SOCKET_KEYS = ['logs', 'packetsFilename'] as const;

/** Kitten's README calls the broker's id `serverId`: the id when `serviceId` is absent (SPEC §10) */
function renameServerId(config: Record<string, unknown>, renamed: string[]): string[] {
  if (!Object.hasOwn(config, 'serverId')) return [];
  const { serverId } = config;
  delete config.serverId;
  if (Object.hasOwn(config, 'serviceId')) return ['serverId (serviceId is set)'];
  config.serviceId = serverId;
  renamed.push('serverId');
  return [];
}

/** Kitten's README sets keysName to a path; here it is a file name inside keysDirectory */
function keysNameProblem(config: Record<string, unknown>): Problem | null {
  const { keysName } = config;
  if (typeof keysName !== 'string' || !/[/\\]/.test(keysName)) return null;
  const name = keysName.split(/[/\\]/).filter(Boolean).pop() ?? 'broker';
  return { key: 'keysName', message: `"${keysName}" is a path, but keysName is the key pair's file name: put the folder in "keysDirectory" and write only the name here, e.g. "keysName": "${/^[A-Za-z0-9._-]{1,128}$/.test(name) ? name : 'broker'}"` };
}

function stripReferenceKeys(config: Record<string, unknown>, renamed: string[]): string[] {
  const ignored: string[] = renameServerId(config, renamed);
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
export function buildConfig(raw: unknown, baseDirectory: string, configPath: string | null, check?: ConfigCheck): Config {
  const copy: unknown = raw === undefined ? {} : structuredClone(raw);
  if (typeof copy !== 'object' || copy === null || Array.isArray(copy)) {
    throw new ConfigError('', 'the file must hold one JSON object');
  }
  const renamedKeys: string[] = [];
  const ignoredKeys = stripReferenceKeys(copy as Record<string, unknown>, renamedKeys);
  const keysName = keysNameProblem(copy as Record<string, unknown>);
  if (keysName) delete (copy as Record<string, unknown>).keysName;
  const problems = validate(copy) ? [] : problemsOf(validate.errors ?? []);
  if (keysName) problems.unshift(keysName);
  const config = copy as Record<string, unknown> & Omit<Config, 'configPath' | 'ignoredKeys' | 'renamedKeys'>;
  if (Array.isArray(config.peers)) problems.push(...peerProblems(config.peers ?? [], config.serviceId));
  if (problems.length === 0) problems.push(...portClash(config), ...clusterProblems(config));
  if (check) problems.push(...laterProblems(problems, check, copy));
  if (problems.length > 0) throw ConfigError.of(problems);
  const paths = ['dataDirectory', 'registeredClientsPath', 'keysDirectory'] as const;
  const resolved: Record<string, string> = {};
  for (const key of paths) resolved[key] = resolve(baseDirectory, config[key]);
  const tls = config.socketServer.tls;
  const socketServer = tls
    ? {
        ...config.socketServer,
        tls: {
          ...tls,
          cert: resolve(baseDirectory, tls.cert),
          key: resolve(baseDirectory, tls.key),
          ...(tls.ca ? { ca: resolve(baseDirectory, tls.ca) } : {}),
        },
      }
    : config.socketServer;
  const peerTls = config.peerTls ? resolvePaths(config.peerTls, ['ca', 'cert', 'key'], baseDirectory) : undefined;
  const election = config.election?.etcd.tls ? resolveElectionTls(config.election, baseDirectory) : config.election;
  return deepFreeze({ ...config, ...resolved, socketServer, ...(peerTls ? { peerTls } : {}), ...(election ? { election } : {}), configPath, ignoredKeys, renamedKeys } as Config);
}

/**
 * The cluster block needs the election (each set elects its master through the same etcd); its
 * keys must not sit under the election's (SPEC §13); `advertise` names this broker, no token.
 */
function clusterProblems(config: Pick<Config, 'cluster' | 'election' | 'serviceId' | 'channels'>): Problem[] {
  const { cluster, election } = config;
  const problems: Problem[] = [];
  if (!cluster) {
    for (const [queue, settings] of Object.entries(config.channels)) {
      if (settings.set !== undefined) problems.push({ key: `channels.${queue}.set`, message: 'pins a queue to a set of a cluster: it needs the "cluster" block' });
    }
    return problems;
  }
  if (!election) problems.push({ key: 'cluster', message: 'needs the "election" block: each set elects its master through etcd, and the cluster uses the same etcd' });
  else if (cluster.prefix === election.prefix || cluster.prefix.startsWith(`${election.prefix}/`) || election.prefix.startsWith(`${cluster.prefix}/`)) {
    problems.push({ key: 'cluster.prefix', message: `"${cluster.prefix}" overlaps election.prefix "${election.prefix}": the cluster's keys and each set's election keys live apart` });
  }
  let target;
  try {
    target = parseHost(cluster.advertise);
  } catch (error) {
    problems.push({ key: 'cluster.advertise', message: (error as Error).message });
    return problems;
  }
  if (target.socketToken !== undefined) problems.push({ key: 'cluster.advertise', message: 'must not carry a token: clients reuse the token of the hosts they were given, and the map is shown to every client' });
  if (target.serviceId !== undefined && target.serviceId !== config.serviceId) problems.push({ key: 'cluster.advertise', message: `names serviceId "${target.serviceId}", but this broker is "${config.serviceId}"` });
  return problems;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** both listeners on one port: the second bind would fail as if another process held it */
function portClash(config: Pick<Config, 'socketServer' | 'management'>): Array<{ key: string; message: string }> {
  const management = config.management;
  const socket = config.socketServer;
  if (!management || management.port === 0 || management.port !== socket.port) return [];
  const sameHost = management.host === socket.host || WILDCARDS.has(management.host ?? '') || WILDCARDS.has(socket.host ?? '');
  if (!sameHost) return [];
  return [{ key: 'management.port', message: `${management.port} is socketServer.port too: the management HTTP needs a port of its own` }];
}

function resolvePaths<T extends object>(block: T, keys: ReadonlyArray<keyof T & string>, baseDirectory: string): T {
  const out = { ...block } as Record<string, unknown>;
  for (const key of keys) if (typeof out[key] === 'string') out[key] = resolve(baseDirectory, out[key]);
  return out as T;
}

function resolveElectionTls(election: ElectionConfig, baseDirectory: string): ElectionConfig {
  const { ca, cert, key } = election.etcd.tls!;
  const tls = { ca: resolve(baseDirectory, ca), ...(cert ? { cert: resolve(baseDirectory, cert) } : {}), ...(key ? { key: resolve(baseDirectory, key) } : {}) };
  return { ...election, etcd: { ...election.etcd, tls } };
}

/** each peer is a host string naming its serviceId, another broker's, once (SPEC §9) */
function peerProblems(peers: readonly unknown[], serviceId: unknown): Problem[] {
  const seen = new Set<string>();
  const problems: Problem[] = [];
  peers.forEach((spec, index) => {
    if (typeof spec !== 'string') return; // the schema said so already
    const key = `peers[${index}]`;
    let target;
    try {
      target = parseHost(spec);
    } catch (error) {
      problems.push({ key, message: (error as Error).message });
      return;
    }
    if (!target.serviceId) problems.push({ key, message: `"${spec}" must name the peer's serviceId: host:port@serviceId` });
    else if (target.serviceId === serviceId) problems.push({ key, message: `"${spec}" is this broker's own serviceId` });
    else if (seen.has(target.serviceId)) problems.push({ key, message: `serviceId "${target.serviceId}" is listed twice` });
    if (target.serviceId) seen.add(target.serviceId);
  });
  return problems;
}

/**
 * What the broker checks once the keys are valid (rules, channel formats: broker/access/policy.ts),
 * run on the same file so every problem is told at once. It may see a file the schema refused.
 */
export type ConfigCheck = (config: unknown) => readonly Problem[];

/** the check's problems not told already; a check that trips on a file the schema refused adds nothing */
function laterProblems(told: readonly Problem[], check: ConfigCheck, config: unknown): Problem[] {
  let found: readonly Problem[];
  try {
    found = check(config);
  } catch {
    return [];
  }
  const keys = new Set(told.map((problem) => problem.key));
  return found.filter((problem) => !keys.has(problem.key));
}

/** Reads and validates a config file; `check`: see ConfigCheck. */
export function loadConfigFile(path: string, check?: ConfigCheck): Config {
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError('', `cannot read ${absolute}: ${(error as Error).message}`);
  }
  return buildConfig(parseConfigText(text, absolute), dirname(absolute), absolute, check);
}

/** The built-in default: 127.0.0.1, data under ./whisker-data of the working directory. */
export function defaultConfig(overrides: Record<string, unknown> = {}): Config {
  return buildConfig(overrides, process.cwd(), null);
}
