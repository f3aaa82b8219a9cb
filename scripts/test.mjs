#!/usr/bin/env node
// `npm run test:all` (after the build): the suite, and beside it the 3-minute nemesis
// (docs/operations.md#the-nemesis). The suite runs two files at a time (vitest.config.ts); the
// nemesis, a few minutes of wall clock mostly spent waiting on faults, runs as a second vitest
// process beside them instead of taking one of the two. Its output is held and printed after the suite's.
// Arguments (`npm test -- test/broker`) run only vitest with them, without the nemesis.
import { spawn } from 'node:child_process';

const args = process.argv.slice(2);
const vitest = (vitestArgs, env, quiet) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...vitestArgs], { env: { ...process.env, ...env }, stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let output = '';
    if (quiet) for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk) => (output += chunk));
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });

if (args.length > 0) process.exit((await vitest(args, {}, false)).code);

// its own slice of ports (test/support/harness.ts freePort), apart from the suite's worker
const nemesis = vitest(['test/nemesis/nemesis.test.ts'], { NEMESIS: '1', WHISKER_TEST_PORT_SLICE: '7' }, true);
const suite = await vitest([], {}, false);
const beside = await nemesis;
process.stdout.write(`\n---- the nemesis, run beside the suite (NEMESIS=1 npx vitest run test/nemesis/nemesis.test.ts) ----\n${beside.output}`);
if (beside.code !== 0) console.error(`the nemesis failed (exit ${beside.code})`);
process.exit(suite.code !== 0 ? suite.code : beside.code);
