/**
 * A config swapped in while running (SPEC §5, docs/operations.md#what-a-reload-applies): the
 * policy, log level, keys, live subscriptions and peers follow it; restart-only keys wait. It
 * owns the count of refused reloads and the last reason.
 */
import { ConfigError, kittenWarnings, loadConfigFile } from '../config/load.js';
import { keepRestartKeys, restartOnlyChanges } from '../config/restart.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../runtime/logger.js';
import type { ServiceNotifier } from '../runtime/notify.js';
import { WhiskerError } from '../protocol/errors.js';
import { compilePolicy, policyProblems } from './access/policy.js';
import type { Rules } from './access/rules.js';
import type { ReloadOutcome, ReloadResult } from './embedded.js';
import type { Lifecycle } from './lifecycle.js';
import type { Router } from './messages/router.js';
import type { Peers } from './mirror/peers.js';
import type { KeySync } from './mirror/key-sync.js';
import { authError, type KeyRegistry } from './session/keys.js';
import type { ConnectedSession } from './session/ports.js';

/** what a reload acts on, handed in by the broker */
export interface ReloadParts {
  readonly router: Router;
  readonly keys: KeyRegistry;
  readonly keySync: KeySync;
  readonly peers: Peers;
  readonly sessions: ReadonlySet<ConnectedSession>;
  readonly lifecycle: Lifecycle;
  readonly log: Logger;
  readonly notify: ServiceNotifier;
  /** the systemd STATUS= line once a reload from the file ends */
  status(): string;
}

/** a reload re-checks live subscriptions: ids no longer readable are removed (SPEC §5) */
function recheckSubscriptions(session: ConnectedSession, rules: Rules, router: Router): void {
  for (const subscription of session.subscriptions.values()) {
    const [endpoint, version] = subscription.queue.split('/') as [string, string];
    const lost = [...subscription.ids].filter((id) => !rules.canRead(session.clientName, endpoint, version, id));
    if (lost.length === 0) continue;
    router.unsubscribe(subscription, lost);
    for (const id of lost) {
      const reason = rules.readRefusal(session.clientName, endpoint, version, id) ?? 'no-rule';
      session.send({ type: 'revoked', sub: subscription.sub, ids: [id], error: router.refusals.forbidden(session.clientName, `${subscription.queue}/${id}`, 'read', reason).toJSON() });
    }
  }
}

export class Reloader {
  readonly #parts: ReloadParts;
  #failures = 0;
  #lastError: string | null = null;

  constructor(parts: ReloadParts) {
    this.#parts = parts;
  }

  /** reloads from the config file refused since start */
  get failures(): number {
    return this.#failures;
  }

  get lastError(): string | null {
    return this.#lastError;
  }

  /** swaps in `loaded` (validated and compiled first); throws and keeps the old config if bad */
  apply(loaded: Config): ReloadResult {
    const { router, keys, keySync, peers, sessions, log } = this.#parts;
    const running = router.policy.config;
    const restartNeeded = restartOnlyChanges(running, loaded);
    const next = keepRestartKeys(running, loaded);
    const nextPolicy = compilePolicy(next);
    // a `.pub` removed or replaced by hand is a revocation, and it spreads (docs/security.md#keys)
    keySync.reloaded(keys.forget());
    log.setLevel(next.logLevel);
    router.applyPolicy(nextPolicy);
    for (const session of [...sessions]) {
      // a peer logged in with the peers' registry, not the clients': its rights are `peers` alone
      if (!session.isReady || session.isPeer) continue;
      if (!keys.stillValid(session.clientName, session.key!)) {
        keys.revoke(session.clientName, session.key!);
        router.reservations.releaseName(session.clientName);
        session.fail(authError('revoked', 'Key revoked'));
        continue;
      }
      recheckSubscriptions(session, nextPolicy.rules, router);
    }
    // after the rules: a promoted slave delivers under the new ones
    peers.configure(next.peers, next.isMaster);
    // a broker no longer in `peers` loses its link to us; its key is kept, never revoked (SPEC §9)
    for (const session of [...sessions]) {
      if (session.isReady && session.isPeer && !peers.isPeer(session.clientName)) session.fail(new WhiskerError('E_AUTH', 'No longer one of this broker\'s peers'));
    }
    log.info('config reloaded', { isMaster: next.isMaster, acting: router.isMaster ? 'master' : 'slave', restartNeeded });
    if (next.election) log.warn('election on: the master is elected through etcd, isMaster in the file is not used', { prefix: next.election.prefix });
    if (restartNeeded.length > 0) log.warn('config keys changed that apply only after a restart', { keys: restartNeeded });
    const warnings = kittenWarnings(loaded);
    for (const warning of warnings) log.warn(warning);
    return { restartNeeded, warnings };
  }

  /** reads the config file again and applies it, or keeps the running config and counts the failure; never throws */
  fromFile(): ReloadOutcome {
    const { router, lifecycle, log, notify } = this.#parts;
    const path = router.policy.config.configPath;
    if (!path) return { ok: false, error: 'the broker runs the built-in default (no -c): there is no file to reload' };
    if (lifecycle.isStopping) return { ok: false, error: 'the broker is stopping' };
    notify.reloading();
    try {
      return { ok: true, ...this.apply(loadConfigFile(path, policyProblems)) };
    } catch (error) {
      this.#failures++;
      this.#lastError = (error as Error).message;
      const key = error instanceof ConfigError ? error.key : undefined;
      log.error('config refused, the running one stays', { path, error: this.#lastError, ...(key ? { key } : {}) });
      return { ok: false, error: this.#lastError, ...(key ? { key } : {}) };
    } finally {
      notify.ready(this.#parts.status());
    }
  }
}
