import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import type { Problem } from './problems.js';

const line = (key: string, message: string): string => (key ? `config key "${key}": ${message}` : `config: ${message}`);

/**
 * A config that cannot be used: every problem found, each naming its key (docs/configuration.md).
 * `key` is the first problem's.
 */
export class ConfigError extends Error {
  readonly key: string;
  readonly problems: readonly Problem[];
  constructor(key: string, message: string, more: readonly Problem[] = []) {
    const problems = [{ key, message }, ...more];
    super(problems.length === 1 ? line(key, message) : `config: ${problems.length} problems:\n${problems.map((p) => `  ${line(p.key, p.message)}`).join('\n')}`);
    this.name = 'ConfigError';
    this.key = key;
    this.problems = problems;
  }

  static of(problems: readonly Problem[]): ConfigError {
    const [first, ...more] = problems;
    return new ConfigError(first?.key ?? '', first?.message ?? 'invalid', more);
  }
}

/**
 * Runs `check`, adding the problems of a ConfigError it throws to `problems` instead of
 * stopping there: a file is fixed in one go, not one problem per run (issue 29 item 6).
 */
export function gatherProblems(problems: Problem[], check: () => void): void {
  try {
    check();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
}

/** `{ line, column }` (both from 1) of an offset in `text` */
function position(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length} column ${before[before.length - 1]!.length + 1}`;
}

/**
 * The file's text as a value: JSON with `//` and `/* *\/` comments and trailing commas (JSONC,
 * as Kitten's README writes its config; Microsoft's parser, the one VS Code uses). Every syntax
 * error with its line and column.
 */
export function parseConfigText(text: string, where: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
  if (errors.length === 0) return value;
  const shown = errors.slice(0, 10).map((e) => `${printParseErrorCode(e.error)} at ${position(text, e.offset)}`);
  throw new ConfigError('', `${where} is not valid JSON: ${shown.join('; ')}${errors.length > 10 ? `; and ${errors.length - 10} more` : ''}`);
}

