// A client whose key was revoked (whisker keys revoke) tries to get in through the slave. Master a + slave b (configured).
// Docs: operations.md#keys-on-mirrors ("whisker keys revoke NAME on any broker revokes the key there, sends the revocation
// to every peer ... Every broker that applied it closes the name's connections and refuses the key from then on, so
// nothing the client sends is stored or delivered afterwards through any mirror"; "A broker that was away ... gets what it
// missed when its links are back"), client.md#keys (E_AUTH reason revoked, one error per broker, sends fail E_AUTH, a
// send failed E_AUTH without storedBy was not stored; connect() reports the refusal once every host answered).
// 1. X pipelines sends every 5 ms to a and b; `whisker keys revoke X` on the MASTER a; X's sends failed E_AUTH without
//    storedBy must never reach a listener; then X (same key, new client) connects to the slave b alone: E_AUTH revoked.
// 2. Y: b stopped (kill -9), `keys revoke Y` on a, b restarted, in step; Y connects to b alone: E_AUTH revoked, sends fail.
// 3. Z: revoke on the SLAVE b while Z pipelines to both: the master closes Z too.
import { makeNodes, start, kill9, cli, mkClient, keyPair, sleep, check, finish, waitFor, health } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up());
const nodes = await makeNodes(['a', 'b'], { logLevel: 'info' }); const [a, b] = nodes;
await Promise.all(nodes.map(start));
await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const CH = 'jobs/v1/x';
const got = new Map();
const L = await mkClient(nodes, 'c5-lst', keyPair());
const hl = L.listen(CH, (err, msg) => { if (!err && msg) got.set(`${msg.who}:${msg.i}`, (got.get(`${msg.who}:${msg.i}`) ?? 0) + 1); });
await hl.ready;

async function pipelineAndRevoke(name, revokeOn) {
  const key = keyPair();
  const c = await mkClient(nodes, name, key, { sendTimeout: 4000 });
  const res = []; const pend = []; let run = true; let tRev = 0;
  const loop = (async () => { let i = 0; while (run) { const j = i++; const tSend = Date.now();
    pend.push(new Promise((r) => c.send(CH, { who: name, i: j }, (err) => { res[j] = { code: err ? err.code : 'OK', reason: err?.details?.reason, storedBy: (err?.info?.storedBy ?? []).join(''), tSend, tAns: Date.now() }; r(); }))); await sleep(5); } })();
  await sleep(1500);
  tRev = Date.now(); const o = await cli(revokeOn, 'keys', 'revoke', name); const tRevDone = Date.now();
  await sleep(1500); run = false; await loop; await Promise.all(pend);
  await sleep(3000);
  const tally = {}; res.forEach((x) => { const k = `${x.code}${x.reason ? '/' + x.reason : ''}${x.storedBy ? ':' + x.storedBy : ''}`; tally[k] = (tally[k] ?? 0) + 1; });
  const okLost = res.map((x, i) => [x, i]).filter(([x, i]) => x.code === 'OK' && !got.has(`${name}:${i}`)).length;
  const refusedDelivered = res.map((x, i) => [x, i]).filter(([x, i]) => x.code !== 'OK' && !x.storedBy && got.has(`${name}:${i}`)).map(([, i]) => i);
  const sentAfterRevDelivered = res.map((x, i) => [x, i]).filter(([x, i]) => x.tSend > tRevDone + 200 && got.has(`${name}:${i}`)).map(([, i]) => i);
  const detail = refusedDelivered.slice(0, 4).map((i) => ({ i, sentMsAfterRevokeStart: res[i].tSend - tRev, answeredMsAfterRevokeStart: res[i].tAns - tRev, revokeDoneMs: tRevDone - tRev, err: res[i].code + '/' + res[i].reason, storedBy: res[i].storedBy }));
  if (detail.length) console.log(name, 'refused but delivered:', JSON.stringify(detail));
  const errs = c.errors.map((e) => `${e.code}/${e.details?.reason ?? ''}@${e.details?.serviceId ?? ''}`);
  await c.disconnect();
  return { key, o, tally, okLost, refusedDelivered, sentAfterRevDelivered, errs, revokeMs: tRevDone - tRev };
}
// 1.
const r1 = await pipelineAndRevoke('c5-x', a);
check('c5.1 revoke on the master under pipelined sends: OK sends delivered, E_AUTH sends (no storedBy) and sends after the revoke never delivered',
  r1.okLost === 0 && r1.refusedDelivered.length === 0 && r1.sentAfterRevDelivered.length === 0, { cli: r1.o.out.trim().split('\n').slice(-2).join(' / '), revokeMs: r1.revokeMs, answers: r1.tally, okLost: r1.okLost, refusedButDelivered: r1.refusedDelivered.slice(0, 5), sentAfterRevokeDelivered: r1.sentAfterRevDelivered.slice(0, 5), errorEvents: r1.errs });
async function tryThroughSlave(name, key) {
  const t0 = Date.now();
  const c = await mkClient([b], name, key, { sendTimeout: 3000, connectTimeout: 6000 });
  const tConn = Date.now() - t0;
  const s = await new Promise((r) => c.send(CH, { who: name, i: 'late' }, (err) => r(err ? `${err.code}/${err.details?.reason ?? ''}:${(err.info?.storedBy ?? []).join('')}` : 'OK')));
  const ready = await c.listen(CH, () => {}).ready.then(() => 'resolved', (e) => `${e.code}/${e.details?.reason ?? ''}`);
  await sleep(2000);
  const out = { connect: c.connected ? `${c.connected.code}/${c.connected.details?.reason}` : 'connected', connectMs: tConn, send: s, ready, delivered: got.has(`${name}:late`), errorEvents: c.errors.map((e) => `${e.code}/${e.details?.reason ?? ''}`) };
  await c.disconnect(); return out;
}
const t1 = await tryThroughSlave('c5-x', r1.key);
check('c5.1b the revoked key through the slave alone: connect E_AUTH revoked, send E_AUTH, nothing delivered', t1.connect === 'E_AUTH/revoked' && t1.send.startsWith('E_AUTH') && !t1.delivered, t1);
// 2.
const ky = keyPair();
const y = await mkClient(nodes, 'c5-y', ky); await new Promise((r) => y.send(CH, { who: 'c5-y', i: 'first' }, r)); await y.disconnect();
await kill9(b);
const o2 = await cli(a, 'keys', 'revoke', 'c5-y');
await start(b); await waitFor(async () => (await health(b)).status === 200, 30000, 200); await sleep(1000);
const t2 = await tryThroughSlave('c5-y', ky);
check('c5.2 revoked on the master while the slave was down; the slave restarted and in step: connect to it alone E_AUTH revoked, nothing delivered', t2.connect === 'E_AUTH/revoked' && t2.send.startsWith('E_AUTH') && !t2.delivered, { cli: o2.out.trim().split('\n').slice(-1)[0], ...t2 });
// 3.
const r3 = await pipelineAndRevoke('c5-z', b);
const t3 = await tryThroughSlave('c5-z', r3.key);
check('c5.3 revoke on the SLAVE under pipelined sends: no E_AUTH (no storedBy) send delivered, nothing sent after the revoke delivered; then refused through b',
  r3.okLost === 0 && r3.refusedDelivered.length === 0 && r3.sentAfterRevDelivered.length === 0 && t3.connect === 'E_AUTH/revoked', { cli: r3.o.out.trim().split('\n').slice(-2).join(' / '), revokeMs: r3.revokeMs, answers: r3.tally, okLost: r3.okLost, refusedButDelivered: r3.refusedDelivered.slice(0, 5), sentAfterRevokeDelivered: r3.sentAfterRevDelivered.slice(0, 5), errorEvents: r3.errs, throughSlave: t3 });
console.log(up());
await L.disconnect();
await finish(0);
