/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 9: replay callback is cb(null, n); and the promise/done resolves with the count.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish } from './harness.mjs';
const nodes = await makeNodes(['a'], { channels: { 'ev/v1': { retention: { seconds: 3600 } } } });
await start(nodes[0]);
const mq = await mkClient(nodes, 'c9', keyPair());
for (let i = 0; i < 5; i++) await mq.send('ev/v1/1', { i });
const args = await new Promise((r) => { let n = 0; mq.replay('ev/v1/1', {}, (e) => { if (!e) n++; }, (...a) => r(a)); });
check('9a replay cb first arg is null (not undefined) and second is the count', args[0] === null && args[1] === 5, { first: String(args[0]), count: args[1] });
const empty = await new Promise((r) => mq.replay('ev/v1/nothing', {}, () => {}, (...a) => r(a)));
check('9b replay of an empty id: cb(null, 0)', empty[0] === null && empty[1] === 0, { first: String(empty[0]), count: empty[1] });
const bad = await new Promise((r) => mq.replay('nohist/v1/1', {}, () => {}, (...a) => r(a)));
check('9c replay cb on a channel without retention gets an E_NO_HISTORY error', bad[0]?.code === 'E_NO_HISTORY', { first: bad[0]?.code ?? String(bad[0]) });
await mq.disconnect();
await finish(0);
