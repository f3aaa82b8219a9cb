import { describe, expect, test } from 'vitest';
import { broker, connect, until } from '../../support/harness.js';

/**
 * Issue 27 item 3 (SPEC §7 Order): one connection's sends are accepted, delivered and retained
 * in the order sent, on a retained channel as on any other. Frames 0-2 ms apart, a listener
 * counting what arrives, then a replay compared with what was delivered.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const NEW_CHANNELS = 30;

function orderBreaks(values: readonly number[]): number {
  let breaks = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! < values[i - 1]!) breaks++;
  return breaks;
}

describe('order on retained channels', () => {
  test('two first frames on a new retained channel are delivered and retained in the order sent', async () => {
    const channels: Record<string, unknown> = {};
    for (let c = 0; c < NEW_CHANNELS; c++) channels[`new${c}/v1`] = { retention: { seconds: 3600 } };
    const b = await broker({ defaultPolicy: 'allow', channels });
    const producer = await connect('producer', b.hostSpec);
    const reader = await connect('reader', b.hostSpec);
    let broken = 0;
    for (let c = 0; c < NEW_CHANNELS; c++) {
      const got: number[] = [];
      await reader.listen(`new${c}/v1/a`, (_err, msg) => void got.push((msg as { n: number }).n)).ready;
      // two frames: 40 sends in one turn, 40 in the next, 0-1 ms later
      const sends = Array.from({ length: 40 }, (_, n) => producer.send(`new${c}/v1/a`, { n }));
      await sleep(c % 2);
      sends.push(...Array.from({ length: 40 }, (_, n) => producer.send(`new${c}/v1/a`, { n: 40 + n })));
      await Promise.all(sends);
      await until(() => got.length === 80, 5000, `80 delivered on new${c}`);
      const replayed: number[] = [];
      await reader.replay(`new${c}/v1/*`, {}, (_err, msg) => void replayed.push((msg as { n: number }).n)).done;
      if (orderBreaks(got) > 0 || orderBreaks(replayed) > 0) broken++;
      expect(replayed).toEqual(got);
    }
    console.log(`new retained channels: ${broken} of ${NEW_CHANNELS} out of order`);
    expect(broken).toBe(0);
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  }, 60_000);

  test('a producer pipelining frames 0-2 ms apart: no per-id order break, replay order = delivery order (with trims by size)', async () => {
    const b = await broker({ defaultPolicy: 'allow', maxItemsInQueue: 100_000, channels: { 'ev/v1': { retention: { seconds: 3600 } }, 'small/v1': { retention: { maxBytes: 65_536 } } } });
    const producer = await connect('producer', b.hostSpec);
    const reader = await connect('reader', b.hostSpec);
    for (const endpoint of ['ev', 'small'] as const) {
      const queue = `${endpoint}/v1` as const;
      const got = new Map<string, number[]>();
      await reader.listen(`${queue}/*`, (_err, msg, info) => {
        const id = info!.channel.id;
        if (!got.has(id)) got.set(id, []);
        got.get(id)!.push((msg as { n: number }).n);
      }).ready;
      const sends: Array<Promise<unknown>> = [];
      let n = 0;
      const endAt = Date.now() + 1_500;
      for (let frame = 0; Date.now() < endAt; frame++) {
        for (let k = 0; k < 5; k++, n++) sends.push(producer.send(`${queue}/${String(n % 3)}`, { n, pad: 'x'.repeat(200) }));
        await sleep(frame % 3);
      }
      await Promise.all(sends);
      const total = n;
      await until(() => [...got.values()].reduce((s, v) => s + v.length, 0) === total, 10_000, `${total} delivered on ${queue}`);
      const breaks = [...got.values()].reduce((s, v) => s + orderBreaks(v), 0);
      const replayed = new Map<string, number[]>();
      await reader.replay(`${queue}/*`, {}, (_err, msg, info) => {
        const id = info!.channel.id;
        if (!replayed.has(id)) replayed.set(id, []);
        replayed.get(id)!.push((msg as { n: number }).n);
      }).done;
      console.log(`${queue}: ${total} sent in frames 0-2 ms apart, ${breaks} per-id order breaks`);
      expect(breaks).toBe(0);
      // the replay is what was delivered, in the same order (the tail of it where trimmed by size)
      for (const [id, values] of got) expect(values.slice(values.length - (replayed.get(id)?.length ?? 0))).toEqual(replayed.get(id) ?? []);
      expect([...replayed.values()].reduce((s, v) => s + v.length, 0)).toBeGreaterThan(0);
    }
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  }, 60_000);
});
