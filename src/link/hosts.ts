export interface HostTarget {
  /** as written in the config, for errors and `storedBy` */
  readonly spec: string;
  readonly url: string;
  /** the broker's expected serviceId; when absent, the one the broker announces is used */
  readonly serviceId?: string;
  readonly socketToken?: string;
}

/**
 * `host:port@serviceId#token`, with an optional `ws://` or `wss://` scheme; IPv6 as
 * `[::1]:port` (SPEC §3).
 */
export function parseHost(spec: string): HostTarget {
  if (typeof spec !== 'string' || spec.length === 0) throw new TypeError('Bad host: expected "host:port@serviceId"');
  let rest = spec;
  let socketToken: string | undefined;
  const hash = rest.indexOf('#');
  if (hash >= 0) {
    socketToken = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
  }
  let serviceId: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    serviceId = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const url = /^wss?:\/\//.test(rest) ? rest : `ws://${rest}`;
  try {
    new URL(url);
  } catch {
    throw new TypeError(`Bad host "${spec}"`);
  }
  return { spec, url, ...(serviceId ? { serviceId } : {}), ...(socketToken ? { socketToken } : {}) };
}
