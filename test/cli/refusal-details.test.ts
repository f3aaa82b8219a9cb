import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { broker, connect, tempDir } from '../support/harness.js';
import { run } from '../support/cli-process.js';

/**
 * Issue 28 item 3 (attacks-28 a12): `whisker pub` and `whisker sub` refused with E_FORBIDDEN say
 * why (the right and the reason of `details`), never naming the holder of a reserved id. Before,
 * both printed only `E_FORBIDDEN: Not allowed`. Needs `npm run build`.
 */
describe('pub and sub refused', () => {
  test('print the right and the reason of the refusal', async () => {
    const b = await broker({ rules: [{ client: 'cli-owner', read: ['!invoice/*'] }, { client: 'cli-other', read: ['!invoice/*'] }] });
    const owner = await connect('cli-owner', b.hostSpec);
    await owner.listen('invoice/v1/1', () => {}).ready;
    const as = ['--host', b.hostSpec, '--client', 'cli-other', '--keys', tempDir('whisker-cli-keys-')];
    const sub = await run(['sub', 'invoice/v1/1', '--count', '1', ...as]);
    expect(sub.code).toBe(1);
    expect(sub.stderr).toContain('E_FORBIDDEN: Not allowed (read invoice/v1/1: reserved)');
    const pub = await run(['pub', 'invoice/v1/1', 'x', ...as]);
    expect(pub.code).toBe(1);
    expect(pub.stderr).toContain('whisker: not sent: E_FORBIDDEN: Not allowed (write invoice/v1/1: no-rule)');
    expect(sub.stderr + pub.stderr).not.toContain('cli-owner');
    await owner.disconnect();
  }, 30_000);
});
