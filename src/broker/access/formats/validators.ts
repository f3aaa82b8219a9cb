/**
 * The two ajv instances: one for compiled maps (fully strict: we wrote the schema), one for
 * raw schemas from config (strict about keywords and formats, lenient about type hints).
 * Created on first use and shared; each schema is removed from ajv's cache once compiled so
 * reloads do not pile up entries and a reused `$id` does not collide (docs/formats.md#schema).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { AnySchema, ValidateFunction } from 'ajv';
import { PATTERNS, RANGE_KEYWORD, type RangeSchema } from './kinds.js';

function addWhiskerKeywords(ajv: Ajv2020): Ajv2020 {
  ajv.addKeyword({
    keyword: RANGE_KEYWORD,
    type: 'string',
    schemaType: 'object',
    metaSchema: {
      type: 'object',
      properties: { minimum: { type: 'number' }, maximum: { type: 'number' } },
      additionalProperties: false,
    },
    // a string that is not a number is the pattern's failure, not the range's
    validate: (range: RangeSchema, data: string): boolean => {
      const value = Number(data);
      if (Number.isNaN(value) || data.trim() === '') return true;
      if (range.minimum !== undefined && !(value >= range.minimum)) return false;
      if (range.maximum !== undefined && !(value <= range.maximum)) return false;
      return true;
    },
  });
  return ajv;
}

let mapAjv: Ajv2020 | undefined;
let rawAjv: Ajv2020 | undefined;

export function mapCompiler(): Ajv2020 {
  mapAjv ??= addWhiskerKeywords(
    new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, ownProperties: true }),
  );
  return mapAjv;
}

export function rawCompiler(): Ajv2020 {
  if (!rawAjv) {
    rawAjv = addWhiskerKeywords(
      new Ajv2020({
        allErrors: true,
        strict: true,
        strictTypes: false,
        strictTuples: false,
        allowUnionTypes: true,
        ownProperties: true,
      }),
    );
    // no ajv-formats: only `email` is known; any other format is a config error
    rawAjv.addFormat('email', new RegExp(PATTERNS.email));
  }
  return rawAjv;
}

/** Compiles and forgets: the returned function keeps everything it needs. */
export function compileOnce(ajv: Ajv2020, schema: AnySchema): ValidateFunction {
  try {
    return ajv.compile(schema);
  } finally {
    if (typeof schema === 'object') ajv.removeSchema(schema);
  }
}
