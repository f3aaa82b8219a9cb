import type { Logger } from '../../ops/logger.js';
import type { KeyRegistry } from './keys.js';
import type { PeerFeed } from '../mirror/feed.js';
import type { Peers } from '../mirror/peers.js';
import type { Policy } from '../access/policy.js';
import type { Router } from '../messages/router.js';
import type { Session } from './session.js';

/** What the sessions and handlers of one broker share; `policy` is swapped whole on reload. */
export interface BrokerContext {
  policy: Policy;
  readonly router: Router;
  readonly keys: KeyRegistry;
  /** the keys of mirror brokers, apart from clients' so no client name can take a peer's */
  readonly peerKeys: KeyRegistry;
  readonly peers: Peers;
  readonly feed: PeerFeed;
  readonly log: Logger;
  readonly sessions: Set<Session>;
}
