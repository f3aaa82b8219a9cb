/**
 * ajv errors -> one `{ field, index, value, error }` per failing field (docs/formats.md#errors).
 * Runs only for messages that failed, so it may walk and allocate freely.
 */
import type { ErrorObject } from 'ajv';
import { RANGE_KEYWORD } from './kinds.js';
import type { MessageNode } from './schema.js';

/**
 * One failing field. `field` is a path like `countries[0][cities][2][id]` ('' for the root);
 * `index` is the position in the innermost array on that path, absent outside arrays;
 * `value` is what the message held there, absent when the field was missing.
 */
export interface FieldError {
  field: string;
  index?: number;
  value: unknown;
  error: string;
}

const REQUIRED_MESSAGE = 'is required';

/** ajv errors that only repeat what a nested error already says */
const WRAPPER_KEYWORDS: ReadonlySet<string> = new Set(['if', 'anyOf', 'oneOf', 'allOf', '$ref', '$dynamicRef']);

function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The property an error is about when ajv reports it on the parent object. */
function childOf(error: ErrorObject): { name: string; message: string } | null {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
    case 'dependentRequired':
      return { name: String(params.missingProperty), message: REQUIRED_MESSAGE };
    case 'additionalProperties':
      return { name: String(params.additionalProperty), message: 'is not allowed' };
    case 'unevaluatedProperties':
      return { name: String(params.unevaluatedProperty), message: 'is not allowed' };
    case 'propertyNames':
      return { name: String(params.propertyName), message: 'has a name that is not allowed' };
    default:
      return null;
  }
}

interface Located {
  field: string;
  index: number | undefined;
  value: unknown;
  node: MessageNode | undefined;
}

/** Follows the path through the data itself, so array positions and keys like "0" never mix. */
function locate(data: unknown, segments: readonly string[], messages: MessageNode | null): Located {
  let value = data;
  let node: MessageNode | undefined = messages ?? undefined;
  let field = '';
  let index: number | undefined;
  for (const segment of segments) {
    if (Array.isArray(value)) {
      const position = Number(segment);
      index = position;
      value = value[position];
      node = node?.items;
      field += `[${segment}]`;
    } else {
      const container = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
      value = container && Object.hasOwn(container, segment) ? container[segment] : undefined;
      node = node?.properties?.get(segment);
      field += field === '' ? segment : `[${segment}]`;
    }
  }
  return { field, index, value, node };
}

/** Marks a path and all its ancestors: '/a/0/b' -> '/a/0/b', '/a/0', '/a', ''. */
function cover(covered: Set<string>, path: string): void {
  let end = path.length;
  while (!covered.has(path.slice(0, end))) {
    covered.add(path.slice(0, end));
    if (end === 0) return;
    end = path.lastIndexOf('/', end - 1);
  }
}

/**
 * `messages` is the compiled map's tree (one fixed message per field) or null for raw schemas
 * (ajv's own messages, joined when a field breaks several keywords).
 */
export function fieldErrors(errors: readonly ErrorObject[], data: unknown, messages: MessageNode | null): FieldError[] {
  const byField = new Map<string, FieldError>();
  // ajv reports a wrapper (if, anyOf...) after the errors inside it: skip it when those exist
  const covered = new Set<string>();
  for (const error of errors) {
    const path = error.instancePath;
    if (WRAPPER_KEYWORDS.has(error.keyword)) {
      if (covered.has(path)) continue;
    } else {
      cover(covered, path);
    }
    const segments = pointerSegments(error.instancePath);
    const child = childOf(error);
    if (child) segments.push(child.name);
    const place = locate(data, segments, messages);
    const text = child?.message ?? (messages && place.node ? failedPart(place.node, error.keyword) : undefined) ?? error.message ?? 'is invalid';
    const known = byField.get(place.field);
    if (known) {
      if (!messages && !known.error.split('; ').includes(text)) known.error += `; ${text}`;
      continue;
    }
    const { field, index, value } = place;
    byField.set(field, index === undefined ? { field, value, error: text } : { field, index, value, error: text });
  }
  return [...byField.values()];
}

const LOWER = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems']);
const UPPER = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems']);

/** the constraint of a map field that failed: its type, its lower or upper bound (issue 29) */
function failedPart(node: MessageNode, keyword: string): string {
  if (LOWER.has(keyword) && node.min) return node.min;
  if (UPPER.has(keyword) && node.max) return node.max;
  if (keyword === RANGE_KEYWORD && (node.min || node.max)) return [node.min, node.max].filter(Boolean).join(' and ');
  return node.type ?? node.message;
}
