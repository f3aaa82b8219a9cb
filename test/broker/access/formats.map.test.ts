// Modifiers, nesting, error paths and conversions of the map language (docs/formats.md).
import { describe, test, expect } from 'vitest';
import { compileChannelFormat, mapToJsonSchema, type ChannelFormat, type FieldError } from '../../../src/broker/access/formats/index.js';

function formatOf(map: Record<string, unknown>): ChannelFormat {
  const format = compileChannelFormat('shop/v1', { map });
  if (!format) throw new Error('expected a format');
  return format;
}

function detailsOf(format: ChannelFormat, data: unknown): FieldError[] {
  const result = format.check(data);
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return [...result.details].sort((a, b) => a.field.localeCompare(b.field));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

describe('min and max', () => {
  const cases: { definition: unknown[]; accepts: unknown[]; rejects: unknown[] }[] = [
    { definition: ['int', 'min', 1, 'max', 5], accepts: [1, 3, 5], rejects: [0, 6, -1, '3'] },
    { definition: ['int', 'min', -10], accepts: [-10, 0, 99], rejects: [-11] },
    { definition: ['int', 'max', 1000000], accepts: [-2, 999999, 1000000], rejects: [2000000] },
    { definition: ['number', 'min', 1, 'max', 5], accepts: [1, 4.54542, 5.0], rejects: [0.999999, 5.1, '2.5'] },
    { definition: ['number', 'min', 0.5], accepts: [0.5, 1], rejects: [0.49] },
    { definition: ['numeric', 'min', 1, 'max', 5], accepts: [1, 5, '1', '5', '005'], rejects: [0, 6, '0', '6', '-3', '4.5'] },
    { definition: ['decimal', 'min', 1, 'max', 5], accepts: [1, 5.0, '4.999', '2.545', '001.000'], rejects: [0.999999, 5.1, '5.001', '0', '9'] },
    { definition: ['string', 'min', 1, 'max', 3], accepts: [' ', 'abc', 'éàè', '😀😀😀'], rejects: ['', 'abcd', 3] },
    { definition: ['alpha', 'min', 2], accepts: ['ab'], rejects: ['a'] },
    { definition: ['alphanumeric', 'max', 2], accepts: ['a1'], rejects: ['a1b'] },
    { definition: ['email', 'max', 10], accepts: ['a@b.fr'], rejects: ['abcdef@b.fr'] },
    { definition: ['array', 'min', 1, 'max', 2], accepts: [[1], [1, 2]], rejects: [[], [1, 2, 3]] },
    {
      definition: ['array', 'min', 1, 'max', 2, { id: ['int'] }],
      accepts: [[{ id: 1 }], [{ id: 1 }, { id: 2 }]],
      rejects: [[], [{ id: 1 }, { id: 2 }, { id: 3 }]],
    },
  ];

  describe.each(cases)('$definition', ({ definition, accepts, rejects }) => {
    const format = formatOf({ v: definition });
    test.each(accepts.map((value) => [value]))('accepts %j', (value) => {
      expect(format.check({ v: value }).ok).toBe(true);
    });
    test.each(rejects.map((value) => [value]))('rejects %j', (value) => {
      expect(detailsOf(format, { v: value })).toEqual([{ field: 'v', value, error: expect.any(String) as string }]);
    });
  });

  test('the error names the constraint that failed, not every constraint of the field (issue 29)', () => {
    const bounded = formatOf({ id: ['int', 'min', 1, 'max', 3] });
    expect(detailsOf(bounded, { id: 4 })[0]?.error).toBe('must be less than or equal to 3');
    expect(detailsOf(bounded, { id: 0 })[0]?.error).toBe('must be greater than or equal to 1');
    expect(detailsOf(bounded, { id: 'x' })[0]?.error).toBe('must be an integer');
    expect(detailsOf(formatOf({ s: ['string', 'min', 1] }), { s: '' })[0]?.error).toBe('the length must be greater than or equal to 1');
    expect(detailsOf(formatOf({ a: ['array', 'max', 1] }), { a: [1, 2] })[0]?.error).toBe('must have at most 1 items');
    expect(detailsOf(formatOf({ n: ['numeric', 'min', 5] }), { n: '2' })[0]?.error).toBe('must be greater than or equal to 5');
  });

  test('"min 3" in one string means the same as "min", 3', () => {
    const split = { id: ['int', 'min', 1, 'max', 5], label: ['string', 'min', 2] };
    const joined = { id: ['int', 'min 1', 'max 5'], label: ['string', 'min 2'] };
    expect(mapToJsonSchema('shop/v1', joined)).toEqual(mapToJsonSchema('shop/v1', split));
  });
});

describe('optional', () => {
  const types = ['int', 'number', 'numeric', 'decimal', 'string', 'alpha', 'alphanumeric', 'unicodeAlpha', 'unicodeAlphanumeric', 'boolean', 'binary', 'array', 'object', 'email', 'emailList'];
  const empties: [string, Record<string, unknown>][] = [['absent', {}], ['null', { v: null }], ["''", { v: '' }]];

  describe.each(types)('%s', (type) => {
    const format = formatOf({ v: [type, 'optional'] });
    test.each(empties)('accepts %s', (_label, data) => {
      expect(format.check(data)).toEqual({ ok: true, value: data });
    });
    test('still checks a value that is there', () => {
      const wrong = type === 'string' ? 42 : type === 'array' || type === 'object' ? 'x' : { not: 'this' };
      expect(detailsOf(format, { v: wrong })).toHaveLength(1);
    });
  });

  test("'' passes even below a min length, other short strings do not", () => {
    const format = formatOf({ v: ['string', 'optional', 'min', 3] });
    expect(format.check({ v: '' }).ok).toBe(true);
    expect(detailsOf(format, { v: 'ab' })).toHaveLength(1);
  });

  test('an optional object is checked inside when present, and reports only the inner field', () => {
    const format = formatOf({ info: ['object', 'optional', { id: ['int'] }] });
    expect(format.check({ info: null }).ok).toBe(true);
    expect(detailsOf(format, { info: { id: 'x' } })).toEqual([{ field: 'info[id]', value: 'x', error: 'must be an integer' }]);
    expect(detailsOf(format, { info: [] })).toEqual([{ field: 'info', value: [], error: 'must be an object' }]);
  });

  test('without optional, null is a wrong value, not a missing one', () => {
    expect(detailsOf(formatOf({ id: ['int'] }), { id: null })).toEqual([{ field: 'id', value: null, error: 'must be an integer' }]);
  });
});

describe('nesting and error paths', () => {
  const format = formatOf({
    id: ['int'],
    info: ['object', { temperature: ['string'], place: ['object', { zip: ['numeric'] }] }],
    countries: [
      'array',
      { id: ['int'], cities: ['array', { id: ['int'], info: ['object', { goodies: ['array', { name: ['alpha'] }] }] }] },
    ],
  });
  const valid = {
    id: 1,
    info: { temperature: '5degree', place: { zip: '75001' } },
    countries: [
      { id: 1, cities: [] },
      { id: 2, cities: [{ id: 1, info: { goodies: [{ name: 'cake' }] } }, { id: 2, info: { goodies: [] } }] },
    ],
  };

  test('accepts a valid message several levels deep', () => {
    expect(format.check(valid)).toEqual({ ok: true, value: valid });
  });

  test('lists every failing field with its full path; index is the innermost array position', () => {
    const data = structuredClone(valid) as Record<string, unknown> & typeof valid;
    data.id = 'B' as unknown as number;
    data.info.place.zip = '75 001';
    data.countries[0] = { id: 1, cities: [{}, {}, { id: 'x', info: { goodies: [{ name: 'c4ke' }] } }] } as never;
    data.countries[1]!.id = 2.5;
    expect(detailsOf(format, data)).toEqual([
      { field: 'countries[0][cities][0][id]', index: 0, value: undefined, error: 'is required' },
      { field: 'countries[0][cities][0][info]', index: 0, value: undefined, error: 'is required' },
      { field: 'countries[0][cities][1][id]', index: 1, value: undefined, error: 'is required' },
      { field: 'countries[0][cities][1][info]', index: 1, value: undefined, error: 'is required' },
      { field: 'countries[0][cities][2][id]', index: 2, value: 'x', error: 'must be an integer' },
      { field: 'countries[0][cities][2][info][goodies][0][name]', index: 0, value: 'c4ke', error: 'must contain only letters' },
      { field: 'countries[1][id]', index: 1, value: 2.5, error: 'must be an integer' },
      { field: 'id', value: 'B', error: 'must be an integer' },
      { field: 'info[place][zip]', value: '75 001', error: 'must be a numeric value' },
    ]);
  });

  test('items that are not objects fail one by one', () => {
    expect(detailsOf(format, { ...valid, countries: [1, { id: 3, cities: [] }, 'x'] })).toEqual([
      { field: 'countries[0]', index: 0, value: 1, error: 'must be an object' },
      { field: 'countries[2]', index: 2, value: 'x', error: 'must be an object' },
    ]);
  });

  test('a container of the wrong type is one error, its contents are not checked', () => {
    expect(detailsOf(format, { ...valid, info: [{ temperature: 5 }], countries: { id: 1 } })).toEqual([
      { field: 'countries', value: { id: 1 }, error: 'must be an array' },
      { field: 'info', value: [{ temperature: 5 }], error: 'must be an object' },
    ]);
  });

  test('field names with "/" or "~" come back unescaped', () => {
    const odd = formatOf({ 'a/b': ['int'], 'c~d': ['object', { '0': ['int'] }] });
    expect(detailsOf(odd, { 'a/b': 'x', 'c~d': { '0': 'y' } })).toEqual([
      { field: 'a/b', value: 'x', error: 'must be an integer' },
      { field: 'c~d[0]', value: 'y', error: 'must be an integer' },
    ]);
  });

  test('a key like "0" in an object is a field, not an array index', () => {
    const keyed = formatOf({ list: ['array', { '0': ['object', { x: ['int'] }] }] });
    expect(detailsOf(keyed, { list: [{ '0': { x: 'y' } }] })).toEqual([
      { field: 'list[0][0][x]', index: 0, value: 'y', error: 'must be an integer' },
    ]);
  });

  test('inherited properties do not count as present', () => {
    const format = formatOf({ constructor: ['string'], toString: ['string', 'optional'] });
    expect(detailsOf(format, {})).toEqual([{ field: 'constructor', value: undefined, error: 'is required' }]);
  });
});

describe('conversions', () => {
  const cases: [string, unknown[], [unknown, unknown][]][] = [
    ['toInt', ['numeric', 'toInt'], [['12', 12], [12, 12], ['-34', -34], ['007', 7], ['-0', -0], [-0, -0]]],
    ['toNumber', ['decimal', 'toNumber'], [['-12.50', -12.5], ['6.5545', 6.5545], ['001.000', 1], [3, 3], [1.5, 1.5]]],
    [
      'toBoolean',
      ['binary', 'toBoolean'],
      [[true, true], ['true', true], [1, true], ['1', true], [false, false], ['false', false], [0, false], [-0, false], ['0', false]],
    ],
  ];

  describe.each(cases)('%s', (_name, definition, pairs) => {
    const format = formatOf({ v: definition });
    test.each(pairs)('%j becomes %j', (input, output) => {
      expect(format.check({ v: input, other: input })).toEqual({ ok: true, value: { v: output, other: input } });
    });
  });

  test('applies at any depth and leaves the caller\'s message untouched', () => {
    const format = formatOf({
      id: ['numeric', 'toInt'],
      lines: ['array', { qty: ['numeric', 'toInt'], meta: ['object', { gift: ['binary', 'toBoolean'] }], label: ['string'] }],
    });
    const data = deepFreeze({ id: '7', lines: [{ qty: '2', meta: { gift: '1' }, label: 'a' }, { qty: 3, meta: { gift: 0 }, label: 'b' }], note: { x: 1 } });
    const before = structuredClone(data);
    const result = format.check(data);
    expect(result).toEqual({
      ok: true,
      value: { id: 7, lines: [{ qty: 2, meta: { gift: true }, label: 'a' }, { qty: 3, meta: { gift: false }, label: 'b' }], note: { x: 1 } },
    });
    expect(data).toEqual(before);
  });

  test('an invalid message is not converted: details show what was sent', () => {
    const format = formatOf({ id: ['numeric', 'toInt'], price: ['decimal', 'toNumber', 'min', 1] });
    expect(detailsOf(format, { id: '12', price: '0.5' })).toEqual([
      { field: 'price', value: '0.5', error: 'must be greater than or equal to 1' },
    ]);
  });

  test('optional null, \'\' and absent values stay as they are', () => {
    const format = formatOf({ a: ['numeric', 'toInt', 'optional'], b: ['binary', 'toBoolean', 'optional'], c: ['decimal', 'toNumber', 'optional'] });
    expect(format.check({ a: null, b: '' })).toEqual({ ok: true, value: { a: null, b: '' } });
  });

  test('toInt refuses digit strings a JS number cannot hold exactly; plain numeric accepts them', () => {
    const big = '9007199254740993';
    expect(detailsOf(formatOf({ v: ['numeric', 'toInt'] }), { v: big })).toHaveLength(1);
    expect(formatOf({ v: ['numeric', 'toInt'] }).check({ v: '9007199254740991' })).toEqual({ ok: true, value: { v: 9007199254740991 } });
    expect(formatOf({ v: ['numeric'] }).check({ v: big }).ok).toBe(true);
  });

  test('toNumber refuses strings that would become Infinity', () => {
    expect(detailsOf(formatOf({ v: ['decimal', 'toNumber'] }), { v: '9'.repeat(400) })).toHaveLength(1);
  });

  test('without conversions the same object comes back, not a copy', () => {
    const data = { id: 1 };
    const result = formatOf({ id: ['int'] }).check(data);
    expect(result.ok && result.value).toBe(data);
  });

  test('a message field named "__proto__" is kept as a plain field when the copy is made', () => {
    const data: unknown = JSON.parse('{"id": "5", "__proto__": {"polluted": true}}');
    const result = formatOf({ id: ['numeric', 'toInt'] }).check(data);
    if (!result.ok) throw new Error('expected ok');
    const value = result.value as Record<string, unknown>;
    expect(value.id).toBe(5);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
