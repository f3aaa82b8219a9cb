import type { KeyObject } from 'node:crypto';
import type { WhiskerError } from '../../protocol/errors.js';
import type { BrokerFrame, PublishResult } from '../../protocol/frames.js';
import type { Logger } from '../../runtime/logger.js';
import type { Policy } from '../access/policy.js';
import type { Cluster } from '../cluster/cluster.js';
import type { History } from '../history/history.js';
import type { Intake } from '../messages/intake.js';
import type { Router } from '../messages/router.js';
import type { PeerFeed } from '../mirror/feed.js';
import type { KeySync } from '../mirror/key-sync.js';
import type { Peers } from '../mirror/peers.js';
import type { Replica } from '../mirror/replica.js';
import type { Subscription, SubscriptionOwner } from '../queue/subscription.js';
import type { KeyRegistry } from './keys.js';

/** What the sessions and handlers of one broker share; `policy` is the router's, swapped whole on reload. */
export interface BrokerContext {
  readonly policy: Policy;
  readonly router: Router;
  readonly intake: Intake;
  readonly replica: Replica;
  readonly keys: KeyRegistry;
  /** the keys of mirror brokers, apart from clients' so no client name can take a peer's */
  readonly peerKeys: KeyRegistry;
  readonly peers: Peers;
  /** client keys alike on every mirror (SPEC §4) */
  readonly keySync: KeySync;
  readonly feed: PeerFeed;
  readonly history: History;
  /** with a `cluster` block: placements and routing (SPEC §13); null without */
  readonly cluster: Cluster | null;
  readonly log: Logger;
}

/** What a frame handler may do with the connection it serves (`Session` is one). */
export interface SessionPort extends SubscriptionOwner {
  readonly ctx: BrokerContext;
  readonly nonce: string;
  readonly subscriptions: Map<number, Subscription>;
  /** replays under way, by sub (src/broker/session/handlers/replay.ts) */
  readonly replays: Set<number>;
  readonly isReady: boolean;
  send(frame: BrokerFrame): void;
  /** a frame the caller encoded (the mirror feed: one text for every follower) */
  sendText(text: string): void;
  /** sends `frame` after the deliveries queued before it */
  sendAfterDeliveries(frame: BrokerFrame): void;
  /** resolves once the connection can take more (or closed) */
  whenWritable(): Promise<void>;
  /** bytes owed to the connection: encoded, not taken by the socket yet */
  readonly unsentBytes: number;
  /** a mirror's link owed more than limits.maxMirrorLinkBytes: closed with a warn line */
  dropLagging(unsentBytes: number, limitBytes: number): void;
  /** an error frame, then close (1002 for E_PROTOCOL, else 1008, unless given) */
  fail(error: WhiskerError, closeCode?: number): void;
  authenticated(clientName: string, key: KeyObject, isPeer?: boolean): void;
  /** counts the answers a publish will need; returns what `queueResults` releases */
  expectResults(messages: readonly { readonly messageId: string }[]): number;
  queueResults(results: PublishResult[], expectedBytes?: number): void;
}

/** One connection as the broker's wiring and control commands see it. */
export interface ConnectedSession extends SessionPort {
  readonly isPeer: boolean;
  readonly key: KeyObject | null;
  readonly node: string;
  close(code?: number, reason?: string): void;
}
