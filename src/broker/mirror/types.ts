import type { ClientKeys } from '../../link/keys.js';
import type { PeerStateFrame } from '../../protocol/frames.js';
import type { Logger } from '../../ops/logger.js';
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
}

/** a peer's role as last heard, over our link to it or its link to us */
export interface PeerView {
  configuredMaster: boolean;
  isMaster: boolean;
}

/** what every link to a peer is handed */
export interface LinkDeps {
  readonly serviceId: string;
  readonly keys: ClientKeys;
  readonly log: Logger;
  readonly replica: Replica;
}

export interface PeersOptions extends LinkDeps {
  /** the role this broker acts in changed: tell clients */
  readonly onRoleChange: (isMaster: boolean) => void;
  /** what this broker tells its peers changed: tell the peers that dialed us */
  readonly onStateChange: (state: PeerStateFrame) => void;
}

/** what a link needs of the mirror set it belongs to (`Peers`) */
export interface LinkOwner {
  readonly isMaster: boolean;
  state(): PeerStateFrame;
  update(): void;
}
