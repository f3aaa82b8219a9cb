import { describe, expect, test } from 'vitest';
import { broker, brokerConfig, connect, Inbox } from '../../support/harness.js';

/** SPEC §6 end to end: what a sender is told and what a consumer receives. */
const channels = {
  'shop/v1': {
    map: {
      id: ['numeric', 'toInt'],
      price: ['decimal', 'toNumber'],
      gift: ['binary', 'toBoolean', 'optional'],
      label: ['string', 'min', 2],
      products: ['array', { label: ['string'], qty: ['int', 'min', 1] }],
    },
  },
  'raw/v1': { schema: { type: 'object', required: ['a'], properties: { a: { type: 'integer' } } } },
};

describe('channel formats through a broker', () => {
  test('conversions are what the consumer receives', async () => {
    const b = await broker({ channels });
    const [c, p] = await Promise.all([connect('shop', b.hostSpec), connect('till', b.hostSpec)]);
    const inbox = new Inbox();
    await c.consume('shop/v1/1', inbox.consumer).ready;
    await p.send('shop/v1/1', { id: '0042', price: '-12.50', gift: '1', label: 'ok', products: [{ label: 'a', qty: 1 }] });
    const [got] = await inbox.waitFor(1);
    expect(got!.msg).toEqual({ id: 42, price: -12.5, gift: true, label: 'ok', products: [{ label: 'a', qty: 1 }] });
  });

  test('a message that does not fit gets E_SCHEMA, Bad format, with every failing field', async () => {
    const b = await broker({ channels });
    const p = await connect('till', b.hostSpec);
    const error = await p.send('shop/v1/1', { id: 'x1', price: '3,32', label: 'a', products: [{ label: 'a', qty: 1 }, { qty: 0 }] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'E_SCHEMA', message: 'Bad format' });
    const fields = ((error as { details: Array<{ field: string }> }).details).map((d) => d.field).sort();
    expect(fields).toEqual(['id', 'label', 'price', 'products[1][label]', 'products[1][qty]']);
    expect(b.router.queues.has('shop/v1')).toBe(false);
  });

  test('a root payload that is not an object is refused', async () => {
    const b = await broker({ channels });
    const p = await connect('till', b.hostSpec);
    for (const value of [0, false, '', 'text', [1]]) {
      await expect(p.send('raw/v1/1', value)).rejects.toMatchObject({ code: 'E_SCHEMA' });
    }
  });

  test('a raw JSON Schema channel accepts what fits and refuses what does not', async () => {
    const b = await broker({ channels });
    const p = await connect('till', b.hostSpec);
    await p.send('raw/v1/1', { a: 1 });
    await expect(p.send('raw/v1/1', { a: 'one' })).rejects.toMatchObject({ code: 'E_SCHEMA' });
  });

  test('a reload with a broken map is refused and the old format keeps checking', async () => {
    const b = await broker({ channels });
    expect(() => b.reload(brokerConfig({ channels: { 'shop/v1': { map: { id: ['nosuchtype'] } } } }, b.dir))).toThrow(/shop\/v1/);
    const p = await connect('till', b.hostSpec);
    await expect(p.send('raw/v1/1', { a: 'one' })).rejects.toMatchObject({ code: 'E_SCHEMA' });
  });
});
