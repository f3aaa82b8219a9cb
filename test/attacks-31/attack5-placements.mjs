// Attack 5 (hostile): one client asks 10,000 new queues (one send each) against limits.maxPlacements 300.
// Promise (configuration.md limits.maxPlacements, client.md "Clusters", issue 31 §2): past the bound a
// send that would place one more queue fails E_LIMIT and stores nothing; brokers placing at the same
// instant may each go one past it. Count: answers, and placements per `whisker cluster status`.
// Usage: nice -n 10 node test/attacks-31/attack5-placements.mjs [two|seq]
import { startEtcd, startCluster, mkClient, sleep, load, waitMaster, cliAsync } from './lib.mjs';

const MAX = 300, ASK = 10000;
const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1'], b: ['b1'] }, () => ({ limits: { maxPlacements: MAX } }));
await waitMaster(nodes, 'a'); await waitMaster(nodes, 'b');
// mode "two": two hostile clients, one seeded with a1, one with b1, 5,000 new queues each at once
const two = process.argv[2] === 'two' || process.argv[2] === 'seq'; const seqMode = process.argv[2] === 'seq'; // seq: client 0's 5,000 first, then client 1's
const mqs = two ? [await mkClient('hostile', [nodes[0].spec], { maxBufferedMessages: 20000, sendTimeout: 60000 }), await mkClient('hostile2', [nodes[1].spec], { maxBufferedMessages: 20000, sendTimeout: 60000 })]
  : [await mkClient('hostile', [nodes[0].spec], { maxBufferedMessages: 20000, sendTimeout: 60000 })];
const codes = {}; const byClient = {}; const samples = {}; const t0 = Date.now();
const ask = (i) => mqs[i % mqs.length].send(`p${i}/v1/x`, { i }).then(() => { codes.OK = (codes.OK ?? 0) + 1; byClient[`c${i % mqs.length}:OK`] = (byClient[`c${i % mqs.length}:OK`] ?? 0) + 1; }, (e) => { codes[e.code] = (codes[e.code] ?? 0) + 1; const k = `c${i % mqs.length}:${e.code}`; byClient[k] = (byClient[k] ?? 0) + 1; if (!samples[k]) samples[k] = `${e.message} storedBy ${JSON.stringify(e.info?.storedBy)}`; });
const idx = Array.from({ length: ASK }, (_, i) => i);
if (seqMode) { await Promise.all(idx.filter((i) => i % 2 === 0).map(ask)); await sleep(3000); await Promise.all(idx.filter((i) => i % 2 === 1).map(ask)); }
else await Promise.all(idx.map(ask));
const ms = Date.now() - t0;
await sleep(6000);
const st = await cliAsync(['cluster', 'status', '-c', nodes[0].config]);
const m = st.out.match(/(\d+) of at most (\d+) queues placed/);
const placed = m ? Number(m[1]) : null;
console.log(st.out.trim().split('\n').slice(-1)[0]);
console.log(JSON.stringify({ byClient, samples }));
console.log(JSON.stringify({ asked: ASK, answers: codes, ms, placedPerStatus: placed, bound: MAX, load: load() }));
const broken = [];
if (placed === null || placed > MAX + nodes.length) broken.push(`placements ${placed} past the bound ${MAX}`);
if ((codes.OK ?? 0) > MAX + nodes.length) broken.push(`${codes.OK} sends accepted (bound ${MAX})`);
if ((codes.E_LIMIT ?? 0) < ASK - MAX - nodes.length) broken.push(`only ${codes.E_LIMIT ?? 0} E_LIMIT`);
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
process.exit(broken.length ? 1 : 0);
