export type Overflow = 'drop-oldest' | 'reject';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface ChannelConfig {
  readonly prefetch?: number;
  readonly ttl?: number;
  readonly map?: Readonly<Record<string, unknown>>;
  readonly schema?: Readonly<Record<string, unknown>> | boolean;
  readonly maxItemsInQueue?: number;
  readonly overflow?: Overflow;
  readonly requeueLimit?: number;
  readonly requeueInterval?: number;
  /** seconds after a delivery past which touches no longer extend its deadline */
  readonly maxTouchSeconds?: number;
  readonly deadLetter?: string;
  /** keep the channel's history after acks, for replays: until older than `seconds` or past `maxBytes` (oldest first) */
  readonly retention?: Retention;
  /** cluster: the set a queue not placed yet is placed on (SPEC §13) */
  readonly set?: string;
}

export interface Retention {
  readonly seconds?: number;
  readonly maxBytes?: number;
}

export interface RuleConfig {
  readonly client: string;
  readonly read?: readonly string[];
  readonly write?: readonly string[];
}

export interface ElectionConfig {
  readonly etcd: {
    /** `http://host:port` or `https://host:port`, every etcd member */
    readonly hosts: readonly string[];
    /** paths, absolute once loaded */
    readonly tls?: { readonly ca: string; readonly cert?: string; readonly key?: string };
  };
  /** the cluster's keys live under it: `<prefix>/master`, `<prefix>/last` */
  readonly prefix: string;
  /** seconds */
  readonly leaseTtl: number;
}

/** a cluster of mirror sets (SPEC §13): needs `election`, whose etcd it uses */
export interface ClusterConfig {
  /** cluster-wide keys: `<prefix>/members/<set>/<serviceId>`, `<prefix>/placements/<ep/ver>` */
  readonly prefix: string;
  /** this broker's mirror set */
  readonly set: string;
  /** the host string clients dial for this broker, without its token (`host:port@serviceId`) */
  readonly advertise: string;
  /** share of new placements this set takes (rendezvous hashing) */
  readonly weight: number;
}

/** A loaded, validated config: defaults applied, paths absolute, deeply frozen. */
export interface Config {
  /** where the file was read from, or null for the built-in default */
  readonly configPath: string | null;
  /** Kitten-MQ keys found in the file and ignored (logsDirectory, socketServer.logs...): warned about at start */
  readonly ignoredKeys: readonly string[];
  /** Kitten-MQ spellings used for a Whisker key (`serverId` as `serviceId`): warned about at start */
  readonly renamedKeys: readonly string[];
  readonly serviceId: string;
  readonly isMaster: boolean;
  readonly dataDirectory: string;
  readonly registeredClientsPath: string;
  readonly keysDirectory: string;
  readonly keysName: string;
  readonly socketServer: {
    readonly host: string;
    readonly port: number;
    readonly token?: string;
    /** requestCert: every connection shows a certificate signed by `ca` (mutual TLS) */
    readonly tls?: { readonly cert: string; readonly key: string; readonly ca?: string; readonly requestCert: boolean };
  };
  readonly maxItemsInQueue: number;
  readonly overflow: Overflow;
  /** waiting messages per queue held as objects with their bodies; past it, compact rows (durable store) */
  readonly memoryWindow: number;
  readonly requeueLimit: number;
  /** seconds */
  readonly requeueInterval: number;
  /** seconds: a touched delivery is held at most this long after it was handed out */
  readonly maxTouchSeconds: number;
  /** seconds */
  readonly dedupeWindow: number;
  /** seconds */
  readonly softStopTimeout: number;
  /** seconds an empty queue nobody subscribes to is kept before it is forgotten */
  readonly idleQueueTimeout: number;
  /** seconds a reserved id stays its client name's after the name's last subscription to it ends; 0: released at once */
  readonly reservationHold: number;
  /** seconds a client or peer link may stay silent before it is closed (SPEC §9) */
  readonly heartbeatTimeout: number;
  /** seconds a recipient group is kept, taking records, after its last member's connection was lost; 0: dropped at once */
  readonly groupHold: number;
  readonly rules?: readonly RuleConfig[];
  readonly defaultPolicy: 'deny' | 'allow';
  readonly autoRegister: boolean;
  readonly channels: Readonly<Record<string, ChannelConfig>>;
  readonly peers: readonly string[];
  /** automatic failover: the master is elected through etcd, `isMaster` is not used */
  readonly election?: ElectionConfig;
  /** a cluster of mirror sets: queues placed on sets through etcd, clients routed (SPEC §13) */
  readonly cluster?: ClusterConfig;
  /** how this broker checks its peers' certificates, and the one it shows them (paths) */
  readonly peerTls?: { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly rejectUnauthorized?: boolean };
  readonly management?: {
    readonly host: string;
    readonly port: number;
    readonly token?: string;
    /** per-queue series for at most this many queues (by name); the rest add up under `queue="_other"` */
    readonly maxQueueSeries: number;
    /** opt-in: in flight per consumer group (one series per id pattern), at most `maxGroupSeries` */
    readonly groupSeries: boolean;
    readonly maxGroupSeries: number;
  };
  readonly limits: {
    readonly maxPayloadBytes: number;
    readonly maxConnections: number;
    readonly maxSubscriptionsPerConnection: number;
    readonly maxBufferedBytesPerConnection: number;
    /** sockets not authenticated yet, raw TCP before the upgrade included */
    readonly maxUnauthenticatedConnections: number;
    readonly maxUnauthenticatedPerAddress: number;
    /** seconds a TCP socket may take to complete its WebSocket upgrade */
    readonly upgradeTimeout: number;
    /** queues (endpoint/version), held or subscribed; a new one past it is E_LIMIT */
    readonly maxQueues: number;
    /** names auto-registration may bring to registeredClientsPath; past it E_LIMIT */
    readonly maxRegisteredClients: number;
    /** reserved ids (`!` read patterns) held at once; a new one past it is refused with E_LIMIT */
    readonly maxReservations: number;
    /** cluster: queues placed in etcd at once; a new placement past it is E_LIMIT */
    readonly maxPlacements: number;
    /** cluster: bytes a move's hand-over may write to etcd (at most 64 MiB); past it the move is called off */
    readonly maxMoveBytes: number;
    readonly maxReservationsPerClient: number;
    /** a slave: bytes of frames from its master read and not applied yet; past it, its link is not read (docs/security.md#limits) */
    readonly maxMirrorBacklogBytes: number;
    /** a master: bytes it owes one mirror's link (socket buffer and a sync's waiting feed); past it, the link is closed */
    readonly maxMirrorLinkBytes: number;
  };
  /** peek, tail and dead letters (dashboard, API, CLI) show message bodies; off by default: they are the users' data */
  readonly showBodies: boolean;
  readonly logLevel: LogLevel;
}
