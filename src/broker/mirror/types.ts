import type { ClientKeys } from '../../link/keys.js';
import type { PeerStateFrame } from '../../protocol/frames.js';
import type { Logger } from '../../runtime/logger.js';
import type { KeySync } from './key-sync.js';
import type { Replica } from './replica.js';

export interface MasterConflict {
  /** every broker configured as master that this one can see, itself included */
  readonly masters: readonly string[];
  /** the one that keeps delivering: the lowest serviceId */
  readonly delivering: string;
}

export interface PeerStatus {
  readonly serviceId: string;
  readonly spec: string;
  readonly connected: boolean;
  readonly role: 'master' | 'slave' | 'unknown';
  readonly following: boolean;
  /** following and past the master's sync: its feed names everything it gets (docs/management.md#health) */
  readonly inStep: boolean;
  /** messages and settlements the master sent that this broker has not applied yet */
  readonly lagMessages: number;
  /** how long the oldest of those has waited, in seconds (0 when none waits) */
  readonly lagSeconds: number;
  /** the size of those frames as read: past limits.maxMirrorBacklogBytes the link is not read */
  readonly lagBytes: number;
  /** this broker does not read the peer's link now (its backlog is past the bound) */
  readonly readingPaused: boolean;
  /** this broker is its master: the peer follows us (`syncing` until its sync is done), else null */
  readonly followsUs: 'in step' | 'syncing' | null;
  /** bytes this broker owes the peer's link as its master (socket buffer, a sync's waiting feed): past limits.maxMirrorLinkBytes it is closed */
  readonly owedBytes: number;
  /** syncs from this peer as master finished since start (each one a full state transfer) */
  readonly syncs: number;
  /** times this broker was in step again with this peer re-elected after a fence, its feed resumed without a sync */
  readonly resumes: number;
}

/** a peer's role as last heard, over our link to it or its link to us */
export interface PeerView {
  configuredMaster: boolean;
  isMaster: boolean;
  /** with an election: the epoch of the master the peer knows */
  epoch?: number;
}

export type ElectionPhase = 'starting' | 'master' | 'slave' | 'etcd-unreachable';

/** the election as this broker sees it (docs/operations.md#automatic-failover) */
export interface ElectionView {
  readonly phase: ElectionPhase;
  /** may deliver: holds the master key with a lease renewed within the fence */
  readonly isMaster: boolean;
  /** the revision at which the current master was elected */
  readonly epoch: number | null;
  readonly leader: string | null;
  readonly leaseRemainingMs: number | null;
  /** Date.now() of the last change of role or leader */
  readonly lastChangeAt: number | null;
  /** why this broker is not the master, when it could be */
  readonly reason: string | null;
}

/** what Peers needs of the election to decide the role (mirror/election.ts) */
export interface ElectedRole {
  readonly isMaster: boolean;
  readonly epoch: number | null;
  /** a peer announced a master of a higher epoch */
  fenced(epoch: number, by: string): void;
  /** a master past its fence stops now (before a frame read after a pause is taken as master's) */
  judgeFence(): void;
}

/** TLS and heartbeat of the links this broker dials to its peers (src/broker/mirror/dial.ts) */
export interface PeerDialOptions {
  readonly tls: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean } | undefined;
  readonly heartbeatTimeoutMs: number;
}

/** what every link to a peer is handed */
export interface LinkDeps {
  readonly serviceId: string;
  /** read at every dial: a reload applies to the next link */
  readonly dialOptions: () => PeerDialOptions;
  readonly keys: ClientKeys;
  readonly log: Logger;
  readonly replica: Replica;
  /** client keys, alike on every mirror (SPEC §4) */
  readonly keySync: KeySync;
  /** limits.maxMirrorBacklogBytes, read at each frame (live) */
  readonly backlogBytes: () => number;
}

export interface PeersOptions extends LinkDeps {
  /** the role this broker acts in changed: tell clients */
  readonly onRoleChange: (isMaster: boolean, epoch: number | undefined) => void;
  /** what this broker tells its peers changed: tell the peers that dialed us */
  readonly onStateChange: (state: PeerStateFrame) => void;
  /** peers following this broker (the master's feed): in step or syncing, and what it owes each */
  readonly followers?: () => ReadonlyMap<string, FollowerState>;
}

/** one peer following this broker, as the dashboard and the metrics see it */
export interface FollowerState {
  readonly inStep: boolean;
  /** bytes this broker owes its link: unsent on the socket, and a sync's waiting feed */
  readonly owedBytes: number;
}

/** what a link needs of the mirror set it belongs to (`Peers`) */
export interface LinkOwner {
  readonly isMaster: boolean;
  state(): PeerStateFrame;
  update(): void;
  /** messages a link offered the master (the `whisker_offered_to_master_total` metric) */
  countOffered(messages: number): void;
  /** a link starts following its peer for a sync: other links give up what they kept of a fenced master */
  followStarted(link: object): void;
  /** another link follows its peer as master */
  followsOther(link: object): boolean;
  countSettledBySync(messages: number): void;
  /** a sync from the master of this epoch is done: this broker is in step with it */
  inStep(epoch: number | undefined): void;
  /** our link to this peer went down (or a dial of it failed): a master does not wait for its offer */
  linkDown(serviceId: string): void;
}
