import fc from 'fast-check';

/**
 * Frames for the fuzz test in hostile.test.ts: random JSON, random values, and valid frames
 * with one field broken, to be thrown at a live broker before or after authentication by a
 * FuzzLane (fuzz-lane.ts), which checks the answer (docs/security.md#bad-input).
 */
export type FuzzInput =
  | { kind: 'text'; text: string }
  | { kind: 'binary'; bytes: Uint8Array }
  /** a properly signed handshake with hostile claims: only a well-formed name, our nonce and our serviceId pass */
  | { kind: 'signedAuth'; iss: string; aud: 'own' | 'other' | 'list'; nonce: 'own' | 'other'; protocol: number };

export interface FuzzCase {
  readonly phase: 'pre' | 'post';
  readonly input: FuzzInput;
}

// ---- values -------------------------------------------------------------------------

const DEEP_MARK = '\u0000deep:';
/** a placeholder that `serialise` turns into `depth` nested arrays (JSON.stringify could not) */
const deep = (depth: number): string => `${DEEP_MARK}${depth}`;

/** JSON text of any value; `undefined` and other non-JSON become the text `undefined` */
export function serialise(value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.replace(/"\\u0000deep:(\d+)"/g, (_match, depth: string) => '['.repeat(Number(depth)) + ']'.repeat(Number(depth)));
}

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];
const trickyStrings = fc.constantFrom(
  '', '*', '%', '%%', '%E0%A4%A', '%2F', 'a/b/c', '../../etc/passwd', '\u0000', '\ud800', '\ufeff', '🐱'.repeat(64),
  'x'.repeat(300), 'x'.repeat(70_000), ...PROTO_KEYS,
);
const hugeNumbers = fc.constantFrom(1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 2 ** 64, -1, -(2 ** 31), -0, 0.5, 5e-324, 1e21);
const bigArrays = fc.constantFrom(
  Array.from({ length: 10_001 }, (_, i) => String(i)),
  Array.from({ length: 2_000 }, (_, i) => `id${i}`),
);

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({ maxDepth: 3, maxKeys: 5 }),
  hugeNumbers,
  trickyStrings,
  bigArrays,
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer({ min: 1_000, max: 50_000 }).map(deep),
  fc.constantFrom(null, true, false, [], {}),
);

// ---- valid frames ----------------------------------------------------------------------

const endpoint = fc.constantFrom('fuzz', '__proto__', 'constructor', 'toString');
const version = fc.constantFrom('v1', 'v1', '__proto__');
const id = fc.oneof(
  fc.constantFrom('1', '2', '*', 'a%2Fb', '%2A', ...PROTO_KEYS),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
);
const num = fc.oneof(fc.nat(20), fc.constant(2 ** 53 - 1));
const channel = fc.oneof(
  fc.tuple(endpoint, version, id).map(([e, v, i]) => `${e}/${v}/${i}`),
  fc.string({ maxLength: 20 }),
);
const messageId = fc.oneof(fc.uuid(), fc.constantFrom(...PROTO_KEYS));
// deeply nested bodies are valid JSON within maxPayloadBytes; delivering them must not break the broker
const data = fc.oneof(
  { weight: 8, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.integer({ min: 8_000, max: 30_000 }).map(deep) },
  { weight: 1, arbitrary: fc.constant(null) },
);

const validFrame: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record(
    {
      type: fc.constant('subscribe'), req: num, sub: num, mode: fc.constantFrom('listen', 'consume'),
      endpoint, version, ids: fc.array(id, { minLength: 1, maxLength: 4 }), prefetch: fc.integer({ min: 1, max: 5 }), limit: fc.nat(3),
    },
    { requiredKeys: ['type', 'req', 'sub', 'mode', 'endpoint', 'version', 'ids'] },
  ),
  fc.record({ type: fc.constantFrom('addIds', 'removeIds'), req: num, sub: num, ids: fc.array(id, { minLength: 1, maxLength: 4 }) }),
  fc.record({ type: fc.constant('unsubscribe'), req: num, sub: num }),
  fc.record({ type: fc.constant('flow'), sub: num, limit: fc.oneof(num, fc.constant(null)) }),
  fc.record({
    type: fc.constant('publish'),
    messages: fc.array(fc.record({ messageId, channel, data, created: fc.nat() }), { minLength: 1, maxLength: 4 }),
  }),
  fc.record({
    type: fc.constant('ack'),
    acks: fc.array(
      fc.record(
        { sub: num, messageId, via: id, ok: fc.boolean(), delaySeconds: fc.double({ min: 0, max: 10, noNaN: true }) },
        { requiredKeys: ['sub', 'messageId', 'via', 'ok'] },
      ),
      { minLength: 1, maxLength: 4 },
    ),
  }),
  fc.record({ type: fc.constant('auth'), protocol: fc.constantFrom(1, 0, 2), token: fc.string({ maxLength: 60 }) }),
);

// ---- one field broken ------------------------------------------------------------------

const FRAME_KEYS = ['type', 'req', 'sub', 'mode', 'endpoint', 'version', 'ids', 'prefetch', 'limit', 'messages', 'acks', 'token', 'protocol'];
const ITEM_KEYS = ['messageId', 'channel', 'data', 'created', 'sub', 'via', 'ok', 'delaySeconds'];

type Mutation =
  | { op: 'set'; key: string; value: unknown }
  | { op: 'delete'; key: string }
  /** an own `__proto__`/`constructor` key, as JSON.parse makes it */
  | { op: 'ownKey'; key: string; value: unknown }
  /** a field of the first message or ack */
  | { op: 'item'; key: string; value: unknown }
  | { op: 'wrap' };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), key: fc.constantFrom(...FRAME_KEYS), value: hostileValue }),
  fc.record({ op: fc.constant('delete' as const), key: fc.constantFrom(...FRAME_KEYS) }),
  fc.record({ op: fc.constant('ownKey' as const), key: fc.constantFrom(...PROTO_KEYS), value: hostileValue }),
  fc.record({ op: fc.constant('item' as const), key: fc.constantFrom(...ITEM_KEYS), value: hostileValue }),
  fc.constant({ op: 'wrap' as const }),
);

function defineOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function mutate(frame: Record<string, unknown>, m: Mutation): unknown {
  const copy: Record<string, unknown> = { ...frame };
  switch (m.op) {
    case 'set':
    case 'ownKey':
      defineOwn(copy, m.key, m.value);
      return copy;
    case 'delete':
      delete copy[m.key];
      return copy;
    case 'item': {
      const list = (copy.messages ?? copy.acks ?? copy.ids) as unknown[] | undefined;
      if (!Array.isArray(list) || list.length === 0) return copy;
      const first = list[0];
      const item = typeof first === 'object' && first !== null ? { ...(first as Record<string, unknown>) } : {};
      defineOwn(item, m.key, m.value);
      copy[copy.messages ? 'messages' : copy.acks ? 'acks' : 'ids'] = [item, ...list.slice(1)];
      return copy;
    }
    case 'wrap':
      return [copy];
    default: {
      const never: never = m;
      return never;
    }
  }
}

const text = (value: fc.Arbitrary<string>): fc.Arbitrary<FuzzInput> => value.map((t) => ({ kind: 'text' as const, text: t }));

const anyText: fc.Arbitrary<FuzzInput> = fc.oneof(
  { weight: 3, arbitrary: text(validFrame.map(serialise)) },
  { weight: 5, arbitrary: text(fc.tuple(validFrame, mutation).map(([frame, m]) => serialise(mutate(frame, m)))) },
  { weight: 1, arbitrary: text(fc.json({ maxDepth: 3 })) },
  { weight: 1, arbitrary: text(fc.anything({ maxDepth: 3 }).map(serialise)) },
  { weight: 1, arbitrary: text(fc.string({ unit: 'grapheme', maxLength: 50 })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ kind: 'binary' as const, bytes })) },
);

const signedAuth: fc.Arbitrary<FuzzInput> = fc.record({
  kind: fc.constant('signedAuth' as const),
  iss: fc.oneof(
    fc.constantFrom('fuzz-signed', '__proto__', 'constructor', '..', '.', '../../evil', 'a/b', 'x'.repeat(129), 'ok.name_1-', 'nul\u0000l', 'ü'),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }),
  ),
  aud: fc.constantFrom('own', 'own', 'other', 'list'),
  nonce: fc.constantFrom('own', 'own', 'other'),
  protocol: fc.constantFrom(1, 1, 1, 0, 2),
});

export const fuzzCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  { weight: 3, arbitrary: anyText.map((input) => ({ phase: 'post' as const, input })) },
  { weight: 1, arbitrary: fc.oneof(anyText, signedAuth).map((input) => ({ phase: 'pre' as const, input })) },
);
