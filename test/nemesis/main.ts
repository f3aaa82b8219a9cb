import { runNemesis } from './run.js';

/**
 * `npm run nemesis -- [--seed N] [--minutes M] [--links netns|proxy]` (docs/operations.md#the-nemesis):
 * without a seed one is drawn now and printed; links are cut between network namespaces where
 * they can be made, else by TCP proxies. Exits 0 when every check passed, 1 when one failed, 2 when
 * the harness itself could not run.
 */
function argument(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

const args = process.argv.slice(2);
const seed = Number(argument(args, 'seed') ?? Math.floor(Math.random() * 2 ** 31));
const minutes = Number(argument(args, 'minutes') ?? 3);
const links = argument(args, 'links');
if (!Number.isInteger(seed) || !(minutes >= 2) || (links !== undefined && links !== 'netns' && links !== 'proxy')) {
  console.error('usage: npm run nemesis -- [--seed INTEGER] [--minutes M (>= 2)] [--links netns|proxy]');
  process.exit(2);
}
runNemesis({ seed, minutes, ...(links ? { links } : {}) }).then(
  (result) => process.exit(result.failed.length === 0 ? 0 : 1),
  (error: Error) => {
    console.error(`nemesis seed ${seed}: harness error: ${error.stack ?? error.message}`);
    process.exit(2);
  },
);
