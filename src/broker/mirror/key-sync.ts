import { createPublicKey, type KeyObject } from 'node:crypto';
import type { Logger } from '../../runtime/logger.js';
import { type KeyBinding, KEYS_PER_FRAME, type KeysFrame } from '../../protocol/frames.js';
import { CLIENT_NAME, fingerprint, type KeyRegistry, type NamedKey } from '../session/keys.js';

/** how long `whisker keys revoke` waits for the connected peers to confirm (SPEC §4) */
export const CONFIRM_WITHIN_MS = 1_000;

type KeyLists = Pick<KeysFrame, 'bound' | 'revoked'>;

/** one link to a peer, as key spreading sees it (mirror/peer-link.ts) */
export interface KeyLink {
  readonly serviceId: string;
  /** sends the lists; true once the peer applied them, false when the link is down or went down */
  sendKeys(lists: KeyLists): Promise<boolean>;
}

export interface KeySyncDeps {
  readonly registry: KeyRegistry;
  readonly log: Logger;
  /** does this broker deliver now? */
  isMaster(): boolean;
  /** does that peer deliver now, as last heard? */
  delivers(serviceId: string): boolean;
  /** the links to every configured peer */
  links(): Iterable<KeyLink>;
  /** closes the open sessions of `name` proved with `key` (after its binding went); how many */
  closeSessions(name: string, key: KeyObject): number;
}

export interface RevokeOutcome {
  readonly name: string;
  readonly fingerprint: string;
  readonly closedConnections: number;
  readonly confirmedBy: string[];
  /** peers that did not confirm within CONFIRM_WITHIN_MS: not connected, or slower */
  readonly notConfirmedBy: string[];
}

/**
 * One identity per mirror set (SPEC §4, docs/protocol.md#peer-keys): first-use registrations and
 * revocations made here go to every peer; a peer's are applied here. A name bound two ways:
 * the delivering broker's key wins and the other is revoked everywhere; with no broker
 * delivering, the name is refused until one does. Revocations are tombstones (`revoked/`).
 */
export class KeySync {
  readonly #deps: KeySyncDeps;

  constructor(deps: KeySyncDeps) {
    this.#deps = deps;
    deps.registry.onRegistered = (name, key) => void this.#spread({ bound: [binding({ name, key })], revoked: [] });
  }

  /** everything this broker knows, in frames of at most KEYS_PER_FRAME per list: tombstones first */
  snapshot(): KeyLists[] {
    const { registry } = this.#deps;
    const revoked = registry.tombstones().map(binding);
    const bound = registry.bindings().map(binding);
    const frames: KeyLists[] = [];
    for (let i = 0; i < Math.max(revoked.length, bound.length); i += KEYS_PER_FRAME) {
      frames.push({ revoked: revoked.slice(i, i + KEYS_PER_FRAME), bound: bound.slice(i, i + KEYS_PER_FRAME) });
    }
    return frames;
  }

  /** `whisker keys revoke NAME`: revoked here, then on every peer; waits up to ~1 s for them */
  async revoke(name: string): Promise<RevokeOutcome | null> {
    const { registry, log } = this.#deps;
    const key = registry.registered(name);
    if (!key) return null;
    const closedConnections = this.#revokeHere(name, key);
    const { confirmedBy, notConfirmedBy } = await this.#spread({ bound: [], revoked: [binding({ name, key })] }, CONFIRM_WITHIN_MS);
    log.warn('key revoked', { client: name, fingerprint: fingerprint(key), closedConnections, confirmedBy, notConfirmedBy });
    return { name, fingerprint: fingerprint(key), closedConnections, confirmedBy, notConfirmedBy };
  }

  /**
   * `name`'s cluster binding to `pem` was deleted in etcd: revoked on another set (SPEC §13). When
   * that is still the name's key here, it is revoked as `revoke` does, the peers told; true then.
   */
  revokedInCluster(name: string, pem: string): boolean {
    const { registry, log } = this.#deps;
    let key: KeyObject | null;
    try {
      key = registry.registered(name);
      if (!key || !key.equals(createPublicKey(pem))) return false;
    } catch {
      return false; // not a key: nothing of ours to revoke
    }
    const closedConnections = this.#revokeHere(name, key);
    log.warn('key revoked on another set of the cluster', { client: name, fingerprint: fingerprint(key), closedConnections });
    void this.#spread({ bound: [], revoked: [binding({ name, key })] });
    return true;
  }

  /** a reload found `.pub` files removed or replaced by hand: their keys are revoked, new ones told */
  reloaded(changes: { removed: readonly NamedKey[]; added: readonly NamedKey[] }): void {
    const revoked: KeyBinding[] = [];
    for (const { name, key } of changes.removed) {
      const closedConnections = this.#revokeHere(name, key);
      this.#deps.log.warn('key revoked: its file was removed or replaced', { client: name, fingerprint: fingerprint(key), closedConnections });
      revoked.push(binding({ name, key }));
    }
    if (revoked.length > 0 || changes.added.length > 0) void this.#spread({ revoked, bound: changes.added.map(binding) });
  }

  /**
   * What a peer told: revocations first, then bindings. What changed here, and what the peer
   * lacked, goes to every peer; it is returned too, for the link it came by.
   */
  apply(from: string, lists: KeyLists): KeyLists {
    const { registry, log } = this.#deps;
    const onward: KeyLists = { bound: [], revoked: [] };
    for (const item of lists.revoked) {
      const key = parse(item);
      if (!key || registry.isRevoked(key)) continue;
      const closedConnections = this.#revokeHere(item.name, key);
      log.warn('key revoked by a peer', { client: item.name, fingerprint: fingerprint(key), peer: from, closedConnections });
      onward.revoked.push(item);
      // the name's surviving key goes along: a broker further on that held only the revoked one gets it
      const survivor = registry.registered(item.name);
      if (survivor) onward.bound.push(binding({ name: item.name, key: survivor }));
    }
    for (const item of lists.bound) {
      const key = parse(item);
      if (!key) continue;
      // the peer missed this revocation (it was away): it gets it back
      if (registry.isRevoked(key)) {
        onward.revoked.push(item);
        continue;
      }
      const current = registry.registered(item.name);
      if (!current) {
        registry.adopt(item.name, key);
        onward.bound.push(item);
        continue;
      }
      if (current.equals(key)) {
        registry.setConflicted(item.name, false);
        continue;
      }
      this.#bothBound(from, item.name, current, key, onward);
    }
    if (onward.bound.length > 0 || onward.revoked.length > 0) void this.#spread(onward);
    return onward;
  }

  /** `name` is bound to `ours` here and to `theirs` on `from`: the delivering broker's binding wins */
  #bothBound(from: string, name: string, ours: KeyObject, theirs: KeyObject, onward: KeyLists): void {
    const { registry, log, isMaster, delivers } = this.#deps;
    const detail = { client: name, ours: fingerprint(ours), theirs: fingerprint(theirs), peer: from };
    if (isMaster()) {
      this.#revokeHere(name, theirs);
      onward.revoked.push(binding({ name, key: theirs }));
      log.warn('client name bound to two keys on two mirrors: this broker delivers, its key wins and the other is revoked', detail);
    } else if (delivers(from)) {
      registry.adopt(name, theirs); // first: the name stays bound (its reservations stay)
      const closedConnections = this.#revokeHere(name, ours);
      onward.revoked.push(binding({ name, key: ours }));
      onward.bound.push(binding({ name, key: theirs }));
      log.warn('client name bound to two keys on two mirrors: the delivering peer\'s key wins, ours is revoked', { ...detail, closedConnections });
    } else {
      // a delivering broker we link to (a chain: the sender does not see it) settles it: it gets theirs
      if ([...this.#deps.links()].some((link) => link.serviceId !== from && delivers(link.serviceId))) onward.bound.push(binding({ name, key: theirs }));
      if (!registry.isConflicted(name)) {
        registry.setConflicted(name, true);
        log.warn('client name bound to two keys on two mirrors while no broker delivers: refused until one does', detail);
      }
    }
  }

  /** tombstone, binding removed, sessions closed: nothing more from that key here */
  #revokeHere(name: string, key: KeyObject): number {
    const { registry } = this.#deps;
    registry.revoke(name, key);
    registry.unbind(name, key);
    registry.setConflicted(name, false);
    return this.#deps.closeSessions(name, key);
  }

  async #spread(lists: KeyLists, waitMs = CONFIRM_WITHIN_MS): Promise<{ confirmedBy: string[]; notConfirmedBy: string[] }> {
    const links = [...this.#deps.links()];
    const answers = await Promise.all(
      links.map((link) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs)));
        return Promise.race([link.sendKeys(lists), late]).finally(() => clearTimeout(timer));
      }),
    );
    const confirmedBy = links.filter((_, i) => answers[i]).map((link) => link.serviceId);
    const notConfirmedBy = links.filter((_, i) => !answers[i]).map((link) => link.serviceId);
    return { confirmedBy, notConfirmedBy };
  }
}

function binding({ name, key }: NamedKey): KeyBinding {
  return { name, key: key.export({ type: 'spki', format: 'pem' }).toString() };
}

/** a peer's key, or null when it is not one (a malformed entry is skipped, not fatal) */
function parse(item: KeyBinding): KeyObject | null {
  if (!CLIENT_NAME.test(item.name)) return null;
  try {
    return createPublicKey(item.key);
  } catch {
    return null;
  }
}
