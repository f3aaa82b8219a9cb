/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 1: keys revoke with a peer connected but frozen (SIGSTOP): returns within ~1 s naming it; it applies it when thawed.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, cleanup } from './harness.mjs';
const nodes = await makeNodes(['a', 'b']); const [a, b] = nodes;
await start(a); await start(b); await sleep(1500);
const c = await mkClient(nodes, 'frozen', keyPair());
b.proc.kill('SIGSTOP');
const t0 = Date.now();
const r = await cli(a, 'keys', 'revoke', 'frozen');
const ms = Date.now() - t0;
console.log('revoke with b frozen:', ms, 'ms', r.out.trim());
check('revoke returns within ~1.5 s (CLI start included) with a frozen peer, naming it', ms < 2500 && /NOT confirmed by the peers b/.test(r.out), ms);
b.proc.kill('SIGCONT');
await sleep(3000);
const lb = await cli(b, 'keys', 'list');
check('thawed peer applied the revocation', !/^frozen\s/m.test(lb.out), lb.out);
const c2 = await mkClient([b], 'frozen', (await import('./harness.mjs')).keyPair());
console.log('new key via b after thaw:', JSON.stringify(c2.connected));
await cleanup(); process.exit(0);
