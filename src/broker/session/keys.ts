import { createHash, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt, jwtVerify, errors as joseErrors } from 'jose';
import { WhiskerError } from '../../protocol/errors.js';
import { type AuthFrame, CLIENT_NAME } from '../../protocol/frames.js';
import { sameSecret } from '../../runtime/secret.js';

export { CLIENT_NAME } from '../../protocol/frames.js';
const ALGORITHMS = ['EdDSA', 'ES256', 'ES512'];
const MAX_TOKEN_LIFETIME_S = 300;

export function makeNonce(): string {
  return randomBytes(18).toString('base64url');
}

/** constant-time comparison: equal-length digests, so the time taken tells nothing */
export interface AuthPolicy {
  readonly serviceId: string;
  readonly socketToken: string | undefined;
  /** may this unknown name register its key on first use? */
  mayRegister(name: string): boolean;
  /** names registered past which a new one is refused with E_LIMIT (limits.maxRegisteredClients) */
  readonly maxRegistered?: number;
  /** cluster (SPEC §13): binds a new name once per cluster; resolves to the key (SPKI PEM) it is bound to */
  bind?(name: string, pem: string): Promise<string>;
}

/** why E_AUTH refused a handshake: `details.reason` (docs/protocol.md#auth-reasons) */
export type AuthReason = 'revoked' | 'other-key' | 'expired' | 'conflict' | 'timeout' | 'bad-token' | 'unknown-client' | 'not-allowed' | 'bad-key' | 'not-a-peer';

export function authError(reason: AuthReason, message: string): WhiskerError {
  return new WhiskerError('E_AUTH', message, { reason });
}

/** a name and its key, as the registry and the mirror links hand them around */
export interface NamedKey {
  readonly name: string;
  readonly key: KeyObject;
}

/**
 * The public keys of registered client names, one `<name>.pub` file each. The first verified
 * handshake of an unknown name registers its key; from then on only that key verifies.
 */
export class KeyRegistry {
  readonly #directory: string;
  readonly #keys = new Map<string, KeyObject>();

  readonly #revokedDirectory: string;
  /** `<name>.pub` files, counted at start and at each `forget()` (reload), kept up to date between */
  #registeredCount: number;
  /** the bindings as last read or made: a reload tells what was removed or replaced by hand */
  #known = new Map<string, KeyObject>();
  /** names bound to two keys on two mirrors while none delivers: refused until one does (SPEC §4) */
  readonly #conflicted = new Set<string>();
  /** a name registered on first use here: the mirrors are told (mirror/key-sync.ts) */
  onRegistered: (name: string, key: KeyObject) => void = () => {};
  /** a key was revoked (its SPKI PEM): a cluster frees the name's binding in etcd (SPEC §13) */
  onRevoked: (name: string, pem: string) => void = () => {};

  constructor(directory: string) {
    this.#directory = directory;
    this.#revokedDirectory = join(directory, 'revoked');
    mkdirSync(this.#revokedDirectory, { recursive: true, mode: 0o700 });
    this.#registeredCount = this.#countFiles();
    this.#known = this.#readAll();
  }

  #readAll(): Map<string, KeyObject> {
    const all = new Map<string, KeyObject>();
    for (const file of readdirSync(this.#directory)) {
      const name = file.slice(0, -4);
      if (!file.endsWith('.pub') || !CLIENT_NAME.test(name)) continue;
      try {
        const key = this.registered(name);
        if (key) all.set(name, key);
      } catch {
        // not a readable key: it verifies nothing
      }
    }
    return all;
  }

  /** every name with its key (what a mirror is told when its link comes up) */
  bindings(): NamedKey[] {
    return [...this.#known].map(([name, key]) => ({ name, key }));
  }

  /** every revoked key with the name it had (`revoked/<sha256>.pub`, first line `# name`) */
  tombstones(): NamedKey[] {
    const all: NamedKey[] = [];
    for (const file of readdirSync(this.#revokedDirectory)) {
      if (!file.endsWith('.pub')) continue;
      try {
        const text = readFileSync(join(this.#revokedDirectory, file), 'utf8');
        const name = /^# (.*)\n/.exec(text)?.[1] ?? '';
        all.push({ name, key: createPublicKey(text.slice(text.indexOf('-----'))) });
      } catch {
        // unreadable: it still refuses its key here (isRevoked reads the file name)
      }
    }
    return all;
  }

  /** binds `name` to a key a mirror registered (or whose binding won): replaces the file */
  adopt(name: string, key: KeyObject): void {
    writeFileSync(join(this.#directory, `${name}.pub`), key.export({ type: 'spki', format: 'pem' }).toString(), { mode: 0o644 });
    this.#keys.set(name, key);
    this.#known.set(name, key);
    this.#registeredCount = this.#countFiles();
  }

  /** removes the binding of `name` when it is `key` (its key was revoked) */
  unbind(name: string, key: KeyObject): boolean {
    if (!this.stillValid(name, key)) return false;
    rmSync(join(this.#directory, `${name}.pub`), { force: true });
    this.#keys.delete(name);
    this.#known.delete(name);
    this.#registeredCount = this.#countFiles();
    return true;
  }

  isConflicted(name: string): boolean {
    return this.#conflicted.has(name);
  }

  setConflicted(name: string, conflicted: boolean): void {
    if (conflicted) this.#conflicted.add(name);
    else this.#conflicted.delete(name);
  }

  get registeredCount(): number {
    return this.#registeredCount;
  }

  #countFiles(): number {
    return readdirSync(this.#directory).filter((file) => file.endsWith('.pub') && CLIENT_NAME.test(file.slice(0, -4))).length;
  }

  /**
   * A revoked key never verifies again, even when auto-registration would accept its name anew:
   * it is kept as `revoked/<sha256 of the key>.pub`.
   */
  revoke(name: string, key: KeyObject): void {
    const pem = key.export({ type: 'spki', format: 'pem' }).toString();
    writeFileSync(join(this.#revokedDirectory, `${fingerprint(key)}.pub`), `# ${name}\n${pem}`, { mode: 0o644 });
    this.onRevoked(name, pem);
  }

  isRevoked(key: KeyObject): boolean {
    return existsSync(join(this.#revokedDirectory, `${fingerprint(key)}.pub`));
  }

  /**
   * `whisker keys revoke`: the name's key joins `revoked/` and its `<name>.pub` is removed, so the
   * key never verifies again. Null when the name has no key.
   */
  revokeName(name: string): KeyObject | null {
    const key = this.registered(name);
    if (!key) return null;
    this.revoke(name, key);
    rmSync(join(this.#directory, `${name}.pub`), { force: true });
    this.#keys.delete(name);
    this.#known.delete(name);
    this.#registeredCount = this.#countFiles();
    return key;
  }

  /** registered names with their key's sha256, and how many keys are revoked (`whisker keys list`) */
  list(): { keys: Array<{ name: string; fingerprint: string | null }>; revoked: number } {
    const keys = readdirSync(this.#directory)
      .filter((file) => file.endsWith('.pub') && CLIENT_NAME.test(file.slice(0, -4)))
      .sort()
      .map((file) => {
        const name = file.slice(0, -4);
        try {
          const key = this.registered(name);
          return { name, fingerprint: key ? fingerprint(key) : null };
        } catch {
          return { name, fingerprint: null }; // not a readable key: it verifies nothing
        }
      });
    const revoked = readdirSync(this.#revokedDirectory).filter((file) => file.endsWith('.pub')).length;
    return { keys, revoked };
  }

  /**
   * Forgets cached keys so a removed or replaced file is read again (reload). Returns the
   * bindings removed or replaced by hand since (their keys: revoked) and those added.
   */
  forget(): { removed: NamedKey[]; added: NamedKey[] } {
    this.#keys.clear();
    this.#registeredCount = this.#countFiles();
    const before = this.#known;
    this.#known = this.#readAll();
    const removed: NamedKey[] = [];
    const added: NamedKey[] = [];
    for (const [name, key] of before) if (!this.#known.get(name)?.equals(key)) removed.push({ name, key });
    for (const [name, key] of this.#known) if (!before.get(name)?.equals(key)) added.push({ name, key });
    return { removed, added };
  }

  /** is `key` still the registered key of `name`? false once the file is removed or replaced */
  stillValid(name: string, key: KeyObject): boolean {
    try {
      return this.registered(name)?.equals(key) ?? false;
    } catch {
      return false;
    }
  }

  registered(name: string): KeyObject | null {
    const cached = this.#keys.get(name);
    if (cached) return cached;
    let pem: string;
    try {
      pem = readFileSync(join(this.#directory, `${name}.pub`), 'utf8');
    } catch {
      return null;
    }
    const key = createPublicKey(pem);
    this.#keys.set(name, key);
    return key;
  }

  /** writes the key unless another handshake registered the name first; returns the winner */
  register(name: string, key: KeyObject): KeyObject {
    const pem = key.export({ type: 'spki', format: 'pem' }).toString();
    try {
      writeFileSync(join(this.#directory, `${name}.pub`), pem, { flag: 'wx', mode: 0o644 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return this.registered(name) ?? key;
    }
    this.#keys.set(name, key);
    this.#known.set(name, key);
    this.#registeredCount++;
    this.onRegistered(name, key);
    return key;
  }

  /**
   * Checks an `auth` frame against the nonce this socket was given. Resolves to the verified
   * client name and the key it proved; rejects with E_AUTH, E_TOKEN or E_SERVICE_ID
   * (docs/protocol.md#handshake).
   */
  async authenticate(frame: AuthFrame, nonce: string, policy: AuthPolicy): Promise<{ name: string; key: KeyObject }> {
    if (policy.socketToken !== undefined && !sameSecret(frame.socketToken, policy.socketToken)) {
      throw new WhiskerError('E_TOKEN', 'Bad socket token');
    }
    let claims: ReturnType<typeof decodeJwt>;
    try {
      claims = decodeJwt(frame.token);
    } catch {
      throw authError('bad-token', 'Bad token');
    }
    const name = claims.iss;
    if (typeof name !== 'string' || !CLIENT_NAME.test(name)) throw authError('bad-token', 'Bad client name');
    const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audience.includes(policy.serviceId)) throw new WhiskerError('E_SERVICE_ID', `Bad serviceId, this broker is ${policy.serviceId}`);

    if (this.#conflicted.has(name)) {
      throw authError('conflict', `Client name ${name} is bound to two keys on two mirrors while no broker delivers; refused until one does`);
    }
    let key = this.registered(name);
    let isNew = false;
    if (!key) {
      if (!frame.publicKey) throw authError('unknown-client', 'Unknown client, no public key given');
      if (!policy.mayRegister(name)) throw authError('not-allowed', 'Unknown client, registration not allowed');
      const limit = policy.maxRegistered;
      if (limit !== undefined && this.#registeredCount >= limit) throw new WhiskerError('E_LIMIT', `Too many registered clients (limit ${limit})`);
      try {
        key = createPublicKey(frame.publicKey);
      } catch {
        throw authError('bad-key', 'Bad public key');
      }
      isNew = true;
    }
    if (this.isRevoked(key)) throw authError('revoked', `The key of ${name} is revoked; make a new key pair (see whisker keys revoke)`);
    try {
      await verifyToken(frame.token, key, name, nonce, policy.serviceId);
    } catch (error) {
      // a rebuilt client (new folder, fresh container) made a new key: say so (docs/security.md#keys)
      if (!isNew && offersRevokedKey(frame.publicKey, this)) throw authError('revoked', `The key of ${name} is revoked; make a new key pair (see whisker keys revoke)`);
      if (!isNew && offersOtherKey(frame.publicKey, key)) {
        throw authError('other-key', `Client name ${name} is registered with another key; see whisker keys revoke ${name}`);
      }
      throw error;
    }
    if (isNew && policy.bind) {
      const pem = key.export({ type: 'spki', format: 'pem' }).toString();
      const bound = await policy.bind(name, pem).catch(() => {
        throw authError('timeout', `Client name ${name} is new here and its key could not be bound in the cluster (etcd out of reach); try again`);
      });
      if (bound !== pem) throw authError('other-key', `Client name ${name} is registered with another key in this cluster; see whisker keys revoke ${name}`);
    }
    if (isNew) {
      const winner = this.register(name, key);
      if (winner !== key) await verifyToken(frame.token, winner, name, nonce, policy.serviceId);
      key = winner;
    }
    return { name, key };
  }
}

function offersRevokedKey(publicKeyPem: string | undefined, registry: KeyRegistry): boolean {
  if (!publicKeyPem) return false;
  try {
    return registry.isRevoked(createPublicKey(publicKeyPem));
  } catch {
    return false;
  }
}

function offersOtherKey(publicKeyPem: string | undefined, registered: KeyObject): boolean {
  if (!publicKeyPem) return false;
  try {
    return fingerprint(createPublicKey(publicKeyPem)) !== fingerprint(registered);
  } catch {
    return false;
  }
}

export function fingerprint(key: KeyObject): string {
  return createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex');
}

async function verifyToken(token: string, key: KeyObject, name: string, nonce: string, serviceId: string): Promise<void> {
  let payload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ALGORITHMS,
      issuer: name,
      audience: serviceId,
      requiredClaims: ['iat', 'exp', 'nonce'],
      maxTokenAge: MAX_TOKEN_LIFETIME_S + 30,
      clockTolerance: 30,
    }));
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) throw authError('expired', 'Token expired');
    throw authError('bad-token', 'Bad signature or claims');
  }
  if (payload.nonce !== nonce) throw authError('bad-token', 'Bad nonce');
  if ((payload.exp as number) - (payload.iat as number) > MAX_TOKEN_LIFETIME_S) throw authError('bad-token', 'Token lives too long');
}
