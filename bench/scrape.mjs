// What a /metrics scrape costs with many queues (docs/management.md#label-cardinality):
// `npm run build && node bench/scrape.mjs 2000` makes 2000 queues and 10,000 more messages
// over 50 ids each, then times 20 scrapes. Prints one JSON line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBroker } from '../dist/server/start.js';
import { buildConfig } from '../dist/config/load.js';
import { WhiskerClient } from '../dist/client/client.js';

/* global fetch */
const queues = Number(process.argv[2] ?? 2000);
const dir = mkdtempSync(join(tmpdir(), 'whisker-scrape-'));
const broker = await startBroker(buildConfig({ logLevel: 'silent', socketServer: { port: 0 }, management: { port: 0 } }, dir, null), {});
const client = new WhiskerClient();
await client.connect({ hosts: [`127.0.0.1:${broker.port}@${broker.config.serviceId}`], clientId: 'bench', keysDirectory: join(dir, 'keys') });
let batch = [];
const send = async (channel, data) => {
  batch.push(client.send(channel, data));
  if (batch.length >= 2000) batch = (await Promise.all(batch), []);
};
for (let i = 0; i < queues; i++) await send(`q${i}/v1/a`, { i });
for (let i = 0; i < 10_000; i++) await send(`q${i % queues}/v1/b${i % 50}`, { i });
await Promise.all(batch);
const url = `http://127.0.0.1:${broker.managementPort}/metrics`;
const times = [];
let text = '';
for (let i = 0; i < 20; i++) {
  const started = performance.now();
  text = await (await fetch(url)).text();
  times.push(performance.now() - started);
}
times.sort((a, b) => a - b);
const series = text.split('\n').filter((line) => line && !line.startsWith('#')).length;
console.log(JSON.stringify({ queues, messages: queues + 10_000, series, bytes: text.length, medianMs: Number(times[10].toFixed(1)), maxMs: Number(times[19].toFixed(1)) }));
await client.disconnect();
await broker.stop();
rmSync(dir, { recursive: true, force: true });
