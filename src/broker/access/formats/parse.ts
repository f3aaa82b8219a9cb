/**
 * Reads a map (`{ field: [type, ...modifiers] }`) into a typed tree, or throws a ConfigError
 * whose key is the field's config path (docs/formats.md#modifiers).
 */
import { ConfigError } from '../../../config/load.js';
import { nearest } from '../../../config/problems.js';
import { FIELD_TYPES, KINDS, isConversion, isFieldType, type Conversion, type FieldType } from './kinds.js';

export interface FieldSpec {
  readonly name: string;
  readonly type: FieldType;
  readonly optional: boolean;
  readonly min: number | undefined;
  readonly max: number | undefined;
  readonly conversion: Conversion | undefined;
  /** the nested map of an `object` field, or of each item of an `array` field */
  readonly fields: readonly FieldSpec[] | undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** `key` is where the map sits in the config, e.g. `channels.shop/v1.map`. */
export function parseMap(map: unknown, key: string): FieldSpec[] {
  if (!isPlainObject(map)) {
    throw new ConfigError(key, `a map must be an object of fields like { "id": ["int"] }, got ${show(map)}`);
  }
  return Object.entries(map).map(([name, definition]) => {
    // ajv skips a property named __proto__ entirely, so it could never be checked
    if (name === '__proto__') throw new ConfigError(`${key}.${name}`, 'a field cannot be named "__proto__"');
    return parseField(name, definition, `${key}.${name}`);
  });
}

const BOUND_TEXT = /^(min|max)\s+(-?[0-9]+(?:\.[0-9]+)?)$/;

interface Draft {
  optional: boolean;
  min: number | undefined;
  max: number | undefined;
  conversion: Conversion | undefined;
  fields: FieldSpec[] | undefined;
}

function parseField(name: string, definition: unknown, key: string): FieldSpec {
  if (!Array.isArray(definition)) {
    throw new ConfigError(key, `a field must be an array like ["string", "optional"], got ${show(definition)}`);
  }
  const elements: readonly unknown[] = definition;
  const type = elements[0];
  if (!isFieldType(type)) {
    const near = typeof type === 'string' ? nearest(type, FIELD_TYPES) : null;
    throw new ConfigError(key, `unknown type ${show(type)}; ${near ? `did you mean "${near}"? ` : ''}the first element must be one of ${FIELD_TYPES.join(', ')}`);
  }
  const draft: Draft = { optional: false, min: undefined, max: undefined, conversion: undefined, fields: undefined };
  for (let i = 1; i < elements.length; i++) {
    const element = elements[i];
    if (isPlainObject(element)) {
      if (type !== 'object' && type !== 'array') {
        throw new ConfigError(key, `a nested map is allowed only in "object" and "array" fields, not in "${type}"`);
      }
      if (i !== elements.length - 1) throw new ConfigError(key, 'the nested map must be the last element of the field');
      draft.fields = parseMap(element, key);
      continue;
    }
    if (typeof element !== 'string') throw new ConfigError(key, `unexpected element ${show(element)} at position ${i}`);
    if (element === 'min' || element === 'max') {
      const bound = elements[i + 1];
      if (typeof bound !== 'number' || !Number.isFinite(bound)) {
        throw new ConfigError(key, `"${element}" must be followed by a number, got ${show(bound)}`);
      }
      i++;
      setBound(draft, element, bound, type, key);
      continue;
    }
    const written = BOUND_TEXT.exec(element);
    if (written) {
      setBound(draft, written[1] as 'min' | 'max', Number(written[2]), type, key);
      continue;
    }
    if (element === 'optional') {
      if (draft.optional) throw new ConfigError(key, 'duplicate modifier "optional"');
      if (type === 'notNull') throw new ConfigError(key, '"notNull" cannot be "optional"');
      draft.optional = true;
      continue;
    }
    if (isConversion(element)) {
      const allowed = KINDS[type].conversion;
      if (element !== allowed) {
        const owner = element === 'toInt' ? 'numeric' : element === 'toNumber' ? 'decimal' : 'binary';
        throw new ConfigError(key, `"${element}" applies only to "${owner}" fields, not to "${type}"`);
      }
      if (draft.conversion) throw new ConfigError(key, `duplicate modifier "${element}"`);
      draft.conversion = element;
      continue;
    }
    throw new ConfigError(
      key,
      `unknown modifier ${show(element)}; modifiers are "min", n, "max", n, "optional", "toInt", "toNumber", "toBoolean"`,
    );
  }
  if (draft.min !== undefined && draft.max !== undefined && draft.min > draft.max) {
    throw new ConfigError(key, `"min" ${draft.min} is greater than "max" ${draft.max}`);
  }
  return { name, type, ...draft };
}

function setBound(draft: Draft, which: 'min' | 'max', bound: number, type: FieldType, key: string): void {
  const kind = KINDS[type].bounds;
  if (kind === null) throw new ConfigError(key, `"${which}" does not apply to "${type}" fields`);
  if (kind !== 'value' && (!Number.isInteger(bound) || bound < 0)) {
    throw new ConfigError(key, `"${which}" is a length for "${type}" fields and must be a whole number >= 0, got ${bound}`);
  }
  if (draft[which] !== undefined) throw new ConfigError(key, `duplicate modifier "${which}"`);
  draft[which] = bound;
}
