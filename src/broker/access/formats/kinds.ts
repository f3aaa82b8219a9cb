/**
 * The field types of the map language and the JSON Schema each one becomes
 * (docs/formats.md#types). Pure data: no ajv here.
 */

export type JsonSchema = { [keyword: string]: unknown };

export const FIELD_TYPES = [
  'int',
  'number',
  'numeric',
  'decimal',
  'string',
  'alpha',
  'alphanumeric',
  'unicodeAlpha',
  'unicodeAlphanumeric',
  'boolean',
  'binary',
  'array',
  'object',
  'email',
  'emailList',
  'notNull',
] as const;

export type FieldType = (typeof FIELD_TYPES)[number];

export const CONVERSIONS = ['toInt', 'toNumber', 'toBoolean'] as const;
export type Conversion = (typeof CONVERSIONS)[number];

/** What `min`/`max` bound for a type: its value, its length, or nothing (refused). */
export type BoundKind = 'value' | 'length' | 'items' | null;

export interface KindRule {
  /** the schema for the bare type, before bounds and `optional` */
  readonly schema: () => JsonSchema;
  readonly message: string;
  readonly bounds: BoundKind;
  /** the one conversion this type accepts, if any */
  readonly conversion: Conversion | null;
  /** numeric and decimal accept numbers and strings: bounds go on both branches */
  readonly numberString: boolean;
}

/** One address; `+` and multi-label domains allowed, a dot and a 2+ letter TLD required. */
export const EMAIL_SOURCE = "[A-Za-z0-9_.+'-]+@(?:[A-Za-z0-9-]+\\.)+[A-Za-z]{2,}";
const LIST_SEPARATOR = '[ \\t\\r\\n]*;[ \\t\\r\\n]*';

export const PATTERNS = {
  numeric: '^-?[0-9]+$',
  decimal: '^-?[0-9]+(?:\\.[0-9]+)?$',
  // ASCII only, as the reference: users rely on alpha to keep a field ASCII (docs/formats.md#types)
  alpha: '^[A-Za-z]+$',
  alphanumeric: '^[A-Za-z0-9]+$',
  // letters of any script, plus combining marks so decomposed accents (e + U+0301) pass
  unicodeAlpha: '^[\\p{L}\\p{M}]+$',
  unicodeAlphanumeric: '^[\\p{L}\\p{M}0-9]+$',
  email: `^${EMAIL_SOURCE}$`,
  emailList: `^${EMAIL_SOURCE}(?:${LIST_SEPARATOR}${EMAIL_SOURCE})*$`,
} as const;

function rule(
  schema: JsonSchema,
  message: string,
  bounds: BoundKind,
  conversion: Conversion | null = null,
  numberString = false,
): KindRule {
  return { schema: () => structuredClone(schema), message, bounds, conversion, numberString };
}

export const KINDS: { readonly [type in FieldType]: KindRule } = {
  int: rule({ type: 'integer' }, 'must be an integer', 'value'),
  number: rule({ type: 'number' }, 'must be a number', 'value'),
  numeric: rule({ type: ['integer', 'string'], pattern: PATTERNS.numeric }, 'must be a numeric value', 'value', 'toInt', true),
  decimal: rule({ type: ['number', 'string'], pattern: PATTERNS.decimal }, 'must be a decimal', 'value', 'toNumber', true),
  string: rule({ type: 'string' }, 'must be a string', 'length'),
  alpha: rule({ type: 'string', pattern: PATTERNS.alpha }, 'must contain only letters', 'length'),
  alphanumeric: rule({ type: 'string', pattern: PATTERNS.alphanumeric }, 'must contain only letters and digits', 'length'),
  unicodeAlpha: rule({ type: 'string', pattern: PATTERNS.unicodeAlpha }, 'must contain only letters', 'length'),
  unicodeAlphanumeric: rule({ type: 'string', pattern: PATTERNS.unicodeAlphanumeric }, 'must contain only letters and digits', 'length'),
  boolean: rule({ type: 'boolean' }, 'must be a boolean', null),
  binary: rule({ enum: [true, false, 'true', 'false', 0, 1, '0', '1'] }, 'must be a binary value', null, 'toBoolean'),
  array: rule({ type: 'array' }, 'must be an array', 'items'),
  object: rule({ type: 'object' }, 'must be an object', null),
  email: rule({ type: 'string', pattern: PATTERNS.email }, 'must be a valid email', 'length'),
  emailList: rule({ type: 'string', pattern: PATTERNS.emailList }, 'must be a valid email list', 'length'),
  notNull: rule({ not: { type: 'null' } }, 'must be defined', null),
};

export function isFieldType(value: unknown): value is FieldType {
  return typeof value === 'string' && Object.hasOwn(KINDS, value);
}

export function isConversion(value: unknown): value is Conversion {
  return typeof value === 'string' && (CONVERSIONS as readonly string[]).includes(value);
}

/** Keyword used for value bounds on numeric/decimal strings (docs/formats.md#whiskerrange). */
export const RANGE_KEYWORD = 'whiskerRange';

export interface RangeSchema {
  minimum?: number;
  maximum?: number;
}

/** Strings converted with toInt must stay exact as a JS number. */
export const SAFE_INTEGER_RANGE: Required<RangeSchema> = {
  minimum: Number.MIN_SAFE_INTEGER,
  maximum: Number.MAX_SAFE_INTEGER,
};

/** Strings converted with toNumber must not become Infinity. */
export const FINITE_RANGE: Required<RangeSchema> = { minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE };
