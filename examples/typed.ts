// A typed producer and worker (docs/client.md#types). test/client/types.test.ts compiles this file
// under `tsc --strict` against the built package, with `@types/node` and nothing else installed.
import { client, type DeliveryInfo, type SendInfo, type WhiskerError } from 'whisker-mq';

interface Order {
  sku: string;
  qty: number;
}

const host = process.env.WHISKER_HOST ?? '127.0.0.1:7780@whisker';
const mq = client();
mq.on('error', (error: WhiskerError) => console.error(error.code, error.message));
mq.on('master', (serviceId) => console.log('master is now', serviceId ?? 'none'));
mq.on('reconnect', (serviceId) => console.log('reconnected to', serviceId));
// @ts-expect-error: a misspelt event does not compile
mq.on('reconect', () => {});

await mq.connect({ hosts: [host], clientId: 'typed-example', privateKey: process.env.WHISKER_PRIVATE_KEY });

// callback form: msg is an Order, info is there once err is ruled out
const handle = mq.consume<Order>('orders/v1/*', { prefetch: 5 }, (err, msg, done, info) => {
  if (err) return console.error('refused:', err.code);
  const where: DeliveryInfo['channel'] = info.channel;
  console.log(`${msg.qty} x ${msg.sku} for ${where.id} (try ${info.nbRequeues + 1})`);
  done();
});
await handle.ready;
await handle.addId(['eu', 'us']).then(() => handle.removeId('us'));

// promise form, with a payload type and a typed channel string
const sent: SendInfo = await mq.send<Order>('orders/v1/eu', { sku: 'A-1', qty: 2 });
console.log('stored as', sent.messageId);
// @ts-expect-error: a channel needs endpoint/version/id
void mq.send('orders/v1', { sku: 'A-1', qty: 2 });
// @ts-expect-error: the payload must be an Order
void mq.send<Order>('orders/v1/eu', { sku: 'A-1' });

// for await, acked through the message; an AbortSignal ends it
const stop = new AbortController();
setTimeout(() => stop.abort(), 1000);
for await (const msg of mq.listen<Order>('orders/v1/*', { signal: stop.signal })) {
  const qty: number = msg.data.qty;
  console.log('heard', qty);
  msg.ack();
}

await handle.close().then(() => mq.disconnect());
