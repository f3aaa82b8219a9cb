import { nearest } from '../config/problems.js';

/**
 * What the command line says before parseArgs reads it: Kitten-MQ's spellings where they mean
 * something here (docs/migrating-from-kitten.md#operating), and one line for a bad option.
 */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
}

/** Kitten's list/delete parts: primary queue, requeue queue, slave's copy; -prs all three */
const KITTEN_PARTS = /^-[prs]{1,3}$/;

/** the command word: the first token that is neither an option nor an option's value */
function commandOf(argv: readonly string[], options: Readonly<Record<string, OptionSpec>>): string | undefined {
  const takesValue = new Set<string>();
  for (const [name, spec] of Object.entries(options)) {
    if (spec.type !== 'string') continue;
    takesValue.add(`--${name}`);
    if (spec.short) takesValue.add(`-${spec.short}`);
  }
  takesValue.add('--channel');
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') return argv[i + 1];
    if (!token.startsWith('-')) return token;
    if (takesValue.has(token)) i++;
  }
  return undefined;
}

/** Kitten-MQ's `--channel X` is `-i X`; its `-p`, `-r`, `-s`, `-prs` (list and delete) are dropped with a note */
export function kittenSpellings(argv: readonly string[], options: Readonly<Record<string, OptionSpec>>): { args: string[]; notes: string[] } {
  const command = commandOf(argv, options);
  const args: string[] = [];
  const dropped: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      args.push(...argv.slice(i));
      break;
    }
    if (token === '--channel') args.push('--id');
    else if (token.startsWith('--channel=')) args.push(`--id=${token.slice('--channel='.length)}`);
    else if ((command === 'list' || command === 'delete') && KITTEN_PARTS.test(token)) dropped.push(token);
    else args.push(token);
  }
  const notes = dropped.length === 0 ? [] : [
    `note: ${dropped.join(' ')} ignored: Kitten-MQ's primary/requeue/secondary parts of a queue are one queue here; ${command === 'delete' ? 'delete empties all of it (or the id of -i)' : 'list shows all of it'}`,
  ];
  return { args, notes };
}

/** parseArgs' error as one line: an unknown option with the nearest known one */
export function optionErrorLine(error: Error & { code?: string }, options: Readonly<Record<string, OptionSpec>>): string {
  const unknown = /^Unknown option '([^']+)'/.exec(error.message)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
    const names = ['--channel', ...Object.entries(options).flatMap(([name, spec]) => [`--${name}`, ...(spec.short ? [`-${spec.short}`] : [])])];
    // a one-letter option is one edit away from every other: no guess for those
    const guess = unknown.startsWith('--') ? nearest(unknown, names.filter((n) => n.startsWith('--'))) : null;
    return `unknown option ${unknown}${guess ? `; did you mean ${guess}?` : ''} (whisker --help lists them)`;
  }
  // Node's text for `-q -c x` is three lines about dashes: say what is missing, in one
  const needsValue = /^Option '([^']+)' argument is ambiguous/.exec(error.message)?.[1];
  if (needsValue) return `option ${needsValue} needs a value (whisker --help)`;
  return `${error.message.split(/\.\s/)[0]!.replace(/\.$/, '')} (whisker --help)`;
}
