import { protocolError } from './errors.js';

/** a mirror set of a cluster as clients see it: its name and its brokers' host strings (no token) */
export interface ClusterSet {
  name: string;
  hosts: string[];
}

/**
 * The cluster map a broker pushes to its clients (SPEC §13, docs/protocol.md#cluster): after
 * `welcome` (`full`, in chunks: the first replaces the client's map, the rest add to it), then on
 * every change. `set` is the sending broker's set; `sets`, when present, lists every live set.
 */
export type ClusterFrame = {
  type: 'cluster';
  set: string;
  full: boolean;
  sets?: ClusterSet[];
  /** [queue, set] pairs */
  placed: Array<[string, string]>;
  removed: string[];
};

/** placements per frame: a full map of limits.maxPlacements goes in several frames */
export const PLACEMENTS_PER_FRAME = 2_000;

const SET_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const QUEUE = /^[A-Za-z0-9_-]{1,64}\/[A-Za-z0-9._-]{1,32}$/;

function setName(value: unknown): string {
  if (typeof value !== 'string' || !SET_NAME.test(value)) throw protocolError('cluster: bad set name');
  return value;
}

function queueName(value: unknown): string {
  if (typeof value !== 'string' || !QUEUE.test(value)) throw protocolError('cluster: bad queue');
  return value;
}

function list(value: unknown, max: number, what: string): unknown[] {
  if (!Array.isArray(value) || value.length > max) throw protocolError(`cluster: ${what} must be an array of at most ${max}`);
  return value;
}

/** a host string from the map: bounded, and never a token (the client adds its own) */
function host(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 512 || value.includes('#') || /\s/.test(value)) throw protocolError('cluster: bad host');
  return value;
}

/** checks everything: the map steers where a client sends, so a hostile one is refused whole */
export function decodeClusterFrame(frame: Record<string, unknown>): ClusterFrame {
  if (typeof frame.full !== 'boolean') throw protocolError('cluster: full must be a boolean');
  const decoded: ClusterFrame = {
    type: 'cluster',
    set: setName(frame.set),
    full: frame.full,
    placed: list(frame.placed, 10_000, 'placed').map((pair) => {
      const [queue, set, ...rest] = list(pair, 2, 'a placement');
      if (rest.length > 0) throw protocolError('cluster: bad placement');
      return [queueName(queue), setName(set)];
    }),
    removed: list(frame.removed, 10_000, 'removed').map(queueName),
  };
  if (frame.sets !== undefined) {
    decoded.sets = list(frame.sets, 1_000, 'sets').map((value) => {
      if (typeof value !== 'object' || value === null) throw protocolError('cluster: bad set');
      const set = value as Record<string, unknown>;
      return { name: setName(set.name), hosts: list(set.hosts, 100, 'hosts').map(host) };
    });
  }
  return decoded;
}
