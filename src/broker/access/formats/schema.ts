/**
 * Turns a parsed map into the JSON Schema (draft 2020-12) ajv checks, and into the tree of
 * per-field messages used for `details` (docs/formats.md#from-map-to-json-schema).
 */
import {
  FINITE_RANGE,
  KINDS,
  RANGE_KEYWORD,
  SAFE_INTEGER_RANGE,
  type JsonSchema,
  type RangeSchema,
} from './kinds.js';
import type { FieldSpec } from './parse.js';

/** One message per map field; `properties` for object fields, `items` for arrays of objects. */
export interface MessageNode {
  readonly message: string;
  /** the part of `message` for each failed constraint: the type, the lower and the upper bound */
  readonly type?: string;
  readonly min?: string;
  readonly max?: string;
  readonly properties?: ReadonlyMap<string, MessageNode>;
  readonly items?: MessageNode;
}

export interface CompiledMap {
  readonly schema: JsonSchema;
  readonly messages: MessageNode;
}

const OBJECT_MESSAGE = KINDS.object.message;

export function compileMapSchema(fields: readonly FieldSpec[]): CompiledMap {
  return objectOf(fields, OBJECT_MESSAGE);
}

function objectOf(fields: readonly FieldSpec[], message: string): CompiledMap {
  const entries = fields.map((field) => [field.name, fieldSchema(field)] as const);
  const required = fields.filter((field) => !field.optional).map((field) => field.name);
  // fromEntries defines own properties, so a field named "__proto__" stays a field
  const schema: JsonSchema = {
    type: 'object',
    properties: Object.fromEntries(entries.map(([name, compiled]) => [name, compiled.schema])),
  };
  if (required.length > 0) schema.required = required;
  const properties = new Map(entries.map(([name, compiled]) => [name, compiled.messages]));
  return { schema, messages: { message, properties } };
}

function fieldSchema(field: FieldSpec): CompiledMap {
  const kind = KINDS[field.type];
  const bounds = boundTexts(field);
  const message = [kind.message, bounds.min, bounds.max].filter(Boolean).join(' and ');
  let schema = kind.schema();
  let messages: MessageNode = { message, type: kind.message, ...bounds };
  if (field.fields && field.type === 'object') {
    const nested = objectOf(field.fields, message);
    schema = nested.schema;
    messages = nested.messages;
  } else if (field.fields && field.type === 'array') {
    const item = objectOf(field.fields, OBJECT_MESSAGE);
    schema.items = item.schema;
    messages = { message, items: item.messages };
  }
  addBounds(schema, field);
  // optional: absent is handled by `required`; null and '' skip the type check entirely
  if (field.optional) schema = { if: { enum: [null, ''] }, else: schema };
  return { schema, messages };
}

function addBounds(schema: JsonSchema, field: FieldSpec): void {
  const kind = KINDS[field.type];
  const { min, max } = field;
  if (kind.bounds === 'length') {
    if (min !== undefined) schema.minLength = min;
    if (max !== undefined) schema.maxLength = max;
  } else if (kind.bounds === 'items') {
    if (min !== undefined) schema.minItems = min;
    if (max !== undefined) schema.maxItems = max;
  } else if (kind.bounds === 'value') {
    if (min !== undefined) schema.minimum = min;
    if (max !== undefined) schema.maximum = max;
  }
  if (kind.numberString) {
    const range = stringRange(field);
    if (range) schema[RANGE_KEYWORD] = range;
  }
}

/** Value bounds for the string branch of numeric/decimal, plus exactness limits for conversions. */
function stringRange(field: FieldSpec): RangeSchema | undefined {
  const limit = field.conversion === 'toInt' ? SAFE_INTEGER_RANGE : field.conversion === 'toNumber' ? FINITE_RANGE : undefined;
  const range: RangeSchema = {};
  const minimum = Math.max(field.min ?? -Infinity, limit?.minimum ?? -Infinity);
  const maximum = Math.min(field.max ?? Infinity, limit?.maximum ?? Infinity);
  if (Number.isFinite(minimum)) range.minimum = minimum;
  if (Number.isFinite(maximum)) range.maximum = maximum;
  return range.minimum === undefined && range.maximum === undefined ? undefined : range;
}

function boundTexts(field: FieldSpec): { min?: string; max?: string } {
  const kind = KINDS[field.type].bounds;
  const noun = kind === 'value' ? 'must be' : kind === 'items' ? 'must have' : 'the length must be';
  const texts: { min?: string; max?: string } = {};
  if (kind === 'items') {
    if (field.min !== undefined) texts.min = `${noun} at least ${field.min} items`;
    if (field.max !== undefined) texts.max = `${noun} at most ${field.max} items`;
    return texts;
  }
  if (field.min !== undefined) texts.min = `${noun} greater than or equal to ${field.min}`;
  if (field.max !== undefined) texts.max = `${noun} less than or equal to ${field.max}`;
  return texts;
}
