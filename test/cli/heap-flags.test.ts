import { describe, expect, test } from 'vitest';
import { brokerHeapFlags, HEAP_GROWING_PERCENT } from '../../src/cli/heap-flags.js';

describe('brokerHeapFlags', () => {
  test('a plain `node bin/whisker start` gets both heap settings', () => {
    expect(brokerHeapFlags([], '')).toEqual(['--semi-space-growth-factor=1', `--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
  });

  test("an operator's own young-generation or growing setting is kept, on the command line or in NODE_OPTIONS", () => {
    expect(brokerHeapFlags(['--max-semi-space-size=16'], '')).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
    expect(brokerHeapFlags([], '--max_semi_space_size=8 --heap-growing-percent=50')).toEqual([]);
    expect(brokerHeapFlags(['--semi-space-growth-factor=2', '--heap-growing-percent=0'], '')).toEqual([]);
  });
});
