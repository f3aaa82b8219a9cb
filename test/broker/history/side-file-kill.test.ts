import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { readSide } from '../../../src/broker/history/side-line.js';
import { tempDir } from '../../support/harness.js';

/**
 * A channel's `side` file (docs/operations.md#history-catch-up) says where a mirror's own writes
 * begin while it is out of step, and which catch-ups it took: it is rewritten at each catch-up
 * segment. Written in place (truncated, then written), a kill -9 in between left it empty: the
 * restarted mirror read no side line, took the catch-up's records as its own history and never
 * joined them (outside check atk27l F1: a mirror killed -9 as master, then during its sync, held
 * the 10,007 records its catch-up brought twice in a row, for good).
 */
const SIDE_LINE = resolve('dist/broker/history/side-line.js');

describe('the side file under kill -9 (real processes)', () => {
  test.skipIf(!existsSync(SIDE_LINE))('a process killed while rewriting it leaves the old or the new side line, never none', async () => {
    const emptied: number[] = [];
    for (let run = 0; run < 30; run++) {
      const dir = tempDir('whisker-side-kill-');
      const script = `
        const { writeSide } = await import(${JSON.stringify(SIDE_LINE)});
        const side = { from: 2000000004, gapNext: 1000000004, catchUpFrom: 1000000004, catchUps: [1000000004], ended: [] };
        await writeSide(${JSON.stringify(dir)}, side);
        process.stdout.write('ready\\n');
        for (;;) { side.gapNext++; await writeSide(${JSON.stringify(dir)}, side); }`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((ready) => child.stdout.once('data', () => ready()));
      await new Promise((wait) => setTimeout(wait, 5 + Math.random() * 20));
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await exited;
      if ((await readSide(dir)) === null) emptied.push(run);
      expect(existsSync(join(dir, 'side'))).toBe(true);
    }
    expect(emptied).toEqual([]);
  }, 60_000);
});
