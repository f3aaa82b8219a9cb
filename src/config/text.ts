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
  const quotes = unquoted(text, errors);
  const hint = quotes.length > 0 ? `; keys and strings need double quotes: write ${quotes.join(', ')}` : '';
  throw new ConfigError('', `${where} is not valid JSON: ${shown.join('; ')}${errors.length > 10 ? `; and ${errors.length - 10} more` : ''}${hint}`);
}

const BARE_KEY = /^[A-Za-z_$][\w$-]*(?=\s*:)/;
const SINGLE_QUOTED = /^'([^'\n]*)'/;

/**
 * A JavaScript object pasted as the config (Kitten-MQ's README writes one): its bare keys and
 * single-quoted strings, as they must be written, with where they are (at most 5).
 */
function unquoted(text: string, errors: readonly ParseError[]): string[] {
  const found: string[] = [];
  for (const error of errors) {
    if (printParseErrorCode(error.error) !== 'InvalidSymbol') continue;
    const rest = text.slice(error.offset, error.offset + 300);
    const word = BARE_KEY.exec(rest)?.[0] ?? SINGLE_QUOTED.exec(rest)?.[1];
    if (word !== undefined) found.push(`${JSON.stringify(word)} at ${position(text, error.offset)}`);
    if (found.length === 5) break;
  }
  return found;
}

