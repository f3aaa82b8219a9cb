import { expect, test } from 'vitest';
import { RenderCache } from '../../src/ops/render-cache.js';

/**
 * The kept /metrics render (docs/management.md#metrics) is served while fresh, but never once the
 * broker's role changed: a master SIGSTOPped in the middle of a render (issue 27's 30-minute
 * nemesis) measured the stop as render time, kept it 5 s, and went on saying `whisker_role 1`
 * for 5 s after it logged "not delivering" (two masters by the metrics, one by the deliveries).
 */
test('a render kept for its cost is not served once the state it was made in changed', async () => {
  let clock = 0;
  let role = 'master';
  let renders = 0;
  const cache = new RenderCache(
    async () => {
      renders++;
      const text = `whisker_role ${role === 'master' ? 1 : 0}`;
      clock += 4_000; // the process was stopped 4 s in the middle of this render
      return text;
    },
    () => clock,
    () => role,
  );
  expect((await cache.get()).toString()).toBe('whisker_role 1');
  clock += 100;
  expect((await cache.get()).toString()).toBe('whisker_role 1'); // kept: still fresh, same role
  expect(renders).toBe(1);
  role = 'slave';
  expect(cache.fresh).toBeNull();
  expect((await cache.get()).toString()).toBe('whisker_role 0');
  expect(renders).toBe(2);
});
