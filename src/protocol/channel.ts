import { WhiskerError } from './errors.js';

/**
 * Channels are `endpoint/version/id` (SPEC §2). Inside Whisker an id is kept in its canonical
 * escaped form (`%`, `/` and `*` percent-encoded), so `*` alone always means "every id" and
 * two spellings of one id compare equal.
 */
export const WILDCARD = '*';

const ENDPOINT = /^[A-Za-z0-9_-]{1,64}$/;
const VERSION = /^[A-Za-z0-9._-]{1,32}$/;
const MAX_ID_LENGTH = 256;
/** C0, DEL, C1 and the bidirectional controls (ALM, LRM, RLM, LRE..RLO, LRI..PDI): refused in new ids (SPEC §2) */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;

/**
 * `strict`: the id comes from a client (send, subscribe, addIds, replay) and may not hold
 * control characters; ids already stored with them still load, sync and can be deleted.
 */
function checkControl(raw: string, strict: boolean): void {
  if (strict && CONTROL.test(raw)) throw badChannel('Bad id: control characters are not allowed');
}

export interface Channel {
  readonly endpoint: string;
  readonly version: string;
  /** canonical escaped id, or `*` */
  readonly id: string;
}

/** The queue a channel belongs to: one `endpoint/version` is one format and one queue. */
export function queueName(channel: { endpoint: string; version: string }): string {
  return `${channel.endpoint}/${channel.version}`;
}

export function formatChannel(channel: Channel): string {
  return `${channel.endpoint}/${channel.version}/${channel.id}`;
}

function badChannel(message = 'Bad channel'): WhiskerError {
  return new WhiskerError('E_BAD_CHANNEL', message);
}

export function checkQueueParts(endpoint: unknown, version: unknown): void {
  if (endpoint === WILDCARD || version === WILDCARD) throw badChannel('Bad endpoint, cannot be *');
  if (typeof endpoint !== 'string' || !ENDPOINT.test(endpoint)) throw badChannel('Bad endpoint');
  if (typeof version !== 'string' || !VERSION.test(version)) throw badChannel('Bad version');
}

/** Escapes a raw id (as a user means it) into the canonical form. */
export function escapeId(rawId: string): string {
  return rawId.replace(/[%/*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/** The id as the user means it (`a/b`), for handlers' `info.channel.id`. */
export function unescapeId(id: string): string {
  return id === WILDCARD ? id : decodeURIComponent(id);
}

/** Canonical id from a raw value of an object-form channel or `addId` (numbers allowed). */
export function canonicalRawId(value: unknown, strict = false): string {
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH) {
    throw badChannel('Bad id');
  }
  checkControl(value, strict);
  return value === WILDCARD ? WILDCARD : escapeId(value);
}

/** Canonical id from the id segment of a channel string or a wire frame (percent-encoded where needed). */
export function canonicalIdSegment(segment: string, strict = false): string {
  if (segment === WILDCARD) return WILDCARD;
  let raw: string;
  try {
    raw = decodeURIComponent(segment);
  } catch {
    throw badChannel('Bad id');
  }
  if (raw.length === 0 || raw.length > MAX_ID_LENGTH) throw badChannel('Bad id');
  checkControl(raw, strict);
  return escapeId(raw);
}

export function parseChannel(value: unknown, strict = false): Channel {
  if (typeof value !== 'string') throw badChannel();
  const parts = value.split('/');
  if (parts.length !== 3) throw badChannel();
  const [endpoint, version, id] = parts as [string, string, string];
  checkQueueParts(endpoint, version);
  return { endpoint, version, id: canonicalIdSegment(id, strict) };
}

export interface CachedChannel extends Channel {
  /** `endpoint/version` */
  readonly queue: string;
  /** the id as the user means it (unescapeId) */
  readonly rawId: string;
}

/**
 * Channel strings parsed lately, with their queue: a sender sends to few channels, and parsing
 * one (split, two patterns, decodeURIComponent, escaping) cost ~1 µs per message. Bounded:
 * cleared when full. What it returns is shared: never modify it.
 */
export class ChannelCache {
  readonly #parsed = new Map<string, CachedChannel>();
  readonly #maxSize: number;
  readonly #strict: boolean;

  /** `strict`: channels a client sends to (no control characters in ids, parseChannel) */
  constructor(maxSize = 1024, strict = false) {
    this.#maxSize = maxSize;
    this.#strict = strict;
  }

  /** parseChannel, remembered; a bad channel throws and is not kept */
  parse(value: unknown): CachedChannel {
    let channel = typeof value === 'string' ? this.#parsed.get(value) : undefined;
    if (!channel) {
      const parsed = parseChannel(value, this.#strict);
      channel = Object.freeze({ ...parsed, queue: queueName(parsed), rawId: unescapeId(parsed.id) });
      if (this.#parsed.size >= this.#maxSize) this.#parsed.clear();
      this.#parsed.set(value as string, channel);
    }
    return channel;
  }
}

export interface ChannelSet {
  readonly endpoint: string;
  readonly version: string;
  /** canonical ids, without duplicates, in the order given */
  readonly ids: readonly string[];
}

/**
 * Channel argument of listen/consume: a string `ep/ver/id` or `{ endpoint, version, ids }`
 * where `ids` is one value or an array of raw ids (possibly empty).
 */
export function parseChannelSet(value: unknown, strict = false): ChannelSet {
  if (typeof value === 'string') {
    const channel = parseChannel(value, strict);
    return { endpoint: channel.endpoint, version: channel.version, ids: [channel.id] };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badChannel();
  const { endpoint, version, ids } = value as Record<string, unknown>;
  checkQueueParts(endpoint, version);
  // an empty list is a subscription that addId fills later (SPEC §2, reference test K59)
  const list = Array.isArray(ids) ? ids : [ids];
  return { endpoint: endpoint as string, version: version as string, ids: canonicalIds(list, strict) };
}

export function canonicalIds(values: readonly unknown[], strict = false): string[] {
  return [...new Set(values.map((value) => canonicalRawId(value, strict)))];
}

/** Does a subscription on `patternId` receive a message sent to `messageId`? */
export function idMatches(patternId: string, messageId: string): boolean {
  return patternId === WILDCARD || messageId === WILDCARD || patternId === messageId;
}
