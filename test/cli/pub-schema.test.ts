import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { broker, tempDir, type TestBroker } from '../support/harness.js';
import { run } from '../support/cli-process.js';

/**
 * Issue 29 item 7: `whisker pub` refused with E_SCHEMA prints the failing fields, each with the
 * constraint that failed (docs/formats.md#details). Needs `npm run build`.
 */
const keys = tempDir('whisker-cli-keys-');
const as = (b: TestBroker) => ['--host', b.hostSpec, '--client', 'cli-pub', '--keys', keys];

describe('pub on a schema error', () => {
  test('prints each failing field with its value and the one constraint it broke', async () => {
    const b = await broker({ channels: { 'orders/v1': { map: { qty: ['int', 'min', 1, 'max', 5], label: ['string', 'max', 4], sku: ['string'] } } } });
    const result = await run(['pub', 'orders/v1/eu', '{"qty":9,"label":"far too long","sku":12}', ...as(b)]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      [
        'whisker: not sent: E_SCHEMA: Bad format',
        '  qty 9: must be less than or equal to 5',
        '  label "far too long": the length must be less than or equal to 4',
        '  sku 12: must be a string',
        'whisker: 1 message not sent',
        '',
      ].join('\n'),
    );
    const missing = await run(['pub', 'orders/v1/eu', '{"qty":0,"label":"ok"}', ...as(b)]);
    expect(missing.stderr).toContain('\n  sku: is required\n');
    expect(missing.stderr).toContain('\n  qty 0: must be greater than or equal to 1\n');
  }, 30_000);
});
