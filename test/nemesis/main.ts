import { runNemesis } from './run.js';

/**
 * `npm run nemesis -- [--seed N] [--minutes M]` (docs/operations.md#the-nemesis): without a
 * seed one is drawn now and printed. Exits 0 when every check passed, 1 when one failed, 2 when
 * the harness itself could not run.
 */
function argument(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

const args = process.argv.slice(2);
const seed = Number(argument(args, 'seed') ?? Math.floor(Math.random() * 2 ** 31));
const minutes = Number(argument(args, 'minutes') ?? 3);
if (!Number.isInteger(seed) || !(minutes >= 2)) {
  console.error('usage: npm run nemesis -- [--seed INTEGER] [--minutes M (>= 2)]');
  process.exit(2);
}
runNemesis({ seed, minutes }).then(
  (result) => process.exit(result.failed.length === 0 ? 0 : 1),
  (error: Error) => {
    console.error(`nemesis seed ${seed}: harness error: ${error.stack ?? error.message}`);
    process.exit(2);
  },
);
