// Every map type: the values it accepts and the ones it refuses (docs/formats.md#types).
import { describe, test, expect } from 'vitest';
import { compileChannelFormat, type ChannelFormat } from '../../../src/broker/access/formats/index.js';

function formatOf(definition: readonly unknown[]): ChannelFormat {
  const format = compileChannelFormat('shop/v1', { map: { v: definition } });
  if (!format) throw new Error('expected a format');
  return format;
}

function show(value: unknown): string {
  if (Object.is(value, -0)) return '-0';
  if (typeof value === 'number' || value === undefined) return String(value);
  return JSON.stringify(value);
}

interface Row {
  type: string;
  error: string;
  accepts: unknown[];
  rejects: unknown[];
}

const NOT_SCALARS = [null, [], {}];

const TABLE: Row[] = [
  {
    type: 'int',
    error: 'must be an integer',
    accepts: [0, -0, 13, -213, 13223455, Number.MAX_SAFE_INTEGER, 5.0],
    rejects: [1.23, -0.5, '34', '-34', '', ' 12', '1.000', NaN, Infinity, -Infinity, true, false, ...NOT_SCALARS],
  },
  {
    type: 'number',
    error: 'must be a number',
    accepts: [0, -0, 13, -213, 1.23, -2441.763, 1e300],
    rejects: ['1.3456', '34', '', ' 12', NaN, Infinity, -Infinity, true, false, ...NOT_SCALARS],
  },
  {
    type: 'numeric',
    error: 'must be a numeric value',
    accepts: [0, -0, 13, -213, '0', '-0', '34', '-34', '007', '1234567890', '123456789012345678901234567890'],
    rejects: [
      1.23, -1.23, '1.000', '-1.000', ' 12', '12 ', ' 12 ', '1 2', '', '-', '+12', '3,32', '1e3', '0x1A', 'abc',
      NaN, Infinity, true, false, ...NOT_SCALARS,
    ],
  },
  {
    type: 'decimal',
    error: 'must be a decimal',
    accepts: [0, -0, 13, -213, 1.23, 1e21, '-12.50', '1.3456', '1.000', '001.000', '34', '-34', '20783021.02238702710'],
    rejects: [
      '3,32', ' 1.5', '1.5 ', '- 1.3456', '1 .  3456', '', '.5', '5.', '3.443.000', '1e3', '+1.5', 'abc',
      NaN, Infinity, -Infinity, true, false, ...NOT_SCALARS,
    ],
  },
  {
    type: 'string',
    error: 'must be a string',
    accepts: ['', ' ', 'abc', '3,32', '- 1.3456', 'éàè#@&é"\'((§§', '😀'],
    rejects: [0, -0, 13, NaN, true, false, ...NOT_SCALARS],
  },
  {
    // ASCII only, as the reference (issue #16 fault 6)
    type: 'alpha',
    error: 'must contain only letters',
    accepts: ['abc', 'ABCxyz', 'Zz'],
    rejects: ['', 'éàè', 'Ωμέγα', 'Ça', 'straße', 'e\u0301', 'a1', '2', 'a b', 'a-b', 'abc ', "l'été", '😀', 1.23, 0, true, ...NOT_SCALARS],
  },
  {
    type: 'alphanumeric',
    error: 'must contain only letters and digits',
    accepts: ['abc', '123', 'a1b2', '1234azkjazlskjlmsa567890'],
    rejects: ['', 'Éa1', 'Ωμέγα1', '١٢٣', 'a b', 'a_b', '#', '1.2', '-1', 12, true, ...NOT_SCALARS],
  },
  {
    type: 'unicodeAlpha',
    error: 'must contain only letters',
    accepts: ['abc', 'ABCxyz', 'éàè', 'Ça', 'Zoë', 'straße', 'Ελληνικά', 'e\u0301t\u00e9'],
    rejects: ['', 'a1', '2', 'a b', 'a-b', 'abc ', "l'été", '😀', 1.23, 0, true, ...NOT_SCALARS],
  },
  {
    type: 'unicodeAlphanumeric',
    error: 'must contain only letters and digits',
    accepts: ['abc', '123', 'a1b2', 'Éa1', 'Ωμέγα1'],
    rejects: ['', 'a b', 'a_b', '#', '1.2', '-1', 12, true, ...NOT_SCALARS],
  },
  {
    type: 'boolean',
    error: 'must be a boolean',
    accepts: [true, false],
    rejects: ['true', 'false', 0, -0, 1, '0', '1', '', NaN, ...NOT_SCALARS],
  },
  {
    type: 'binary',
    error: 'must be a binary value',
    accepts: [true, false, 'true', 'false', 0, -0, 1, '0', '1'],
    rejects: [2, -1, 10, '10', '01', '-1', 'TRUE', 'yes', '', ' 1', 1.5, '1.000', NaN, ...NOT_SCALARS],
  },
  {
    type: 'array',
    error: 'must be an array',
    accepts: [[], [1, 'a'], [[]], [{}]],
    rejects: ['[]', '', 0, true, null, {}, { length: 0 }],
  },
  {
    type: 'object',
    error: 'must be an object',
    accepts: [{}, { a: 1 }, { a: { b: [] } }],
    rejects: ['{}', '', 0, true, null, [], [{}]],
  },
  {
    type: 'email',
    error: 'must be a valid email',
    accepts: [
      'foo@bar.fr', 'foo@bar.frazerty', 'foo86@bar3.fr', 'fOo@bAr.Fr', 'foo.bar@bar.fr', 'foo+tag@mail.example.com',
      'foo-bar@my-host.co.uk', "o'brien@example.ie",
    ],
    rejects: [
      'foo@bar', 'foobar.fr', 'foo@bar.f', 'foo@bar.', 'foo.bar', 'foo@@bar.fr', 'foo@bar@hello.fr', 'f.o.o.bar.fr',
      'foobar', '', '.fr', '@.fr', 'foo@bar..fr', 'foo@.bar.fr', ' foo@bar.fr', 'foo@bar.fr ', 'foo bar@baz.fr',
      'foo@bar.fr;bar@foo.fr', 'foo@bar.fr1', 12, true, ...NOT_SCALARS,
    ],
  },
  {
    type: 'emailList',
    error: 'must be a valid email list',
    accepts: [
      'foo@bar.fr', 'foo@bar.fr;bar@foo.fr', 'foo@bar.fr       ;bar@foo.fr', 'foo@bar.fr;       bar@foo.fr',
      'foo@bar.fr ; bar@foo.fr', 'foo@bar.fr;\nbar@foo.fr', 'foo@bar.fr\n;bar@foo.fr',
      'foo@bar.fr ; bar@foo.fr; balle@foo.fr  ; test@moi.fr\n; abc@def.com',
    ],
    rejects: [
      'foo@bar.fr;', 'foo@bar.fr; ', 'foo@bar.fr;bar@foo.fr;', ';', ';foo@bar.fr', 'foo@bar.fr;;bar@foo.fr',
      'foo@bar.frbar@foo.fr', 'foo@bar.fr;qsd', 'foo@bar.fr,bar@foo.fr', 'foo@bar.fr bar@foo.fr', 'foo@bar', '',
      12, true, ...NOT_SCALARS,
    ],
  },
  {
    type: 'notNull',
    error: 'must be defined',
    accepts: ['', 0, -0, false, 'abc', [], ['a'], {}, { label: 'a' }, NaN],
    rejects: [null],
  },
];

describe.each(TABLE)('$type', ({ type, error, accepts, rejects }) => {
  const format = formatOf([type]);

  for (const value of accepts) {
    test(`accepts ${show(value)}`, () => {
      const result = format.check({ v: value });
      expect(result).toEqual({ ok: true, value: { v: value } });
    });
  }

  for (const value of rejects) {
    test(`rejects ${show(value)}`, () => {
      const result = format.check({ v: value });
      expect(result).toEqual({ ok: false, details: [{ field: 'v', value, error }] });
    });
  }

  test('rejects a missing field: every listed field is required', () => {
    expect(format.check({})).toEqual({ ok: false, details: [{ field: 'v', value: undefined, error: 'is required' }] });
  });

  test('allows fields the map does not list', () => {
    const data = { v: accepts[0], extra: 'kept' };
    expect(format.check(data)).toEqual({ ok: true, value: data });
  });
});

describe('the root payload', () => {
  const format = formatOf(['string', 'optional']);
  const notObjects: unknown[] = [0, false, '', null, undefined, 'x', 42, true, [], [{ v: 'a' }], new Date(0), new Map()];

  for (const data of notObjects) {
    test(`refuses ${show(data)} (the reference let 0, false and '' through)`, () => {
      expect(format.check(data)).toEqual({ ok: false, details: [{ field: '', value: data, error: 'must be an object' }] });
    });
  }

  test('accepts an object with a null prototype', () => {
    const data = Object.assign(Object.create(null) as Record<string, unknown>, { v: 'a' });
    expect(format.check(data).ok).toBe(true);
  });

  test('an empty map accepts any object and nothing else', () => {
    const empty = compileChannelFormat('shop/v1', { map: {} });
    expect(empty?.check({ anything: [1, 2] }).ok).toBe(true);
    expect(empty?.check([]).ok).toBe(false);
  });
});

test('neither map nor schema: no format at all', () => {
  expect(compileChannelFormat('shop/v1', {})).toBeNull();
});
