/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 2/3: a subscription the slave refused (reserved) is reported ready when that slave is promoted.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, cleanup, kill9, writeConfig } from './harness.mjs';
const rules = [{ client: 'easilys-*', read: ['!invoice/*'] }, { client: 'other-*', read: ['!invoice/*'] }, { client: 'billing', write: ['invoice/*'] }];
const [a, b] = await makeNodes(['a', 'b'], { rules });
await start(a); await start(b); await sleep(1500);
const got = [], gotO = [], errO = [];
const e = await mkClient([a, b], 'easilys-a', keyPair());
await e.listen('invoice/v1/7', (err, m) => { if (!err) got.push(m); }).ready;
await sleep(300);
const o = await mkClient([a, b], 'other-x', keyPair());
// master a unreachable for this client? use slave only client
const os = await mkClient([b], 'other-y', keyPair());
const h = os.listen('invoice/v1/7', (err, m) => { if (err) errO.push({ code: err.code, d: err.details }); else gotO.push(m); });
let ready = 'pending'; h.ready.then(() => { ready = 'ok'; }, (x) => { ready = x.code + ':' + x.details?.reason; });
await sleep(1000);
console.log('slave-only: ready', ready, 'errs', JSON.stringify(errO));
await kill9(a);
b.config.isMaster = true; writeConfig(b); await cli(b, 'reload');
await sleep(1500);
console.log('after promotion: ready', ready, 'errs', JSON.stringify(errO));
const billing = await mkClient([b], 'billing', keyPair());
await billing.send('invoice/v1/7', 'p1');
await sleep(800);
console.log('got', got, 'gotO', gotO);
check('refused subscription not reported ready after promotion', ready !== 'ok', ready);
check('slave-only refused subscription: handler told E_FORBIDDEN reserved', errO.some((x) => x.d?.reason === 'reserved'), errO);
check('other never receives', gotO.length === 0, gotO);
await cleanup(); process.exit(0);
