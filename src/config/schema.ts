/**
 * The broker's config file, as one JSON Schema (docs/configuration.md). ajv applies the
 * defaults and refuses unknown keys; load.ts turns the result into a frozen Config.
 */
const positiveSeconds = { type: 'number', exclusiveMinimum: 0, maximum: 31_536_000 } as const;
const port = { type: 'integer', minimum: 0, maximum: 65_535 } as const;

const channelSettings = {
  type: 'object',
  additionalProperties: false,
  properties: {
    prefetch: { type: 'integer', minimum: 1, maximum: 100_000 },
    ttl: positiveSeconds,
    map: { type: 'object' },
    schema: { type: ['object', 'boolean'] },
    maxItemsInQueue: { type: 'integer', minimum: 1 },
    overflow: { enum: ['drop-oldest', 'reject'] },
    requeueLimit: { type: 'integer', minimum: 1 },
    requeueInterval: positiveSeconds,
    maxTouchSeconds: positiveSeconds,
    deadLetter: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}/[A-Za-z0-9._-]{1,32}/[^/]{1,256}$' },
    // the channel's history, kept after acks for replays (docs/configuration.md#retention)
    retention: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: {
        seconds: positiveSeconds,
        maxBytes: { type: 'integer', minimum: 65_536, maximum: 1_099_511_627_776 },
      },
    },
    // the mirror set that owns this queue in a cluster, for a queue not placed yet (SPEC §13)
    set: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
  },
} as const;

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    serviceId: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$', default: 'whisker' },
    isMaster: { type: 'boolean', default: true },
    dataDirectory: { type: 'string', minLength: 1, default: 'whisker-data' },
    registeredClientsPath: { type: 'string', minLength: 1, default: 'whisker-data/clients' },
    keysDirectory: { type: 'string', minLength: 1, default: 'whisker-data/keys' },
    keysName: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$', default: 'broker' },
    socketServer: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        port: { ...port, default: 7780 },
        token: { type: 'string', minLength: 1 },
        tls: {
          type: 'object',
          additionalProperties: false,
          required: ['cert', 'key'],
          properties: { cert: { type: 'string' }, key: { type: 'string' }, ca: { type: 'string' }, requestCert: { type: 'boolean', default: false } },
        },
      },
    },
    maxItemsInQueue: { type: 'integer', minimum: 1, default: 1000 },
    overflow: { enum: ['drop-oldest', 'reject'], default: 'drop-oldest' },
    memoryWindow: { type: 'integer', minimum: 1, maximum: 10_000_000, default: 10_000 },
    requeueLimit: { type: 'integer', minimum: 1, default: 5 },
    requeueInterval: { ...positiveSeconds, default: 100 },
    maxTouchSeconds: { ...positiveSeconds, default: 3600 },
    dedupeWindow: { type: 'number', minimum: 0, maximum: 86_400, default: 120 },
    softStopTimeout: { ...positiveSeconds, default: 30 },
    idleQueueTimeout: { ...positiveSeconds, default: 300 },
    // seconds a reserved id stays its name's after the name's last subscription to it (SPEC §5)
    reservationHold: { type: 'number', minimum: 0, maximum: 31_536_000, default: 86_400 },
    heartbeatTimeout: { type: 'number', minimum: 0.1, maximum: 3600, default: 5 },
    // seconds a recipient group stays after its last member's connection was lost (SPEC §7)
    groupHold: { type: 'number', minimum: 0, maximum: 86_400, default: 60 },
    rules: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['client'],
        properties: {
          client: { type: 'string', minLength: 1 },
          read: { type: 'array', items: { type: 'string', minLength: 1 } },
          write: { type: 'array', items: { type: 'string', minLength: 1 } },
        },
      },
    },
    defaultPolicy: { enum: ['deny', 'allow'], default: 'deny' },
    autoRegister: { type: 'boolean', default: true },
    channels: {
      type: 'object',
      default: {},
      propertyNames: { pattern: '^[A-Za-z0-9_-]{1,64}/[A-Za-z0-9._-]{1,32}$' },
      additionalProperties: channelSettings,
    },
    peers: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    peerTls: {
      type: 'object',
      additionalProperties: false,
      properties: { ca: { type: 'string', minLength: 1 }, cert: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 }, rejectUnauthorized: { type: 'boolean' } },
    },
    // automatic failover through etcd v3 (docs/operations.md#automatic-failover): isMaster is then not used
    election: {
      type: 'object',
      additionalProperties: false,
      required: ['etcd', 'prefix'],
      properties: {
        etcd: {
          type: 'object',
          additionalProperties: false,
          required: ['hosts'],
          properties: {
            hosts: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^https?://[^\\s/]+$' } },
            tls: {
              type: 'object',
              additionalProperties: false,
              required: ['ca'],
              properties: { ca: { type: 'string', minLength: 1 }, cert: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 } },
            },
          },
        },
        prefix: { type: 'string', pattern: '^(/[A-Za-z0-9._-]+)+$' },
        leaseTtl: { type: 'integer', minimum: 2, maximum: 300, default: 10 },
      },
    },
    // a cluster of mirror sets, each queue placed on one set through etcd (SPEC §13, docs/operations.md#running-a-cluster)
    cluster: {
      type: 'object',
      additionalProperties: false,
      required: ['prefix', 'set', 'advertise'],
      properties: {
        prefix: { type: 'string', pattern: '^(/[A-Za-z0-9._-]+)+$' },
        set: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
        advertise: { type: 'string', minLength: 1, maxLength: 512 },
        weight: { type: 'number', exclusiveMinimum: 0, maximum: 1000, default: 1 },
      },
    },
    management: {
      type: 'object',
      additionalProperties: false,
      properties: {
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        port: { ...port, default: 7781 },
        token: { type: 'string', minLength: 1 },
        // docs/management.md#label-cardinality: every series a client can multiply has a bound
        maxQueueSeries: { type: 'integer', minimum: 1, maximum: 100_000, default: 1000 },
        groupSeries: { type: 'boolean', default: false },
        maxGroupSeries: { type: 'integer', minimum: 1, maximum: 100_000, default: 200 },
      },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        maxPayloadBytes: { type: 'integer', minimum: 1024, maximum: 67_108_864, default: 1_048_576 },
        maxConnections: { type: 'integer', minimum: 1, default: 10_000 },
        maxSubscriptionsPerConnection: { type: 'integer', minimum: 1, default: 1000 },
        maxBufferedBytesPerConnection: { type: 'integer', minimum: 1024, default: 8_388_608 },
        maxUnauthenticatedConnections: { type: 'integer', minimum: 1, default: 1000 },
        maxUnauthenticatedPerAddress: { type: 'integer', minimum: 1, default: 100 },
        upgradeTimeout: { ...positiveSeconds, maximum: 3600, default: 5 },
        maxQueues: { type: 'integer', minimum: 1, default: 10_000 },
        maxRegisteredClients: { type: 'integer', minimum: 1, default: 10_000 },
        maxReservations: { type: 'integer', minimum: 1, default: 10_000 },
        maxPlacements: { type: 'integer', minimum: 1, default: 10_000 },
        maxMoveBytes: { type: 'integer', minimum: 1024, maximum: 67_108_864, default: 67_108_864 },
        maxReservationsPerClient: { type: 'integer', minimum: 1, default: 1_000 },
        maxMirrorBacklogBytes: { type: 'integer', minimum: 65_536, default: 16_777_216 },
        maxMirrorLinkBytes: { type: 'integer', minimum: 1_048_576, default: 67_108_864 },
      },
    },
    // docs/management.md#peek: peek, tail and dead letters show message bodies only when asked to
    showBodies: { type: 'boolean', default: false },
    logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
  },
} as const;
