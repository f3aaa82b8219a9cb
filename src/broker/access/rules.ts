import { ConfigError, gatherProblems } from '../../config/load.js';
import type { Problem } from '../../config/problems.js';
import type { RuleConfig } from '../../config/types.js';
import { parseChannel, WILDCARD } from '../../protocol/channel.js';
import { WhiskerError } from '../../protocol/errors.js';

/**
 * Rules (SPEC §5, docs/security.md): the config's `rules` compiled once into plain predicates.
 * Pure: no I/O, no state that changes after compileRules; every table is a Map or a Set, so a
 * client name or id such as `__proto__` or `constructor` is an ordinary key.
 */
export interface Rules {
  /** may `client` send to this channel? id may be '*' (a send to * needs a pattern covering *: 'ep/ver/*' or 'ep/*') */
  canWrite(client: string, endpoint: string, version: string, id: string): boolean;
  /** may `client` listen/consume/addId this id ('*' subscribes to every id: needs 'ep/ver/*' or 'ep/*' read pattern) */
  canRead(client: string, endpoint: string, version: string, id: string): boolean;
  /** why `canRead` says no: `star-under-reserve` when only `!` patterns cover the queue and id is '*' (null: allowed) */
  readRefusal(client: string, endpoint: string, version: string, id: string): ReadRefusal | null;
  /** is this concrete id (never '*') under a `!` read pattern of ANY rule? (reserved ids: first subscriber owns it) */
  isReserved(endpoint: string, version: string, id: string): boolean;
  /** does this client name match at least one rule's client pattern (used for auto-registration, SPEC §4) */
  matchesAnyRule(client: string): boolean;
}

/** the reason codes of a refused read that the rules alone decide (docs/protocol.md#errors) */
export type ReadRefusal = 'no-rule' | 'star-under-reserve';

// the same shapes as SPEC §2 and src/protocol/channel.ts; a client pattern is a name (SPEC §4)
// or a prefix of one followed by `*`
const ENDPOINT = /^[A-Za-z0-9_-]{1,64}$/;
const VERSION = /^[A-Za-z0-9._-]{1,32}$/;
const CLIENT_PATTERN = /^(?:[A-Za-z0-9._-]{1,128}|[A-Za-z0-9._-]{0,127}\*)$/;
const RESERVED_MARK = '!';

/** One parsed channel pattern: `ep/*` has version and id `*`, `ep/ver/*` has id `*`. */
interface ChannelPattern {
  readonly endpoint: string;
  readonly version: string;
  readonly id: string;
}

interface VersionGrants {
  everyId: boolean;
  readonly ids: Set<string>;
}

interface EndpointGrants {
  everyVersion: boolean;
  readonly versions: Map<string, VersionGrants>;
}

/** A set of channel patterns, answering "is this channel covered?" with Map lookups only. */
class ChannelGrants {
  readonly #endpoints = new Map<string, EndpointGrants>();

  add(pattern: ChannelPattern): void {
    let endpoint = this.#endpoints.get(pattern.endpoint);
    if (!endpoint) {
      endpoint = { everyVersion: false, versions: new Map() };
      this.#endpoints.set(pattern.endpoint, endpoint);
    }
    if (pattern.version === WILDCARD) {
      endpoint.everyVersion = true;
      return;
    }
    let version = endpoint.versions.get(pattern.version);
    if (!version) {
      version = { everyId: false, ids: new Set() };
      endpoint.versions.set(pattern.version, version);
    }
    if (pattern.id === WILDCARD) version.everyId = true;
    else version.ids.add(pattern.id);
  }

  /** id `*` is covered only by `ep/*` or `ep/ver/*`, never by the concrete ids listed. */
  covers(endpointName: string, versionName: string, id: string): boolean {
    const endpoint = this.#endpoints.get(endpointName);
    if (!endpoint) return false;
    if (endpoint.everyVersion) return true;
    const version = endpoint.versions.get(versionName);
    if (!version) return false;
    if (version.everyId) return true;
    return id !== WILDCARD && version.ids.has(id);
  }
}

/** One table of a rule: `plain` leaves out `!` patterns, which never grant `*` (SPEC §5). */
interface CompiledTable {
  readonly all: ChannelGrants;
  readonly plain: ChannelGrants;
}

interface CompiledRule {
  /** undefined: the rule has no `read` key, so it says nothing about reading */
  readonly read: CompiledTable | undefined;
  readonly write: CompiledTable | undefined;
}

type Table = 'read' | 'write';

/** Parses `ep/ver/id`, `ep/ver/*` or `ep/*` (without `!`); the id is canonicalised. */
function parsePattern(text: string, key: string): ChannelPattern {
  const parts = text.split('/');
  if (parts.length !== 2 && parts.length !== 3) {
    throw new ConfigError(key, `"${text}" must be "endpoint/version/id", "endpoint/version/*" or "endpoint/*"`);
  }
  const [endpoint = '', version = '', id] = parts;
  if (endpoint === WILDCARD) throw new ConfigError(key, `"${text}": the endpoint cannot be *`);
  if (!ENDPOINT.test(endpoint)) throw new ConfigError(key, `"${text}": bad endpoint`);
  if (id === undefined) {
    if (version !== WILDCARD) {
      throw new ConfigError(key, `"${text}" needs an id: "endpoint/version/id" or "endpoint/version/*"`);
    }
    return { endpoint, version: WILDCARD, id: WILDCARD };
  }
  if (version === WILDCARD) throw new ConfigError(key, `"${text}": the version cannot be *`);
  if (!VERSION.test(version)) throw new ConfigError(key, `"${text}": bad version`);
  try {
    return { endpoint, version, id: parseChannel(`${endpoint}/${version}/${id}`).id };
  } catch (error) {
    if (error instanceof WhiskerError) throw new ConfigError(key, `"${text}": bad id (encode / * % as %2F %2A %25)`);
    throw error;
  }
}

function compileTable(
  patterns: readonly string[] | undefined,
  table: Table,
  key: string,
  reserved: ChannelGrants,
): CompiledTable | undefined {
  if (patterns === undefined) return undefined;
  const grants = new ChannelGrants();
  const plain = new ChannelGrants();
  const problems: Problem[] = [];
  patterns.forEach((raw, index) => gatherProblems(problems, () => {
    const patternKey = `${key}.${index}`;
    const isReservation = raw.startsWith(RESERVED_MARK);
    if (isReservation && table === 'write') {
      throw new ConfigError(patternKey, `"${raw}": "!" (reserved) is only allowed in read patterns`);
    }
    const pattern = parsePattern(isReservation ? raw.slice(RESERVED_MARK.length) : raw, patternKey);
    grants.add(pattern); // a reserving pattern grants read too, of specific ids only
    if (isReservation) reserved.add(pattern);
    else plain.add(pattern);
  }));
  if (problems.length > 0) throw ConfigError.of(problems);
  return { all: grants, plain };
}

function allowEverything(): Rules {
  return {
    canWrite: () => true,
    canRead: () => true,
    readRefusal: () => null,
    isReserved: () => false,
    // SPEC §4: without a `rules` key auto-registration is not narrowed by client patterns
    matchesAnyRule: () => true,
  };
}

/** rules undefined = no `rules` key: everything allowed for every authenticated client (compat), nothing reserved. */
export function compileRules(rules: readonly RuleConfig[] | undefined, defaultPolicy: 'deny' | 'allow'): Rules {
  if (rules === undefined) return allowEverything();

  const reserved = new ChannelGrants();
  const byName = new Map<string, CompiledRule[]>();
  const byPrefix: { readonly prefix: string; readonly rule: CompiledRule }[] = [];

  // every bad rule and pattern of the file is reported at once
  const problems: Problem[] = [];
  rules.forEach((config, index) => {
    const key = `rules.${index}`;
    if (!CLIENT_PATTERN.test(config.client)) {
      problems.push({ key: `${key}.client`, message: `"${config.client}" must be a client name, a name prefix ending in *, or *` });
    }
    let read: CompiledTable | undefined;
    let write: CompiledTable | undefined;
    gatherProblems(problems, () => (read = compileTable(config.read, 'read', `${key}.read`, reserved)));
    gatherProblems(problems, () => (write = compileTable(config.write, 'write', `${key}.write`, reserved)));
    const rule: CompiledRule = { read, write };
    if (typeof config.client !== 'string') return; // told above; only for policyProblems on a file the schema refused
    if (config.client.endsWith(WILDCARD)) {
      byPrefix.push({ prefix: config.client.slice(0, -WILDCARD.length), rule });
    } else {
      const list = byName.get(config.client) ?? [];
      list.push(rule);
      byName.set(config.client, list);
    }
  });

  if (problems.length > 0) throw ConfigError.of(problems);

  function rulesOf(client: string): CompiledRule[] {
    const matching = [...(byName.get(client) ?? [])];
    for (const { prefix, rule } of byPrefix) if (client.startsWith(prefix)) matching.push(rule);
    return matching;
  }

  // defaultPolicy 'allow' is the reference's reading: each table restricts per client. A client
  // that no rule with a `read` list matches reads everything (likewise write, even channels listed
  // for others); one that does gets exactly its lists. Prefix rules restrict like exact ones.
  function isAllowed(table: Table, client: string, endpoint: string, version: string, id: string): boolean {
    return refusal(table, client, endpoint, version, id) === null;
  }

  function refusal(table: Table, client: string, endpoint: string, version: string, id: string): ReadRefusal | null {
    let restricted = false;
    let underReserve = false;
    for (const rule of rulesOf(client)) {
      const compiled = rule[table];
      if (compiled === undefined) continue;
      // Kitten-MQ README: with `!`, "the client cannot listen on *. It must listen on a specific channel id"
      const grants = id === WILDCARD ? compiled.plain : compiled.all;
      if (grants.covers(endpoint, version, id)) return null;
      if (id === WILDCARD && compiled.all.covers(endpoint, version, id)) underReserve = true;
      restricted = true;
    }
    if (!restricted && defaultPolicy === 'allow') return null;
    return underReserve ? 'star-under-reserve' : 'no-rule';
  }

  return {
    canWrite: (client, endpoint, version, id) => isAllowed('write', client, endpoint, version, id),
    canRead: (client, endpoint, version, id) => isAllowed('read', client, endpoint, version, id),
    readRefusal: (client, endpoint, version, id) => refusal('read', client, endpoint, version, id),
    isReserved: (endpoint, version, id) => id !== WILDCARD && reserved.covers(endpoint, version, id),
    matchesAnyRule: (client) => byName.has(client) || byPrefix.some(({ prefix }) => client.startsWith(prefix)),
  };
}
