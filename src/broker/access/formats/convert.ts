/**
 * Conversions (toInt, toNumber, toBoolean) run after a message passed validation, never
 * before: the consumer gets converted values only from a valid message. They copy on write
 * along the converted paths and never touch the caller's object (docs/formats.md#conversions).
 */
import type { Conversion } from './kinds.js';
import type { FieldSpec } from './parse.js';

type Convert = (value: unknown) => unknown;

interface ObjectPlan {
  readonly kind: 'object';
  readonly fields: readonly (readonly [string, Plan])[];
}
type Plan =
  | { readonly kind: 'leaf'; readonly convert: Convert }
  | ObjectPlan
  | { readonly kind: 'array'; readonly item: ObjectPlan };

const CONVERTERS: { readonly [name in Conversion]: Convert } = {
  // the value is valid here: an integer, or a string of digits within the safe range
  toInt: (value) => (typeof value === 'string' ? Number(value) : value),
  toNumber: (value) => (typeof value === 'string' ? Number(value) : value),
  toBoolean: (value) => value === true || value === 'true' || value === 1 || value === '1',
};

/** The conversions of a map, or null when it has none (the common, zero-copy case). */
export function planConversions(fields: readonly FieldSpec[]): ObjectPlan | null {
  const planned: (readonly [string, Plan])[] = [];
  for (const field of fields) {
    if (field.conversion) {
      planned.push([field.name, { kind: 'leaf', convert: CONVERTERS[field.conversion] }]);
    } else if (field.fields) {
      const nested = planConversions(field.fields);
      if (nested) planned.push([field.name, field.type === 'array' ? { kind: 'array', item: nested } : nested]);
    }
  }
  return planned.length > 0 ? { kind: 'object', fields: planned } : null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function apply(plan: Plan, value: unknown): unknown {
  // optional fields may hold null or '' (or be absent): nothing to convert
  if (value === null || value === undefined || value === '') return value;
  switch (plan.kind) {
    case 'leaf':
      return plan.convert(value);
    case 'object':
      return isObject(value) ? applyObject(plan, value) : value;
    case 'array':
      return Array.isArray(value) ? value.map((item: unknown) => apply(plan.item, item)) : value;
    default: {
      const never: never = plan;
      return never;
    }
  }
}

export function applyObject(plan: ObjectPlan, source: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...source };
  for (const [name, child] of plan.fields) {
    if (!Object.hasOwn(source, name)) continue;
    const before = source[name];
    const after = apply(child, before);
    // parse.ts refuses a field named __proto__, so assignment cannot reach the prototype
    if (after !== before) copy[name] = after;
  }
  return copy;
}
