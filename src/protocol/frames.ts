import { type ClusterFrame, decodeClusterFrame } from './cluster.js';
import { type ErrorPayload, isErrorCode, protocolError } from './errors.js';

/**
 * Why this file is long: every frame of the protocol, its type and its check, in one place
 * that docs/protocol.md follows; splitting would part a frame from its decoder.
 *
 * Wire frames, protocol version 1 (docs/protocol.md). One WebSocket text message is one JSON
 * frame; frames that carry messages, results or acks carry arrays, so one frame is a batch.
 */
export const PROTOCOL_VERSION = 1;

export type SubscriptionMode = 'listen' | 'consume';

export interface PublishedMessage {
  messageId: string;
  /** `endpoint/version/id`, id escaped (docs/protocol.md#channels) */
  channel: string;
  data: unknown;
  /** milliseconds since the epoch, set by the sender */
  created: number;
}

export interface Ack {
  sub: number;
  messageId: string;
  /** the delivery's `via`: which subscribed id (or `*`) it came through */
  via: string;
  ok: boolean;
  delaySeconds?: number;
}

/** extends the ack deadline of a delivery in flight (NSQ's TOUCH, docs/protocol.md#touch) */
export interface Touch {
  sub: number;
  messageId: string;
  via: string;
}

// client -> broker
/** `role: 'peer'`: a mirror broker logging in under its serviceId (docs/protocol.md#peers) */
export type AuthFrame = { type: 'auth'; protocol: number; token: string; publicKey?: string; socketToken?: string; role?: 'peer' };
export type PublishFrame = { type: 'publish'; messages: PublishedMessage[] };
export type SubscribeFrame = {
  type: 'subscribe';
  req: number;
  sub: number;
  mode: SubscriptionMode;
  endpoint: string;
  version: string;
  ids: string[];
  prefetch?: number;
  /** the subscription's flow limit from the start (docs/protocol.md#flow); absent: none */
  limit?: number;
};
export type AddIdsFrame = { type: 'addIds'; req: number; sub: number; ids: string[] };
export type RemoveIdsFrame = { type: 'removeIds'; req: number; sub: number; ids: string[] };
export type UnsubscribeFrame = { type: 'unsubscribe'; req: number; sub: number };
/**
 * Replays a retained channel's history to subscription `sub` (docs/protocol.md#replay): from
 * `since` (ms epoch) or after message `sinceId`, up to `until`, at most `limit` messages.
 */
export type ReplayFrame = {
  type: 'replay';
  req: number;
  sub: number;
  endpoint: string;
  version: string;
  ids: string[];
  since?: number;
  sinceId?: string;
  until?: number;
  limit?: number;
};
/** a replay delivered what it had: `count` messages; `error` when it stopped short */
export type ReplayEndFrame = { type: 'replayEnd'; sub: number; count: number; error?: ErrorPayload };
export type AckFrame = { type: 'ack'; acks: Ack[] };
/** sent only to a broker whose `welcome` lists the `touch` feature */
export type TouchFrame = { type: 'touch'; touches: Touch[] };
/**
 * NSQ's RDY for one subscription (docs/protocol.md#flow): at most `limit` of its deliveries
 * unacked at once, beneath its prefetch; 0 pauses it without failing what it holds, null lifts
 * the limit. Sent only to a broker whose `welcome` lists the `flow` feature.
 */
export type FlowFrame = { type: 'flow'; sub: number; limit: number | null };
// peer -> broker (docs/protocol.md#peers)
/** a broker's role as configured and as it acts: the two differ while it yields to another master */
/** `keys: true`: the sender takes `keys` frames (an older broker would close the link on one) */
/** `resumes: true`: the sender keeps its followers' feed while fenced and takes `follow` with `resume` */
export type PeerStateFrame = { type: 'peerState'; serviceId: string; configuredMaster: boolean; isMaster: boolean; epoch?: number; keys?: true; resumes?: true };
/**
 * asks a master for its state (a `sync`) and then its stream of settlements (`feed`). `resume`:
 * the follower was in step with this master on this link when it was fenced, and asks for the
 * feed it kept meanwhile instead of a sync (answered by a `sync` with `resumed`)
 */
export type FollowFrame = { type: 'follow'; history?: FollowHistory[]; resume?: true };
/**
 * With `follow`: the follower takes `history` frames (docs/protocol.md#history-catch-up); per
 * retained channel it holds a history of, the ids of its newest records (oldest first)
 */
export interface FollowHistory {
  queue: string;
  after: string[];
}
/** the follower wrote `history` frame `n` */
export type HistoryAckFrame = { type: 'historyAck'; n: number };
/** a follower hands its master the recent messages that the master's sync did not name */
/** `last`: the follower's offer after its sync (or a resumed feed) ends here: a master elected again holds clients' sends until then (issue 27, B3) */
export type OfferFrame = { type: 'offer'; messages: PeerMessage[]; last?: true };
/** a client name and the public key (SPKI PEM) it is bound to, or was until revoked */
export interface KeyBinding {
  name: string;
  key: string;
}
/**
 * Client keys one mirror tells another (SPEC §4, docs/protocol.md#peer-keys): bindings and
 * revocations, revocations applied first; answered by a `reply` with the same `req` once applied.
 * The broker sends one back on the same link (req 0, unanswered) with what the sender lacked.
 */
export type KeysFrame = { type: 'keys'; req: number; bound: KeyBinding[]; revoked: KeyBinding[] };

export type ClientFrame =
  | AuthFrame
  | PublishFrame
  | SubscribeFrame
  | AddIdsFrame
  | RemoveIdsFrame
  | UnsubscribeFrame
  | ReplayFrame
  | AckFrame
  | TouchFrame
  | FlowFrame
  | PeerStateFrame
  | FollowFrame
  | HistoryAckFrame
  | OfferFrame
  | KeysFrame;

// broker -> client
export interface Delivery {
  sub: number;
  messageId: string;
  channel: string;
  data: unknown;
  created: number;
  nbRequeues: number;
  from: string;
  /** the subscribed id (or `*`) this delivery came through; echoed in the ack */
  via: string;
}

export interface PublishResult {
  messageId: string;
  error?: ErrorPayload;
}

export interface RefusedId {
  id: string;
  error: ErrorPayload;
}

export type HelloFrame = { type: 'hello'; protocol: number; nonce: string; serviceId: string; isMaster: boolean };
export type WelcomeFrame = {
  type: 'welcome';
  node: string;
  serviceId: string;
  isMaster: boolean;
  maxPayloadBytes: number;
  /** with an election: the epoch of the master this broker knows (docs/protocol.md#epochs) */
  epoch?: number;
  /** optional frames this broker understands (`touch`, `flow`); absent from older brokers */
  features?: string[];
};
export type ErrorFrame = { type: 'error'; error: ErrorPayload };
export type RoleFrame = { type: 'role'; isMaster: boolean; epoch?: number };
export type ReplyFrame = { type: 'reply'; req: number; error?: ErrorPayload; refused?: RefusedId[] };
export type ResultsFrame = { type: 'results'; results: PublishResult[] };
export type DeliverFrame = { type: 'deliver'; messages: Delivery[] };
/** the broker removed ids from a subscription on its own (a rule change, docs/protocol.md#revoked) */
export type RevokedFrame = { type: 'revoked'; sub: number; ids: string[]; error: ErrorPayload };

/** a message as one mirror hands it to another: what the store keeps, less the local order */
export interface PeerMessage {
  messageId: string;
  queue: string;
  id: string;
  data: unknown;
  created: number;
  acceptedAt: number;
  from: string;
}
export interface PeerSettlement {
  messageId: string;
  group: string;
}
/** what a master holds, in chunks: messages not yet settled, and recent ids it has settled */
/** `resumed`: the answer to a `follow` with `resume` (true: in step again, the kept feed came before it; false: follow again for a sync) */
export type SyncFrame = { type: 'sync'; messages: PeerMessage[]; removed: string[]; done: boolean; resumed?: boolean };
/** a record of a retained channel's history as a master hands it to a follower */
export interface PeerRecord {
  messageId: string;
  id: string;
  acceptedAt: number;
  created: number;
  from: string;
  data: unknown;
}
/**
 * Part of a sync: a retained channel's history records the follower lacks (docs/protocol.md#history-catch-up).
 * `after` on a channel's first frame only (null: from the start); `last` on its last.
 */
export type HistoryFrame = { type: 'history'; n: number; queue: string; after?: string | null; records: PeerRecord[]; last: boolean };
/** a master's settlements since the last feed, and the messages it accepted or made (dead letters) */
export type FeedFrame = { type: 'feed'; settled: PeerSettlement[]; removed: string[]; messages: PeerMessage[] };

/** a reserved id as a master mirrors it (SPEC §5): its client name, and when its hold runs out (null: subscribed) */
export interface PeerReservation {
  channel: string;
  owner: string;
  since: number;
  releaseAt: number | null;
}
/** a master's reserved ids: `full` replaces the follower's table, else `set` and `released` change it */
export type ReservationsFrame = { type: 'reservations'; full: boolean; set: PeerReservation[]; released: string[] };

export type BrokerFrame =
  | ClusterFrame
  | ReservationsFrame
  | ReplayEndFrame
  | PeerStateFrame
  | SyncFrame
  | HistoryFrame
  | FeedFrame
  | KeysFrame
  | HelloFrame
  | WelcomeFrame
  | ErrorFrame
  | RoleFrame
  | ReplyFrame
  | ResultsFrame
  | DeliverFrame
  | RevokedFrame;

export function encodeFrame(frame: ClientFrame | BrokerFrame): string {
  return JSON.stringify(frame);
}

// ---- decoding: everything from the network is untrusted -------------------------------

type Obj = Record<string, unknown>;

function parseObject(text: string): Obj {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw protocolError('frame is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw protocolError('frame is not an object');
  }
  return value as Obj;
}

function str(frame: Obj, key: string, maxLength = 4096): string {
  const value = frame[key];
  if (typeof value !== 'string' || value.length > maxLength) throw protocolError(`${key} must be a string`);
  return value;
}

function optStr(frame: Obj, key: string, maxLength = 4096): string | undefined {
  return frame[key] === undefined ? undefined : str(frame, key, maxLength);
}

function int(frame: Obj, key: string): number {
  const value = frame[key];
  if (!Number.isSafeInteger(value) || (value as number) < 0) throw protocolError(`${key} must be an integer`);
  return value as number;
}

function bool(frame: Obj, key: string): boolean {
  const value = frame[key];
  if (typeof value !== 'boolean') throw protocolError(`${key} must be a boolean`);
  return value;
}

function array(frame: Obj, key: string, maxItems = 100_000): unknown[] {
  const value = frame[key];
  if (!Array.isArray(value) || value.length > maxItems) throw protocolError(`${key} must be an array`);
  return value;
}

function obj(value: unknown, what: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw protocolError(`${what} must be an object`);
  return value as Obj;
}

function ids(frame: Obj): string[] {
  return array(frame, 'ids', 10_000).map((id) => {
    if (typeof id !== 'string') throw protocolError('ids must be strings');
    return id;
  });
}

function errorPayload(value: unknown): ErrorPayload {
  const error = obj(value, 'error');
  const code = error.code;
  if (!isErrorCode(code)) throw protocolError('unknown error code');
  const payload: ErrorPayload = { code, message: String(error.message ?? code) };
  if (error.details !== undefined) payload.details = error.details;
  return payload;
}

/** never String(value): a hostile deep array would recurse until the stack breaks */
function describeType(type: unknown): string {
  return typeof type === 'string' ? `unknown frame type ${JSON.stringify(type.slice(0, 40))}` : `frame type must be a string, not ${type === null ? 'null' : typeof type}`;
}

export function decodeClientFrame(text: string): ClientFrame {
  const frame = parseObject(text);
  const type = frame.type;
  switch (type) {
    case 'auth': {
      const auth: AuthFrame = { type, protocol: int(frame, 'protocol'), token: str(frame, 'token', 16_384) };
      const publicKey = optStr(frame, 'publicKey', 16_384);
      const socketToken = optStr(frame, 'socketToken', 1024);
      if (publicKey !== undefined) auth.publicKey = publicKey;
      if (socketToken !== undefined) auth.socketToken = socketToken;
      if (frame.role !== undefined) {
        if (frame.role !== 'peer') throw protocolError('role must be peer');
        auth.role = 'peer';
      }
      return auth;
    }
    case 'publish': {
      const messages = array(frame, 'messages');
      // every publish is answered by results for its messages: an empty one would go unanswered
      if (messages.length === 0) throw protocolError('publish without messages');
      return {
        type,
        messages: messages.map((value) => {
          const m = obj(value, 'message');
          if (m.data === undefined) throw protocolError('message without data');
          return { messageId: str(m, 'messageId', 128), channel: str(m, 'channel', 1024), data: m.data, created: int(m, 'created') };
        }),
      };
    }
    case 'subscribe': {
      const mode = frame.mode;
      if (mode !== 'listen' && mode !== 'consume') throw protocolError('mode must be listen or consume');
      const subscribe: SubscribeFrame = {
        type,
        req: int(frame, 'req'),
        sub: int(frame, 'sub'),
        mode,
        endpoint: str(frame, 'endpoint', 128),
        version: str(frame, 'version', 128),
        ids: ids(frame),
      };
      if (frame.prefetch !== undefined) subscribe.prefetch = int(frame, 'prefetch');
      if (frame.limit !== undefined) subscribe.limit = int(frame, 'limit');
      return subscribe;
    }
    case 'addIds':
    case 'removeIds':
      return { type, req: int(frame, 'req'), sub: int(frame, 'sub'), ids: ids(frame) };
    case 'unsubscribe':
      return { type, req: int(frame, 'req'), sub: int(frame, 'sub') };
    case 'replay': {
      const replay: ReplayFrame = { type, req: int(frame, 'req'), sub: int(frame, 'sub'), endpoint: str(frame, 'endpoint', 128), version: str(frame, 'version', 128), ids: ids(frame) };
      if (frame.since !== undefined) replay.since = int(frame, 'since');
      if (frame.sinceId !== undefined) replay.sinceId = str(frame, 'sinceId', 128);
      if (frame.until !== undefined) replay.until = int(frame, 'until');
      if (frame.limit !== undefined) replay.limit = int(frame, 'limit');
      return replay;
    }
    case 'ack':
      return {
        type,
        acks: array(frame, 'acks').map((value) => {
          const a = obj(value, 'ack');
          const ack: Ack = { sub: int(a, 'sub'), messageId: str(a, 'messageId', 128), via: str(a, 'via', 1024), ok: bool(a, 'ok') };
          if (a.delaySeconds !== undefined) {
            const delay = a.delaySeconds;
            if (typeof delay !== 'number' || !(delay >= 0) || delay > 31_536_000) throw protocolError('bad delaySeconds');
            ack.delaySeconds = delay;
          }
          return ack;
        }),
      };
    case 'touch':
      return {
        type,
        touches: array(frame, 'touches').map((value) => {
          const t = obj(value, 'touch');
          return { sub: int(t, 'sub'), messageId: str(t, 'messageId', 128), via: str(t, 'via', 1024) };
        }),
      };
    case 'flow':
      // null lifts the limit; a missing one is a mistake, not "no limit"
      if (frame.limit === undefined) throw protocolError('limit must be an integer or null');
      return { type, sub: int(frame, 'sub'), limit: frame.limit === null ? null : int(frame, 'limit') };
    case 'peerState':
      return peerState(frame);
    case 'follow': {
      const follow: FollowFrame = frame.history === undefined ? { type } : { type, history: followHistory(frame) };
      if (frame.resume === true) follow.resume = true;
      return follow;
    }
    case 'historyAck':
      return { type, n: int(frame, 'n') };
    case 'offer':
      return frame.last === true ? { type, messages: peerMessages(frame), last: true } : { type, messages: peerMessages(frame) };
    case 'keys':
      return { type, req: int(frame, 'req'), bound: keyBindings(frame, 'bound'), revoked: keyBindings(frame, 'revoked') };
    default:
      throw protocolError(describeType(type));
  }
}

/** Client names: a token's issuer, and a key's file name in registeredClientsPath, so nothing that can leave it (SPEC §4). */
export const CLIENT_NAME = /^(?!\.+$)[A-Za-z0-9._-]{1,128}$/; // not `.` or `..`

/** at most KEYS_PER_FRAME per list, names and keys bounded in length; the name pattern and the
 * key's parse are checked by KeySync, which skips a bad entry (docs/protocol.md#peer-keys) */
export const KEYS_PER_FRAME = 500;
function keyBindings(frame: Obj, key: string): KeyBinding[] {
  return array(frame, key, KEYS_PER_FRAME).map((value) => {
    const b = obj(value, 'key binding');
    return { name: str(b, 'name', 128), key: str(b, 'key', 16_384) };
  });
}

function peerState(frame: Obj): PeerStateFrame {
  const state: PeerStateFrame = { type: 'peerState', serviceId: str(frame, 'serviceId', 256), configuredMaster: bool(frame, 'configuredMaster'), isMaster: bool(frame, 'isMaster'), ...optEpoch(frame) };
  if (frame.keys === true) state.keys = true;
  if (frame.resumes === true) state.resumes = true;
  return state;
}

/** the election's epoch, when the broker runs one (docs/protocol.md#epochs) */
function optEpoch(frame: Obj): { epoch?: number } {
  return frame.epoch === undefined ? {} : { epoch: int(frame, 'epoch') };
}

/** a newer broker may list more: unknown names are kept and ignored */
function optFeatures(frame: Obj): { features?: string[] } {
  if (frame.features === undefined) return {};
  return { features: array(frame, 'features', 64).map((name) => (typeof name === 'string' ? name.slice(0, 64) : '')) };
}

function strings(frame: Obj, key: string): string[] {
  return array(frame, key).map((value) => {
    if (typeof value !== 'string' || value.length > 128) throw protocolError(`${key} must hold message ids`);
    return value;
  });
}

/** channels a `follow` lists at most, and ids per channel */
export const FOLLOW_CHANNELS = 10_000;
export const FOLLOW_ANCHORS = 16;
function followHistory(frame: Obj): FollowHistory[] {
  return array(frame, 'history', FOLLOW_CHANNELS).map((value) => {
    const h = obj(value, 'history');
    return { queue: str(h, 'queue', 300), after: array(h, 'after', FOLLOW_ANCHORS).map((id) => {
      if (typeof id !== 'string' || id.length > 128) throw protocolError('after must hold message ids');
      return id;
    }) };
  });
}

/** records per `history` frame at most (a master sends 1,000) */
const HISTORY_RECORDS = 10_000;
function peerRecords(frame: Obj): PeerRecord[] {
  return array(frame, 'records', HISTORY_RECORDS).map((value) => {
    const r = obj(value, 'record');
    if (r.data === undefined) throw protocolError('record without data');
    return { messageId: str(r, 'messageId', 128), id: str(r, 'id', 1024), acceptedAt: int(r, 'acceptedAt'), created: int(r, 'created'), from: str(r, 'from', 128), data: r.data };
  });
}

function peerMessages(frame: Obj): PeerMessage[] {
  return array(frame, 'messages').map((value) => {
    const m = obj(value, 'message');
    if (m.data === undefined) throw protocolError('message without data');
    return {
      messageId: str(m, 'messageId', 128),
      queue: str(m, 'queue', 300),
      id: str(m, 'id', 1024),
      data: m.data,
      created: int(m, 'created'),
      acceptedAt: int(m, 'acceptedAt'),
      from: str(m, 'from', 128),
    };
  });
}

export function decodeBrokerFrame(text: string): BrokerFrame {
  const frame = parseObject(text);
  const type = frame.type;
  switch (type) {
    case 'hello':
      return { type, protocol: int(frame, 'protocol'), nonce: str(frame, 'nonce'), serviceId: str(frame, 'serviceId'), isMaster: bool(frame, 'isMaster') };
    case 'welcome':
      return { type, node: str(frame, 'node'), serviceId: str(frame, 'serviceId'), isMaster: bool(frame, 'isMaster'), maxPayloadBytes: int(frame, 'maxPayloadBytes'), ...optEpoch(frame), ...optFeatures(frame) };
    case 'error':
      return { type, error: errorPayload(frame.error) };
    case 'role':
      return { type, isMaster: bool(frame, 'isMaster'), ...optEpoch(frame) };
    case 'reply': {
      const reply: ReplyFrame = { type, req: int(frame, 'req') };
      if (frame.error !== undefined) reply.error = errorPayload(frame.error);
      if (frame.refused !== undefined) {
        reply.refused = array(frame, 'refused').map((value) => {
          const r = obj(value, 'refused');
          return { id: str(r, 'id'), error: errorPayload(r.error) };
        });
      }
      return reply;
    }
    case 'results':
      return {
        type,
        results: array(frame, 'results').map((value) => {
          const r = obj(value, 'result');
          const result: PublishResult = { messageId: str(r, 'messageId') };
          if (r.error !== undefined) result.error = errorPayload(r.error);
          return result;
        }),
      };
    case 'deliver':
      return {
        type,
        messages: array(frame, 'messages').map((value) => {
          const d = obj(value, 'delivery');
          return {
            sub: int(d, 'sub'),
            messageId: str(d, 'messageId'),
            channel: str(d, 'channel'),
            data: d.data,
            created: int(d, 'created'),
            nbRequeues: int(d, 'nbRequeues'),
            from: str(d, 'from'),
            via: str(d, 'via'),
          };
        }),
      };
    case 'revoked':
      return { type, sub: int(frame, 'sub'), ids: ids(frame), error: errorPayload(frame.error) };
    case 'replayEnd': {
      const end: ReplayEndFrame = { type, sub: int(frame, 'sub'), count: int(frame, 'count') };
      if (frame.error !== undefined) end.error = errorPayload(frame.error);
      return end;
    }
    case 'peerState':
      return peerState(frame);
    case 'cluster':
      return decodeClusterFrame(frame);
    case 'sync': {
      const sync: SyncFrame = { type, messages: peerMessages(frame), removed: strings(frame, 'removed'), done: bool(frame, 'done') };
      if (frame.resumed !== undefined) sync.resumed = bool(frame, 'resumed');
      return sync;
    }
    case 'history': {
      const history: HistoryFrame = { type, n: int(frame, 'n'), queue: str(frame, 'queue', 300), records: peerRecords(frame), last: bool(frame, 'last') };
      if (frame.after === null) history.after = null;
      else if (frame.after !== undefined) history.after = str(frame, 'after', 128);
      return history;
    }
    case 'keys':
      return { type, req: int(frame, 'req'), bound: keyBindings(frame, 'bound'), revoked: keyBindings(frame, 'revoked') };
    case 'reservations':
      return {
        type,
        full: bool(frame, 'full'),
        set: array(frame, 'set', 10_000).map((value) => {
          const r = obj(value, 'reservation');
          const releaseAt = r.releaseAt === null ? null : int(r, 'releaseAt');
          return { channel: str(r, 'channel', 1400), owner: str(r, 'owner', 256), since: int(r, 'since'), releaseAt };
        }),
        released: array(frame, 'released', 10_000).map((value) => {
          if (typeof value !== 'string' || value.length > 1400) throw protocolError('released must hold channels');
          return value;
        }),
      };
    case 'feed':
      return {
        type,
        settled: array(frame, 'settled').map((value) => {
          const s = obj(value, 'settlement');
          return { messageId: str(s, 'messageId', 128), group: str(s, 'group', 2048) };
        }),
        removed: strings(frame, 'removed'),
        messages: peerMessages(frame),
      };
    default:
      throw protocolError(describeType(type));
  }
}
