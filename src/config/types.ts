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
  readonly deadLetter?: string;
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

/** A loaded, validated config: defaults applied, paths absolute, deeply frozen. */
export interface Config {
  /** where the file was read from, or null for the built-in default */
  readonly configPath: string | null;
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
    readonly tls?: { readonly cert: string; readonly key: string; readonly ca?: string };
  };
  readonly maxItemsInQueue: number;
  readonly overflow: Overflow;
  readonly requeueLimit: number;
  /** seconds */
  readonly requeueInterval: number;
  /** seconds */
  readonly dedupeWindow: number;
  /** seconds */
  readonly softStopTimeout: number;
  readonly rules?: readonly RuleConfig[];
  readonly defaultPolicy: 'deny' | 'allow';
  readonly autoRegister: boolean;
  readonly channels: Readonly<Record<string, ChannelConfig>>;
  readonly peers: readonly string[];
  /** automatic failover: the master is elected through etcd, `isMaster` is not used */
  readonly election?: ElectionConfig;
  readonly management?: { readonly host: string; readonly port: number; readonly token?: string };
  readonly limits: {
    readonly maxPayloadBytes: number;
    readonly maxConnections: number;
    readonly maxSubscriptionsPerConnection: number;
    readonly maxBufferedBytesPerConnection: number;
  };
  readonly logLevel: LogLevel;
}
