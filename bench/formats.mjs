// The per-message cost of a channel format: check() with a 10-field map against no map.
// In-process and single-threaded, so it measures the validator alone (docs/formats.md).
import { compileChannelFormat } from '../dist/broker/access/formats/index.js';

const map = {
  orderId: ['int', 'min', 1],
  customer: ['string', 'min', 2, 'max', 64],
  email: ['email'],
  total: ['decimal', 'toNumber'],
  currency: ['alpha', 'min', 3, 'max', 3],
  paid: ['binary', 'toBoolean'],
  quantity: ['numeric', 'toInt'],
  note: ['string', 'optional'],
  country: ['alphanumeric'],
  lines: ['array', { sku: ['string'], qty: ['int', 'min', 1] }],
};
const message = (i) => ({ orderId: i + 1, customer: 'Ada Lovelace', email: 'ada@example.org', total: '12.50', currency: 'EUR', paid: '1', quantity: '3', note: '', country: 'FR', lines: [{ sku: 'A-1', qty: 2 }] });

export function measureFormats(count = 300_000) {
  const format = compileChannelFormat('bench/v1', { map });
  const messages = Array.from({ length: 1000 }, (_, i) => message(i));
  const time = (fn) => {
    for (let i = 0; i < 20_000; i++) fn(messages[i % 1000]); // warm-up
    const start = performance.now();
    for (let i = 0; i < count; i++) fn(messages[i % 1000]);
    return count / ((performance.now() - start) / 1000);
  };
  let sink = 0;
  const bare = time((m) => (sink += m.orderId)); // the loop itself, no check
  const checked = time((m) => {
    const result = format.check(m);
    if (!result.ok) throw new Error('a valid message was refused');
    sink += 1;
  });
  return { checksPerSecond: checked, microsecondsPerCheck: 1e6 / checked - 1e6 / bare, sink };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { checksPerSecond, microsecondsPerCheck } = measureFormats();
  console.log(`10-field map: ${Math.round(checksPerSecond).toLocaleString('en-US')} checks/s, ${microsecondsPerCheck.toFixed(2)} µs per message`);
}
