// `whisker move` misuse: to a set that does not exist, of a queue not placed, of a malformed name, to its own set.
// Docs: operations.md "Moving a queue" ("Set b has no live broker: whisker move is refused (E_NO_PLACEMENT)").
// Nothing is promised for the other cases: we look for a clear error, a non-zero exit, quick, and nothing changed.
// Usage: nice -n 10 node test/attacks-31b/move-errors.mjs
import { startEtcd, startCluster, mkClient, sleep, load, cliAsync, waitMaster } from '../attacks-31/lib.mjs';

const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1'], b: ['b1'] }, () => ({ channels: { 'mv/v1': { set: 'a' } } }));
await waitMaster(nodes, 'a'); await waitMaster(nodes, 'b');
const c = await mkClient('p', [nodes[0].spec]);
await c.send('mv/v1/1', { x: 1 });
const cases = [['nonexistent set', ['mv/v1', '--to', 'zz']], ['queue not placed', ['never/v1', '--to', 'b']], ['malformed queue name', ['no-version', '--to', 'b']],
  ['to its own set', ['mv/v1', '--to', 'a']], ['bad set name', ['mv/v1', '--to', '../x']]];
const rows = [];
for (const [what, args] of cases) {
  const r = await cliAsync(['move', ...args, '--timeout', '20', '-c', nodes[0].config]);
  rows.push({ what, exit: r.code, ms: r.ms, out: r.out.trim().split('\n').slice(-2).join(' | ') });
  console.log(`${what}: exit ${r.code} in ${r.ms} ms: ${r.out.trim().split('\n').slice(-2).join(' | ')}`);
}
const st = await cliAsync(['cluster', 'status', '--placements', '-c', nodes[0].config]);
console.log(st.out.trim());
let delivered = 0; const h = c.consume('mv/v1/*', (err, m, done) => { if (!err) { delivered++; done(); } }); await h.ready; await sleep(1500);
console.log(`mv/v1 still delivers from its set: ${delivered} of 1; ${load()}`);
const broken = rows.filter((r) => r.what !== 'to its own set' && r.exit === 0).map((r) => `${r.what} exit 0`);
if (rows.some((r) => r.ms > 15000)) broken.push('a misuse took > 15 s');
if (/zz|never\/v1/.test(st.out)) broken.push('status shows the bogus set/queue');
if (delivered !== 1) broken.push('mv/v1 not delivered after the attempts');
console.log(JSON.stringify(rows));
console.log(broken.length ? `SEE: ${broken.join('; ')}` : 'HELD (clear errors)');
process.exit(0);
