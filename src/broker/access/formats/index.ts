/**
 * Channel formats (SPEC §6, docs/formats.md): a channel's `map` or raw `schema`, compiled once
 * per config load into an ajv validator. `check()` is the per-message cost: one ajv call, plus
 * a copy-on-write pass only when the map has conversions.
 */
import type { AnySchema, ValidateFunction } from 'ajv';
import { ConfigError } from '../../../config/load.js';
import { applyObject, planConversions } from './convert.js';
import { fieldErrors } from './details.js';
import type { JsonSchema } from './kinds.js';
import { isPlainObject, parseMap } from './parse.js';
import { compileMapSchema, type MessageNode } from './schema.js';
import { compileOnce, mapCompiler, rawCompiler } from './validators.js';

import type { FieldError } from './details.js';

export type { FieldError };

export type FormatResult = { ok: true; value: unknown } | { ok: false; details: FieldError[] };

export interface ChannelFormat {
  check(data: unknown): FormatResult;
}

const ROOT_MESSAGE = 'must be an object';

class CompiledFormat implements ChannelFormat {
  readonly #validate: ValidateFunction;
  readonly #messages: MessageNode | null;
  readonly #conversions: ReturnType<typeof planConversions>;

  constructor(validate: ValidateFunction, messages: MessageNode | null, conversions: ReturnType<typeof planConversions>) {
    this.#validate = validate;
    this.#messages = messages;
    this.#conversions = conversions;
  }

  check(data: unknown): FormatResult {
    // the reference let 0, false and '' through; a payload is always an object (SPEC §6)
    if (!isPlainObject(data)) return { ok: false, details: [{ field: '', value: data, error: ROOT_MESSAGE }] };
    const validate = this.#validate;
    if (validate(data)) {
      return { ok: true, value: this.#conversions ? applyObject(this.#conversions, data) : data };
    }
    return { ok: false, details: fieldErrors(validate.errors ?? [], data, this.#messages) };
  }
}

function channelKey(queue: string): string {
  return `channels.${queue}`;
}

/**
 * The JSON Schema a map compiles to: what a team moving to `schema` can start from
 * (docs/formats.md#from-map-to-json-schema). Throws ConfigError like compileChannelFormat.
 */
export function mapToJsonSchema(queue: string, map: unknown): JsonSchema {
  return compileMapSchema(parseMap(map, `${channelKey(queue)}.map`)).schema;
}

function compileMap(queue: string, map: unknown): ChannelFormat {
  const fields = parseMap(map, `${channelKey(queue)}.map`);
  const { schema, messages } = compileMapSchema(fields);
  let validate: ValidateFunction;
  try {
    validate = compileOnce(mapCompiler(), schema);
  } catch (error) {
    // a parsed map always compiles; this would be a bug in schema.ts, still reported as config
    throw new ConfigError(`${channelKey(queue)}.map`, `cannot compile: ${(error as Error).message}`);
  }
  return new CompiledFormat(validate, messages, planConversions(fields));
}

function schemaErrorKey(base: string, instancePath: string): string {
  const path = instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  return [base, ...path].join('.');
}

function compileRaw(queue: string, schema: unknown): ChannelFormat {
  const key = `${channelKey(queue)}.schema`;
  if (typeof schema !== 'boolean' && !isPlainObject(schema)) {
    throw new ConfigError(key, 'must be a JSON Schema (an object or a boolean)');
  }
  const ajv = rawCompiler();
  let valid: unknown;
  try {
    valid = ajv.validateSchema(schema as AnySchema);
  } catch (error) {
    // an unknown $schema, e.g. draft-07: only draft 2020-12 is loaded
    throw new ConfigError(`${key}.$schema`, `unsupported: ${(error as Error).message} (use draft 2020-12)`);
  }
  if (valid !== true) {
    const first = ajv.errors?.[0];
    const detail = first?.keyword === 'enum'
      ? `must be one of ${(first.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
      : (first?.message ?? 'is not a valid draft 2020-12 JSON Schema');
    throw new ConfigError(first ? schemaErrorKey(key, first.instancePath) : key, `invalid JSON Schema: ${detail}`);
  }
  let validate: ValidateFunction;
  try {
    validate = compileOnce(ajv, schema as AnySchema);
  } catch (error) {
    throw new ConfigError(key, `invalid JSON Schema: ${(error as Error).message}`);
  }
  if ((validate as { $async?: boolean }).$async) throw new ConfigError(key, '"$async" schemas are not supported');
  return new CompiledFormat(validate, null, null);
}

/** queue is 'endpoint/version'; settings is the channel's config entry. Returns null when neither map nor schema is set. Throws ConfigError naming the channel and the field for a bad map/schema. */
export function compileChannelFormat(
  queue: string,
  settings: { map?: Readonly<Record<string, unknown>>; schema?: Readonly<Record<string, unknown>> | boolean },
): ChannelFormat | null {
  const { map, schema } = settings;
  if (map !== undefined && schema !== undefined) {
    throw new ConfigError(channelKey(queue), 'set either "map" or "schema", not both');
  }
  if (map !== undefined) return compileMap(queue, map);
  if (schema !== undefined) return compileRaw(queue, schema);
  return null;
}
