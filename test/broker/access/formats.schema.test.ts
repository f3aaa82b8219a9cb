// Broken maps and raw JSON Schemas: config errors that name the channel and field, and raw
// schema checks (docs/formats.md#schema).
import { describe, test, expect } from 'vitest';
import { ConfigError } from '../../../src/config/load.js';
import { compileChannelFormat, mapToJsonSchema, type ChannelFormat } from '../../../src/broker/access/formats/index.js';

type Settings = Parameters<typeof compileChannelFormat>[1];

function configErrorOf(settings: Settings): ConfigError {
  try {
    compileChannelFormat('shop/v1', settings);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

function rawFormat(schema: Record<string, unknown> | boolean): ChannelFormat {
  const format = compileChannelFormat('shop/v1', { schema });
  if (!format) throw new Error('expected a format');
  return format;
}

describe('a broken map is a config error naming the channel and the field', () => {
  const cases: [string, unknown, string, RegExp][] = [
    ['a map that is not an object', ['int'], 'channels.shop/v1.map', /must be an object of fields/],
    ['a field that is not an array', { id: 'int' }, 'channels.shop/v1.map.id', /must be an array like/],
    ['an empty field', { id: [] }, 'channels.shop/v1.map.id', /unknown type undefined/],
    ['an unknown type', { id: ['integer'] }, 'channels.shop/v1.map.id', /unknown type "integer"/],
    ['a type that is not a string', { id: [{ a: ['int'] }] }, 'channels.shop/v1.map.id', /unknown type/],
    ['an unknown type deep down', { products: ['array', { label: ['strin'] }] }, 'channels.shop/v1.map.products.label', /unknown type "strin"/],
    [
      'an unknown modifier three levels down',
      { a: ['object', { b: ['array', { c: ['int', 'mni', 1] }] }] },
      'channels.shop/v1.map.a.b.c',
      /unknown modifier "mni"/,
    ],
    ['"min" without a number', { id: ['int', 'min'] }, 'channels.shop/v1.map.id', /"min" must be followed by a number/],
    ['"max" followed by a string', { id: ['int', 'max', '3'] }, 'channels.shop/v1.map.id', /"max" must be followed by a number/],
    ['a written bound that is not a number', { id: ['int', 'min 3x'] }, 'channels.shop/v1.map.id', /unknown modifier "min 3x"/],
    ['a negative length', { id: ['string', 'min', -1] }, 'channels.shop/v1.map.id', /whole number >= 0/],
    ['a fractional length', { id: ['array', 'max', 1.5] }, 'channels.shop/v1.map.id', /whole number >= 0/],
    ['min above max', { id: ['int', 'min', 5, 'max', 1] }, 'channels.shop/v1.map.id', /"min" 5 is greater than "max" 1/],
    ['a bound on a boolean', { id: ['boolean', 'min', 1] }, 'channels.shop/v1.map.id', /"min" does not apply to "boolean"/],
    ['a bound on an object', { id: ['object', 'max 1'] }, 'channels.shop/v1.map.id', /"max" does not apply to "object"/],
    ['a duplicate bound', { id: ['int', 'min', 1, 'min', 2] }, 'channels.shop/v1.map.id', /duplicate modifier "min"/],
    ['a conversion on the wrong type', { id: ['int', 'toBoolean'] }, 'channels.shop/v1.map.id', /"toBoolean" applies only to "binary"/],
    ['toInt on decimal', { id: ['decimal', 'toInt'] }, 'channels.shop/v1.map.id', /"toInt" applies only to "numeric"/],
    ['a nested map on a scalar', { id: ['int', { a: ['int'] }] }, 'channels.shop/v1.map.id', /nested map is allowed only in "object" and "array"/],
    ['a nested map before a modifier', { id: ['object', { a: ['int'] }, 'optional'] }, 'channels.shop/v1.map.id', /must be the last element/],
    ['a nested map inside an array literal', { id: ['array', [{ a: ['int'] }]] }, 'channels.shop/v1.map.id', /unexpected element/],
    ['a nested map that is broken', { id: ['object', { a: 'int' }] }, 'channels.shop/v1.map.id.a', /must be an array like/],
    ['a stray number', { id: ['int', 5] }, 'channels.shop/v1.map.id', /unexpected element 5/],
    ['optional twice', { id: ['int', 'optional', 'optional'] }, 'channels.shop/v1.map.id', /duplicate modifier "optional"/],
    ['an optional notNull', { id: ['notNull', 'optional'] }, 'channels.shop/v1.map.id', /"notNull" cannot be "optional"/],
  ];

  test.each(cases)('%s', (_label, map, key, message) => {
    const error = configErrorOf({ map: map as Record<string, unknown> });
    expect(error.key).toBe(key);
    expect(error.message).toContain(`"${key}"`);
    expect(error.message).toMatch(message);
  });

  test('a field named __proto__ is refused (ajv would never check it)', () => {
    const error = configErrorOf({ map: JSON.parse('{"__proto__": ["int"]}') as Record<string, unknown> });
    expect(error.key).toBe('channels.shop/v1.map.__proto__');
  });

  test('map and schema together are refused', () => {
    const error = configErrorOf({ map: { id: ['int'] }, schema: { type: 'object' } });
    expect(error.key).toBe('channels.shop/v1');
    expect(error.message).toMatch(/either "map" or "schema"/);
  });

  test('a frozen map compiles (config is deeply frozen)', () => {
    const map = Object.freeze({ id: Object.freeze(['int', 'min', 1]) });
    expect(compileChannelFormat('shop/v1', { map })?.check({ id: 1 }).ok).toBe(true);
  });
});

describe('an invalid raw schema is a config error', () => {
  const cases: [string, unknown, string, RegExp][] = [
    ['an unknown type name', { type: 'objec' }, 'channels.shop/v1.schema.type', /invalid JSON Schema: must be one of/],
    ['a keyword with a wrong value', { properties: { a: { minimum: 'x' } } }, 'channels.shop/v1.schema.properties.a.minimum', /must be number/],
    ['an unknown keyword', { type: 'object', requried: ['a'] }, 'channels.shop/v1.schema', /unknown keyword: "requried"/],
    ['an unknown format', { type: 'string', format: 'date-time' }, 'channels.shop/v1.schema', /unknown format "date-time"/],
    ['another draft', { $schema: 'http://json-schema.org/draft-07/schema#' }, 'channels.shop/v1.schema.$schema', /draft-07.*use draft 2020-12/],
    ['a $ref that goes nowhere', { $ref: '#/$defs/missing' }, 'channels.shop/v1.schema', /can't resolve reference/],
    ['an async schema', { $async: true, type: 'object' }, 'channels.shop/v1.schema', /\$async/],
    ['a schema that is not a schema', 5, 'channels.shop/v1.schema', /must be a JSON Schema/],
  ];

  test.each(cases)('%s', (_label, schema, key, message) => {
    const error = configErrorOf({ schema: schema as Record<string, unknown> });
    expect(error.key).toBe(key);
    expect(error.message).toMatch(message);
  });

  test('declaring draft 2020-12 is fine', () => {
    expect(rawFormat({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }).check({}).ok).toBe(true);
  });
});

describe('raw schemas', () => {
  const format = rawFormat({
    type: 'object',
    properties: {
      id: { type: 'integer', minimum: 1 },
      contact: { type: 'string', format: 'email' },
      products: {
        type: 'array',
        items: { type: 'object', properties: { label: { type: 'string', minLength: 1 } }, required: ['label'] },
      },
    },
    required: ['id'],
    additionalProperties: false,
  });

  test('accepts a valid message as it is', () => {
    const data = { id: 1, contact: 'a@b.fr', products: [{ label: 'x' }] };
    const result = format.check(data);
    expect(result.ok && result.value).toBe(data);
  });

  test('lists every failing field with the same paths as maps', () => {
    const result = format.check({ id: 0, contact: 'foo@bar', products: [{ label: 'a' }, { label: '' }, {}], extra: 1 });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect([...result.details].sort((a, b) => a.field.localeCompare(b.field))).toEqual([
      { field: 'contact', value: 'foo@bar', error: 'must match format "email"' },
      { field: 'extra', value: 1, error: 'is not allowed' },
      { field: 'id', value: 0, error: 'must be >= 1' },
      { field: 'products[1][label]', index: 1, value: '', error: 'must NOT have fewer than 1 characters' },
      { field: 'products[2][label]', index: 2, value: undefined, error: 'is required' },
    ]);
  });

  test('the root must be an object whatever the schema says', () => {
    expect(rawFormat(true).check({ any: 'thing' }).ok).toBe(true);
    expect(rawFormat(true).check(0)).toEqual({ ok: false, details: [{ field: '', value: 0, error: 'must be an object' }] });
    expect(rawFormat({ type: 'array' }).check([]).ok).toBe(false);
  });

  test('a oneOf that fails on its own is still reported', () => {
    const either = rawFormat({
      type: 'object',
      properties: { n: { oneOf: [{ type: 'integer' }, { minimum: 0 }] }, m: { type: 'string' } },
    });
    const result = either.check({ n: 5, m: 1 });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.details.map((d) => d.field).sort()).toEqual(['m', 'n']);
  });

  test('anyOf branch errors replace the anyOf summary', () => {
    const result = rawFormat({ type: 'object', properties: { n: { anyOf: [{ type: 'integer' }, { type: 'null' }] } } }).check({ n: 'x' });
    expect(result).toEqual({ ok: false, details: [{ field: 'n', value: 'x', error: 'must be integer; must be null' }] });
  });

  test('schema false refuses every message', () => {
    expect(rawFormat(false).check({}).ok).toBe(false);
  });

  test('a frozen schema with an $id compiles again on reload', () => {
    const schema = Object.freeze({
      $id: 'https://example.com/order.json',
      type: 'object',
      $defs: Object.freeze({ qty: Object.freeze({ type: 'integer' }) }),
      properties: Object.freeze({ qty: Object.freeze({ $ref: '#/$defs/qty' }) }),
    });
    const first = rawFormat(schema);
    const second = rawFormat(structuredClone(schema) as Record<string, unknown>);
    expect(first.check({ qty: 1 }).ok).toBe(true);
    expect(second.check({ qty: 'x' }).ok).toBe(false);
    expect(first.check({ qty: 'x' }).ok).toBe(false);
  });

  test('the whiskerRange keyword from compiled maps is available', () => {
    const ranged = rawFormat({ type: 'object', properties: { n: { type: 'string', whiskerRange: { minimum: 1 } } } });
    expect(ranged.check({ n: '0.5' }).ok).toBe(false);
    expect(ranged.check({ n: '1.5' }).ok).toBe(true);
  });
});

describe('moving from a map to a raw schema', () => {
  const map = {
    id: ['numeric', 'min', 1],
    label: ['alpha', 'optional', 'max', 5],
    email: ['emailList'],
    lines: ['array', 'min', 1, { qty: ['int', 'min', 1], gift: ['binary'], info: ['object', 'optional', { note: ['notNull'] }] }],
  };
  const fromMap = compileChannelFormat('shop/v1', { map });
  const fromSchema = compileChannelFormat('shop/v1', { schema: mapToJsonSchema('shop/v1', map) });
  const messages: unknown[] = [
    { id: '3', email: 'a@b.fr', lines: [{ qty: 1, gift: '1' }] },
    { id: 3, label: '', email: 'a@b.fr;c@d.fr', lines: [{ qty: 2, gift: false, info: { note: 0 } }] },
    { id: '0', label: 'toolong', email: 'a@b.fr;', lines: [] },
    { id: 'x', email: 'a@b', lines: [{ qty: 0, gift: 2, info: { note: null } }, 5] },
    { lines: [{}] },
  ];

  test.each(messages.map((data) => [data]))('gives the same verdict and fields for %j', (data) => {
    const a = fromMap?.check(data);
    const b = fromSchema?.check(data);
    expect(b?.ok).toBe(a?.ok);
    if (a && b && !a.ok && !b.ok) {
      expect(b.details.map((d) => [d.field, d.index]).sort()).toEqual(a.details.map((d) => [d.field, d.index]).sort());
    }
  });

  test('the documented example compiles to the documented schema', () => {
    expect(mapToJsonSchema('shop/v1', { id: ['numeric', 'toInt', 'min', 1], tags: ['array', 'max', 3, { label: ['string', 'optional'] }] })).toEqual({
      type: 'object',
      properties: {
        id: {
          type: ['integer', 'string'],
          pattern: '^-?[0-9]+$',
          minimum: 1,
          whiskerRange: { minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
        },
        tags: {
          type: 'array',
          items: {
            type: 'object',
            properties: { label: { if: { enum: [null, ''] }, else: { type: 'string' } } },
          },
          maxItems: 3,
        },
      },
      required: ['id', 'tags'],
    });
  });
});
