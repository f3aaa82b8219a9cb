import { readFileSync } from 'node:fs';
import type { Config } from '../../config/types.js';
import type { PeerDialOptions } from './types.js';

/**
 * How this broker dials its peers, from the running config, read at every dial so a reload
 * (a renewed certificate, a new heartbeatTimeout) applies to the next link without a restart:
 * `peerTls` is the peers' `tls` as a client's (docs/configuration.md#peer-tls).
 */
export function peerDialOptions(config: Config): PeerDialOptions {
  const tls = config.peerTls;
  return {
    heartbeatTimeoutMs: config.heartbeatTimeout * 1000,
    tls: tls
      ? {
          ...(tls.ca !== undefined ? { ca: readFileSync(tls.ca) } : {}),
          ...(tls.cert !== undefined ? { cert: readFileSync(tls.cert) } : {}),
          ...(tls.key !== undefined ? { key: readFileSync(tls.key) } : {}),
          ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
        }
      : undefined,
  };
}
